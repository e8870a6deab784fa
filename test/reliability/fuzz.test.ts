/**
 * Fuzzing every API route with property-based bodies, query strings and headers (fast-check): wrong
 * types, huge strings, deep nesting, unicode edge cases, `color`/`colour` mixes, bit 63 in permissions.
 * Properties: never a 5xx; every error is JSON with a string `type` (429's `{retry_after}` aside); a
 * rejected request changes nothing (the event log's head does not move).
 *
 * The route list is the app's own registry, so a new route is fuzzed without touching this file.
 * Path parameters are real ids of a fixture (so requests reach the validation and permission code)
 * or fuzzed strings.
 */
import t from 'tap';
import fc from 'fast-check';
import { z } from 'zod';
import { API_ROUTES } from '../../src/http/routes/index.ts';
import type { AnyRoute } from '../../src/http/route.ts';
import { startTestService } from '../helpers/service.ts';
import { request, signup } from '../helpers/http.ts';
import { runAdmin } from '../../src/cli/accountsAdmin.ts';
import { until } from '../helpers/wait.ts';
import { totp } from '../helpers/totp.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 25);

/** Login failures are recorded on purpose (lockout is auditable): a rejected login appends LoginFailed. */
const REJECTIONS_THAT_RECORD = new Set(['POST /auth/session/login']);

const unicodeEdge = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }), // lone surrogates included
  fc.constantFrom('\u0000', '\u200B', '\uFEFF', '\uD800', '👍🏽', '🏳️‍🌈', 'é'.normalize('NFD'), '\u202E', 'ǅ', '%', '%zz', '../..', '<script>'),
);
const hugeString = fc.nat({ max: 3 }).map((k) => 'x'.repeat([33, 2001, 70_000, 1_100_000][k]!));
const bigNumbers = fc.constantFrom(2 ** 63, -1, 1.5, Number.MAX_SAFE_INTEGER + 2, 1e308, -0, 2 ** 32 + 1, 2 ** 5, 2 ** 40, 2 ** 41);
const leaf = fc.oneof(unicodeEdge, hugeString, bigNumbers, fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
const deep = fc.nat({ max: 3 }).map((k) => {
  const depth = [10, 100, 1000, 5000][k]!;
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = i % 2 ? { a: v } : [v];
  return v;
});
const json: fc.Arbitrary<unknown> = fc.oneof({ depthSize: 'small' }, fc.jsonValue({ maxDepth: 4 }), leaf, deep);

/**
 * A string percent-encoded as a path segment. A lone surrogate (which encodeURIComponent refuses) becomes the
 * bytes a careless encoder would send for it (ED A0 80 for U+D800): invalid UTF-8 on the wire.
 */
function pathSegment(v: string): string {
  let out = '';
  for (const ch of v) {
    const cu = ch.charCodeAt(0);
    if (ch.length === 1 && cu >= 0xd800 && cu <= 0xdfff) {
      out += [0xe0 | (cu >> 12), 0x80 | ((cu >> 6) & 0x3f), 0x80 | (cu & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    } else out += encodeURIComponent(ch);
  }
  return out;
}

/** Field names of a route's body schema, if it is an object schema. */
function bodyKeys(route: AnyRoute): string[] {
  const s = route.body as unknown;
  if (s instanceof z.ZodObject) return Object.keys(s.shape as object);
  return [];
}

function bodyFor(route: AnyRoute): fc.Arbitrary<unknown> {
  const keys = bodyKeys(route);
  const mixes = fc.constantFrom(
    { colour: '#fff', color: '#fff' },
    { color: '#ff0000' },
    { permissions: 2 ** 63 },
    { permissions: { allow: 2 ** 63, deny: 0 } },
    { permissions: { allow: 0xfffffffffffff, deny: 0 } },
    { permissions: '9223372036854775808' },
    { masquerade: { color: '#000' } },
    { name: 'ok', ManageCustomization: true },
  );
  const shaped = keys.length
    ? fc.dictionary(fc.constantFrom(...keys), json, { maxKeys: keys.length })
    : fc.dictionary(fc.string({ maxLength: 10 }), json, { maxKeys: 4 });
  return fc.oneof(shaped, mixes, json, fc.constant(undefined));
}

const queryArb = fc.dictionary(
  fc.constantFrom('limit', 'before', 'after', 'nearby', 'sort', 'include_users', 'include_channels', 'remove_all', 'user_id', 'revoke_self', 'leave_silently', 'user', 'action', 'x', 'status', 'active'),
  fc.oneof(unicodeEdge, fc.constantFrom('0', '101', '-1', 'true', 'false', 'Relevance', '1e3', '01ARZ3NDEKTSV4RRFFQ69G5FAV')),
  { maxKeys: 3 },
);

const headerArb = fc.record(
  {
    idempotency: fc.oneof(fc.string({ maxLength: 100 }), fc.constant('k'.repeat(65))),
    reason: fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('%E0%A4%A', '%', 'x'.repeat(600), encodeURIComponent('ü'.repeat(512)))),
    contentType: fc.constantFrom('application/json', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', ''),
  },
  { requiredKeys: [] },
);

t.test('fuzzing every route', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const owner = await signup(s);
  const member = await signup(s);
  const server = await owner.api.post('/servers/create', { name: 'fuzz' });
  const serverId = server.body.server._id as string;
  const channelId = server.body.channels[0]._id as string;
  const role = await owner.api.post(`/servers/${serverId}/roles`, { name: 'r' });
  const invite = await owner.api.post(`/channels/${channelId}/invites`);
  await member.api.post(`/invites/${invite.body._id}`);
  const message = await owner.api.post(`/channels/${channelId}/messages`, { content: 'hello' });
  // Private channels: a DM and a group of the two (friends), and the owner's Saved Notes.
  await owner.api.put(`/users/${member.userId}/friend`);
  await member.api.put(`/users/${owner.userId}/friend`);
  const dm = (await owner.api.get(`/users/${member.userId}/dm`)).body._id as string;
  const group = (await owner.api.post('/channels/create', { name: 'fuzz group', users: [member.userId] })).body._id as string;
  const notes = (await owner.api.get(`/users/${owner.userId}/dm`)).body._id as string;
  // Instance moderation: the owner is an instance admin (so /admin routes are fuzzed past authorization), and
  // a report exists. The /admin routes come last in the registry, so what they change comes after the rest.
  await runAdmin(['grant', owner.userId, '--role', 'admin'], { store: s.store, print: () => {} });
  await until('admin granted', async () => (await s.readModels.hgetJson('instance:staff', owner.userId)) === 'admin');
  await member.api.post('/safety/report', { content: { type: 'Message', id: message.body._id, report_reason: 'SpamAbuse' } });
  const reportId = (await owner.api.get('/admin/reports')).body[0]._id as string;
  // A legal hold (issue 39), so its lift route is fuzzed on a real hold.
  const holdId = (await owner.api.post('/admin/holds', { name: 'fuzz', reason: 'fuzz', target: { type: 'server', id: serverId } })).body._id as string;
  // A bot and a webhook of the owner's (issue 22): their ids, and the webhook's token and a wrong one.
  const bot = (await owner.api.post('/bots/create', { name: 'fuzzbot' })).body._id as string;
  const hook = (await owner.api.post(`/channels/${channelId}/webhooks`, { name: 'fuzz' })).body as { id: string; token: string };
  const fixture: Record<string, string[]> = {
    bot: [bot],
    target: [bot, '@me'],
    webhook_id: [hook.id],
    token: [hook.token, 'not-the-token'],
    server_id: [serverId],
    channel_id: [channelId, dm, group, notes],
    role_id: [role.body.id],
    user_id: [member.userId, owner.userId, '@me'],
    message_id: [message.body._id],
    session_id: [member.sessionId],
    code: [invite.body._id],
    emoji: ['%F0%9F%91%8D', '01ARZ3NDEKTSV4RRFFQ69G5FAV', 'V1StGXR8_Z5jdHi6B-myTV1StGXR8_Z5jdHi6B-myT'],
    // Emoji ids are ULIDs (as Stoat's emoji uploads); other file ids are 42-character nanoids.
    emoji_id: ['01ARZ3NDEKTSV4RRFFQ69G5FAV', 'V1StGXR8_Z5jdHi6B-myTV1StGXR8_Z5jdHi6B-myT'],
    report_id: [reportId],
    hold_id: [holdId],
  };
  const paramValue = (name: string) =>
    fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...(fixture[name] ?? ['x'])) },
      { weight: 1, arbitrary: unicodeEdge.map((v) => pathSegment(v) || 'x') },
    );

  const failures: string[] = [];
  const statuses = new Map<number, number>();
  const types = new Map<string, number>();
  for (const route of API_ROUTES) {
    const names = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
    // Logging out or revoking sessions would end the fuzzing sessions; they are fuzzed with a throwaway user.
    const destructive = /\/auth\/session\/(logout|all|:session_id)$/.test(route.path) && route.method !== 'GET';
    const caller = destructive ? await signup(s) : fc.sample(fc.constantFrom(owner, member), 1)[0]!;
    const recorded = failures.length;
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(...names.map(paramValue)),
        bodyFor(route),
        queryArb,
        headerArb,
        fc.constantFrom(caller.token, caller.token, 'bad-token', undefined),
        async (params, body, query, headers, token) => {
          let path = route.path;
          names.forEach((n, i) => (path = path.replace(`:${n}`, params[i] as string)));
          const qs = new URLSearchParams(query).toString();
          const h: Record<string, string> = {};
          if (headers.idempotency !== undefined) h['Idempotency-Key'] = headers.idempotency;
          if (headers.reason !== undefined) {
            try {
              h['X-Audit-Log-Reason'] = headers.reason;
            } catch {
              /* not a valid header value */
            }
          }
          const headBefore = await s.store.headPosition();
          let raw: string | undefined;
          try {
            raw = body === undefined ? undefined : JSON.stringify(body);
          } catch {
            raw = '{"deep": true}';
          }
          const res = await request(s.apiUrl, route.method, path + (qs ? `?${qs}` : ''), {
            ...(token ? { token } : {}),
            headers: h,
            ...(raw !== undefined && route.method !== 'GET' ? { rawBody: raw, contentType: headers.contentType || 'application/json' } : {}),
            skipOpenApi: true,
          }).catch((e: Error) => ({ status: -1, body: undefined, text: e.message, headers: new Headers() }));
          const where = `${route.method} ${path}${qs ? `?${qs}` : ''} → ${res.status} ${res.text.slice(0, 200)}`;
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          const type = (res.body as { type?: unknown } | undefined)?.type;
          if (typeof type === 'string') types.set(type, (types.get(type) ?? 0) + 1);
          if (res.status === -1 || res.status >= 500) {
            failures.push(`5xx/transport: ${where}`);
            return false;
          }
          if (res.status >= 400 && res.status !== 429) {
            if (!res.body || typeof (res.body as { type?: unknown }).type !== 'string') {
              failures.push(`error without JSON type: ${where}`);
              return false;
            }
            if (!REJECTIONS_THAT_RECORD.has(`${route.method} ${route.path}`)) {
              const headAfter = await s.store.headPosition();
              if (headAfter !== headBefore) {
                failures.push(`rejected request changed state: ${where}`);
                return false;
              }
            }
          }
          return true;
        },
      ),
      { numRuns: RUNS, endOnFailure: true },
    ).catch((err: Error) => {
      // A property that returned false has recorded why; anything else (the test itself threw) is a failure too.
      if (failures.length === recorded) failures.push(`${route.method} ${route.path}: fuzzing stopped: ${err.message.slice(0, 300)}`);
    });
  }
  t.same(failures.slice(0, 20), [], `${API_ROUTES.length} routes × ${RUNS} runs: no 5xx, JSON errors, no change on rejection`);
  t.comment(`statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
  t.comment(`error types ${JSON.stringify(Object.fromEntries([...types].sort((a, b) => b[1] - a[1])))}`);
  // The fuzzer must reach past authentication into validation and handlers, or it proves nothing.
  const total = [...statuses.values()].reduce((a, b) => a + b, 0);
  t.ok(total >= API_ROUTES.length * RUNS * 0.9, `${total} requests made`);
  t.ok((types.get('FailedValidation') ?? 0) > API_ROUTES.length, 'validation was exercised');
  t.ok([...statuses.keys()].some((k) => k >= 200 && k < 300), 'some requests succeeded');
  t.ok((types.get('InvalidSession') ?? 0) > 0 && (types.get('NotFound') ?? 0) > 0, 'bad sessions and unknown ids were exercised');
});

t.test('fuzzing the settings timestamp query and bodies', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const user = await signup(s);
  const timestamp = fc.oneof(
    unicodeEdge,
    fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
    fc.constantFrom('', '-', '1e3', '0x10', '+5', '9007199254740993', '-9223372036854775808', '1.5', ' 1'),
  );
  const failures: string[] = [];
  await fc.assert(
    fc.asyncProperty(timestamp, fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string({ maxLength: 20 }), json), { maxKeys: 3 }), async (ts, body) => {
      const headBefore = await s.store.headPosition();
      const res = await request(s.apiUrl, 'POST', `/sync/settings/set?timestamp=${encodeURIComponent(ts)}`, { token: user.token, body, skipOpenApi: true });
      if (res.status >= 500 || (res.status >= 400 && typeof res.body?.type !== 'string')) failures.push(`${ts} ${JSON.stringify(body).slice(0, 80)} → ${res.status} ${res.text.slice(0, 120)}`);
      if (res.status >= 400 && (await s.store.headPosition()) !== headBefore) failures.push(`rejected but appended: ${ts}`);
      return res.status < 500;
    }),
    { numRuns: RUNS * 4 },
  ).catch(() => {});
  t.same(failures.slice(0, 10), [], 'no 5xx, JSON errors, no change on rejection');
});

t.test('fuzzing the X-MFA-Ticket header of ticket-guarded routes', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const u = await signup(s);
  const guarded = API_ROUTES.filter((r) => ['POST /auth/account/disable', 'POST /auth/account/delete', 'POST /auth/mfa/recovery', 'PATCH /auth/mfa/recovery', 'POST /auth/mfa/totp', 'DELETE /auth/mfa/totp'].includes(`${r.method} ${r.path}`));
  t.equal(guarded.length, 6);
  const ticketArb = fc.oneof(unicodeEdge, hugeString.map((x) => x.slice(0, 8000)), fc.constant(`${u.userId}.${'A'.repeat(43)}`), fc.string({ unit: 'binary-ascii', maxLength: 200 }));
  const failures: string[] = [];
  for (const route of guarded) {
    await fc.assert(
      fc.asyncProperty(ticketArb, async (ticket) => {
        const head = await s.store.headPosition();
        // A value no HTTP client can send (control characters, non-Latin-1) goes percent-encoded instead.
        const value = /^[\x20-\x7e]*$/.test(ticket) ? ticket : encodeURIComponent(ticket);
        const headers: Record<string, string> = value.trim() ? { 'X-MFA-Ticket': value } : {};
        const r = await request(s.apiUrl, route.method, route.path, { token: u.token, headers, skipOpenApi: true }).catch((e: Error) => ({ status: -1, body: { type: e.message } }));
        const ok = r.status === 401 && (r.body as { type?: string }).type === 'InvalidToken' && (await s.store.headPosition()) === head;
        if (!ok) failures.push(`${route.method} ${route.path} ticket=${JSON.stringify(ticket).slice(0, 80)} → ${r.status} ${JSON.stringify(r.body).slice(0, 120)}`);
        return ok;
      }),
      { numRuns: RUNS, endOnFailure: true },
    ).catch(() => {});
  }
  t.same(failures.slice(0, 10), [], 'a forged or malformed ticket is always 401 InvalidToken and changes nothing');
});

/**
 * The account export with TOTP on (issue 39 part 4): any fuzzed X-MFA-Ticket — forged, malformed, huge, not
 * Latin-1 — is 401 InvalidToken before a byte of the ZIP is sent, appends nothing and spends none of the
 * account's daily export budget (a real ticket still gets its export afterwards).
 */
t.test('fuzzing the X-MFA-Ticket header of GET /auth/account/export', async (t) => {
  let offset = 0;
  const s = await startTestService(t, { RATE_LIMITS: 'off' }, { now: () => Date.now() + offset });
  const u = await signup(s);
  const setup = (await u.api.put('/auth/mfa/ticket', { password: u.password })).body.token as string;
  const secret = (await u.api.post('/auth/mfa/totp', undefined, { headers: { 'X-MFA-Ticket': setup } })).body.secret as string;
  t.equal((await u.api.put('/auth/mfa/totp', { totp_code: totp(secret, Date.now() + offset) })).status, 204, 'TOTP on');
  const ticketArb = fc.oneof(unicodeEdge, hugeString.map((x) => x.slice(0, 8000)), fc.constant(`${u.userId}.${'A'.repeat(43)}`), fc.string({ unit: 'binary-ascii', maxLength: 200 }));
  const failures: string[] = [];
  await fc.assert(
    fc.asyncProperty(ticketArb, async (ticket) => {
      const head = await s.store.headPosition();
      const value = /^[\x20-\x7e]*$/.test(ticket) ? ticket : encodeURIComponent(ticket);
      const headers: Record<string, string> = value.trim() ? { 'X-MFA-Ticket': value } : {};
      const r = await request(s.apiUrl, 'GET', '/auth/account/export', { token: u.token, headers, skipOpenApi: true }).catch((e: Error) => ({ status: -1, body: { type: e.message } }));
      const ok = r.status === 401 && (r.body as { type?: string }).type === 'InvalidToken' && (await s.store.headPosition()) === head;
      if (!ok) failures.push(`ticket=${JSON.stringify(ticket).slice(0, 80)} → ${r.status} ${JSON.stringify(r.body).slice(0, 120)}`);
      return ok;
    }),
    { numRuns: RUNS * 2, endOnFailure: true },
  ).catch(() => {});
  t.same(failures.slice(0, 10), [], 'a forged or malformed ticket is always 401 InvalidToken and changes nothing');
  offset += 30_000;
  const real = (await u.api.put('/auth/mfa/ticket', { totp_code: totp(secret, Date.now() + offset) })).body.token as string;
  const res = await fetch(`${s.apiUrl}/auth/account/export`, { headers: { 'X-Session-Token': u.token, 'X-MFA-Ticket': real } });
  await res.arrayBuffer();
  t.equal(res.status, 200, 'the refusals spent none of the daily budget: a real ticket still exports');
});

/**
 * Bot tokens across sanction transitions (issue 35): random sequences of suspensions, bans and lifts of a bot
 * and of its owner, checked against a model after each step: the bot's token works exactly when nothing
 * stands against either, and a refused bot request (any fuzzed body) is 401 InvalidSession and appends nothing.
 */
t.test('fuzzing bot tokens across sanction transitions', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [admin, owner] = await Promise.all([signup(s), signup(s)]);
  await runAdmin(['grant', admin.userId, '--role', 'admin'], { store: s.store, print: () => {} });
  await until('admin granted', async () => (await s.readModels.hgetJson('instance:staff', admin.userId)) === 'admin');
  const made = await owner.api.post('/bots/create', { name: 'fuzzsanctioned' });
  const server = await owner.api.post('/servers/create', { name: 'fuzz' });
  const channel = server.body.channels[0]._id as string;
  await owner.api.post(`/bots/${made.body._id}/invite`, { server: server.body.server._id });
  const target = { bot: made.body._id as string, owner: owner.userId };
  type Who = keyof typeof target;
  const op = fc.record({ who: fc.constantFrom<Who>('bot', 'owner'), action: fc.constantFrom('suspend', 'ban', 'lift') });
  const failures: string[] = [];
  const model: Record<Who, boolean> = { bot: false, owner: false };
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 4 }), json, async (ops, body) => {
      for (const { who, action } of ops) {
        const r = await admin.api.post(`/admin/users/${target[who]}/${action}`, { reason: 'fuzz' });
        if (r.status === 200) model[who] = action !== 'lift';
        else if (r.status !== 400 || r.body?.type !== 'NoEffect') failures.push(`${action} ${who} → ${r.status} ${r.text.slice(0, 100)}`);
        const sanctioned = model.bot || model.owner;
        const me = await request(s.apiUrl, 'GET', '/users/@me', { headers: { 'X-Bot-Token': made.body.token }, skipOpenApi: true });
        if (me.status !== (sanctioned ? 401 : 200)) failures.push(`after ${action} ${who} (${JSON.stringify(model)}): GET /users/@me → ${me.status}`);
        const head = await s.store.headPosition();
        const raw = JSON.stringify(body) ?? '{}';
        const sent = await request(s.apiUrl, 'POST', `/channels/${channel}/messages`, { headers: { 'X-Bot-Token': made.body.token }, rawBody: raw, contentType: 'application/json', skipOpenApi: true });
        if (sent.status >= 500) failures.push(`send → ${sent.status}`);
        if (sanctioned && (sent.status !== 401 || sent.body?.type !== 'InvalidSession' || (await s.store.headPosition()) !== head)) {
          failures.push(`sanctioned send → ${sent.status} ${sent.text.slice(0, 80)}`);
        }
      }
      return failures.length === 0;
    }),
    { numRuns: Math.max(5, Math.ceil(RUNS / 3)), endOnFailure: true },
  ).catch(() => {});
  t.same(failures.slice(0, 10), [], 'the token works exactly when no sanction stands; refused requests change nothing');
});

/**
 * Name fields (issue 35): any fuzzed name holding a control character, a lone surrogate or a bidi control is
 * 400 FailedValidation and appends nothing, on every route that takes a name.
 */
t.test('fuzzing name fields with control, surrogate and bidi characters', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const owner = await signup(s);
  const server = await owner.api.post('/servers/create', { name: 'fuzz' });
  const S = `/servers/${server.body.server._id}`;
  const channel = server.body.channels[0]._id as string;
  const role = (await owner.api.post(`${S}/roles`, { name: 'r' })).body.id as string;
  const bad = fc.constantFrom('\u0000', '\u0007', '\u001F', '\u007F', '\u0085', '\uD800', '\uDFFF', '\u202A', '\u202B', '\u202C', '\u202D', '\u202E', '\u2066', '\u2067', '\u2068', '\u2069', '\u200E', '\u200F', '\u061C', '\u2028', '\u2029', '\uFEFF');
  const around = fc.string({ unit: 'grapheme', maxLength: 10 });
  const name = fc.tuple(around, bad, around).map(([a, b, c]) => `${a}${b}${c}`);
  const routes: Array<[string, string, (n: string) => unknown]> = [
    ['POST', '/servers/create', (n) => ({ name: n })],
    ['PATCH', S, (n) => ({ name: n })],
    ['POST', `${S}/channels`, (n) => ({ name: n })],
    ['PATCH', `/channels/${channel}`, (n) => ({ name: n })],
    ['POST', `${S}/roles`, (n) => ({ name: n })],
    ['PATCH', `${S}/roles/${role}`, (n) => ({ name: n })],
    ['PATCH', `${S}/members/${owner.userId}`, (n) => ({ nickname: n })],
    ['PATCH', '/users/@me', (n) => ({ display_name: n })],
    ['PATCH', '/users/@me/username', (n) => ({ username: n, password: owner.password })],
    ['POST', '/bots/create', (n) => ({ name: n })],
    ['POST', `/channels/${channel}/webhooks`, (n) => ({ name: n })],
    ['POST', '/channels/create', (n) => ({ name: n })],
    ['POST', `/channels/${channel}/messages`, (n) => ({ content: 'x', masquerade: { name: n } })],
  ];
  const failures: string[] = [];
  for (const [method, path, body] of routes) {
    await fc.assert(
      fc.asyncProperty(name, async (n) => {
        const head = await s.store.headPosition();
        const r = await request(s.apiUrl, method, path, { token: owner.token, body: body(n), skipOpenApi: true });
        const ok = r.status === 400 && r.body?.type === 'FailedValidation' && (await s.store.headPosition()) === head;
        if (!ok) failures.push(`${method} ${path} ${JSON.stringify(n)} → ${r.status} ${r.text.slice(0, 100)}`);
        return ok;
      }),
      { numRuns: RUNS, endOnFailure: true },
    ).catch(() => {});
  }
  t.same(failures.slice(0, 10), [], 'every name with such a character is 400 FailedValidation and changes nothing');
});
