/**
 * Attack review, HTTP pipeline (issue 17 items 1, 9, 11): a body is read only on a matched route that takes
 * one, after the rate limit was counted; nesting and members are bounded; every path id is validated before
 * any lookup (a malformed or over-long one is 404 NotFound on every route); rate-limit counters stay small
 * however long the ids a client sends.
 */
import t from 'tap';
import { API_ROUTES } from '../src/http/routes/index.ts';
import { bodyStats, JSON_LIMIT_BYTES, MAX_JSON_DEPTH, MAX_JSON_KEYS } from '../src/http/body.ts';
import { RateLimiter } from '../src/ratelimit/limiter.ts';
import { newId } from '../src/ids.ts';
import { startTestService } from './helpers/service.ts';
import { request, signup } from './helpers/http.ts';
import { createServer } from './helpers/servers.ts';

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const manyKeys = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(',')}}`;

t.test('bodies: parsed only on matched routes that take one, after the rate limit, and bounded', async (t) => {
  const s = await startTestService(t, {});
  const alice = await signup(s);
  const raw = (method: string, path: string, rawBody: string, token?: string, contentType = 'application/json') =>
    request(s.apiUrl, method, path, { rawBody, contentType, skipOpenApi: true, ...(token ? { token } : {}) });

  await t.test('an unmatched path never reads its body: a body over the cap still gets 404', async (t) => {
    const before = bodyStats.read;
    const huge = 'x'.repeat(JSON_LIMIT_BYTES + 10);
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const r = await raw(method, '/no/such/path', huge);
      t.same([r.status, r.body?.type], [404, 'NotFound'], `${method} unmatched with a body over 1 MB: 404`);
      const deep = await raw(method, '/no/such/path', nested(100_000));
      t.same([deep.status, deep.body?.type], [404, 'NotFound'], `${method} unmatched with a deep body: 404`);
    }
    t.equal(bodyStats.read, before, 'the parser never ran');
  });

  await t.test('a route without a body schema never reads its body', async (t) => {
    const carol = await signup(s);
    const before = bodyStats.read;
    const r = await raw('POST', '/auth/session/logout', 'x'.repeat(JSON_LIMIT_BYTES + 10), carol.token);
    t.equal(r.status !== 413, true, `not 413 (got ${r.status})`);
    t.equal(bodyStats.read, before, 'the parser never ran');
  });

  await t.test('an unauthenticated request to a route with a body: 401 without parsing', async (t) => {
    const before = bodyStats.read;
    const r = await raw('POST', '/servers/create', nested(200_000));
    t.same([r.status, r.body?.type], [401, 'NotAuthenticated'], '401');
    const bad = await raw('POST', '/servers/create', manyKeys(50_000), 'not-a-token');
    t.same([bad.status, bad.body?.type], [401, 'InvalidSession'], '401 for an unknown token');
    t.equal(bodyStats.read, before, 'the parser never ran');
  });

  await t.test('a malformed path id: 404 without parsing', async (t) => {
    const before = bodyStats.read;
    const r = await raw('PATCH', `/servers/${newId()}:members`, manyKeys(50_000), alice.token);
    t.same([r.status, r.body?.type], [404, 'NotFound'], '404');
    t.equal(bodyStats.read, before, 'the parser never ran');
  });

  await t.test('a rate-limited caller: 429 without parsing', async (t) => {
    const bob = await signup(s);
    let limited = false;
    for (let i = 0; i < 10 && !limited; i++) {
      const before = bodyStats.read;
      const r = await raw('POST', '/servers/create', nested(200_000), bob.token);
      if (r.status === 429) {
        limited = true;
        t.equal(bodyStats.read, before, 'the refused request was not parsed');
      } else t.same([r.status, r.body?.type], [400, 'FailedValidation'], 'counted requests get their 400');
    }
    t.ok(limited, 'the servers bucket ran out');
  });

  await t.test('nesting and members are bounded: 400 FailedValidation', async (t) => {
    const dave = await signup(s);
    const ok = await raw('PATCH', '/users/@me', JSON.stringify({ status: { text: 'x' } }), dave.token);
    t.equal(ok.status, 200, `a normal body works ${ok.text}`);
    const plain = await raw('PATCH', '/users/@me', JSON.stringify({ status: { text: 'plain' } }), dave.token, 'text/plain;charset=UTF-8');
    t.same([plain.status, plain.body?.status?.text], [200, 'plain'], 'JSON sent as text/plain (revolt.js) still works');
    const atDepth = await raw('PATCH', '/users/@me', `{"display_name":${'['.repeat(MAX_JSON_DEPTH - 1)}${']'.repeat(MAX_JSON_DEPTH - 1)}}`, dave.token);
    t.same([atDepth.status, atDepth.body?.type], [400, 'FailedValidation'], `depth ${MAX_JSON_DEPTH}: parsed, refused by the schema`);
    t.match(atDepth.body?.error, /body\.display_name/, 'by the schema (names the field)');
    for (const [what, body] of [
      [`depth ${MAX_JSON_DEPTH + 1}`, `{"display_name":${nested(MAX_JSON_DEPTH)}}`],
      ['depth 100,000', nested(100_000)],
      [`${MAX_JSON_KEYS + 1} members`, manyKeys(MAX_JSON_KEYS + 1)],
      ['a __proto__ member', '{"display_name":"x","__proto__":{"admin":true}}'],
      ['an escaped __proto__ member', '{"display_name":"x","\\u005f_proto__":{"admin":true}}'],
      ['malformed JSON', '{"display_name":'],
      ['a JSON string', '"name"'],
    ] as const) {
      const r = await raw('PATCH', '/users/@me', body, dave.token);
      t.same([r.status, r.body?.type], [400, 'FailedValidation'], what);
    }
    const big = await raw('PATCH', '/users/@me', JSON.stringify({ display_name: 'xx', status: 'y'.repeat(JSON_LIMIT_BYTES) }), dave.token);
    t.same([big.status, big.body?.type], [413, 'PayloadTooLarge'], 'over 1 MB on a matched route: 413');
  });
});

t.test('every path id is validated before any lookup: malformed or over-long → 404 NotFound', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const owner = await signup(s);
  const server = await createServer(owner);
  const role = await owner.api.post(`/servers/${server.id}/roles`, { name: 'r' });
  const msg = await owner.api.post(`/channels/${server.general}/messages`, { content: 'hi' });
  const real: Record<string, string> = {
    server_id: server.id,
    channel_id: server.general,
    message_id: msg.body._id,
    role_id: role.body.id,
    user_id: owner.userId,
    session_id: owner.sessionId,
    emoji: '%F0%9F%91%8D',
    emoji_id: newId(),
    code: 'abcdefgh',
  };
  const valueOf = (name: string) => real[name] ?? newId();
  let checked = 0;
  for (const route of API_ROUTES) {
    const names = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
    for (const name of names) {
      for (const [what, bad] of [
        ['<id>:members', `${valueOf(name)}:members`],
        ['over-long', 'A'.repeat(12_000)],
        ['with a key separator', `${valueOf(name).slice(0, 20)}:x`],
      ] as const) {
        const path = route.path.replace(/:(\w+)/g, (_, n: string) => (n === name ? encodeURIComponent(bad) : valueOf(n)));
        const r = await request(s.apiUrl, route.method, path, { token: owner.token, skipOpenApi: true, ...(route.method === 'GET' ? {} : { body: {} }) });
        t.same([r.status, r.body?.type], [404, 'NotFound'], `${route.method} ${route.path} with ${name} ${what}`);
        checked++;
      }
    }
  }
  t.ok(checked > 100, `${checked} requests`);
  const members = await owner.api.get(`/servers/${server.id}:members`, { skipOpenApi: true });
  t.same([members.status, members.body?.type], [404, 'NotFound'], 'GET /servers/<id>:members (was 500)');
  const media = await request(s.mediaUrl, 'GET', `/attachments/${'A'.repeat(5000)}`, { skipOpenApi: true });
  t.same([media.status, media.body?.type], [404, 'NotFound'], 'media: an over-long file id');
  const mediaSep = await request(s.mediaUrl, 'GET', `/attachments/${newId()}:x/original`, { skipOpenApi: true });
  t.same([mediaSep.status, mediaSep.body?.type], [404, 'NotFound'], 'media: a file id with a key separator');
});

t.test('rate-limit counters are keyed by a bounded form of the ids', async (t) => {
  const limiter = new RateLimiter({ now: () => 1000 });
  for (let i = 0; i < 100; i++) limiter.hit(`s:${i}`, 'servers', `${i}`.padEnd(12_000, 'x'));
  t.ok(limiter.keyChars() < 100 * 200, `100 counters of 12,000-character ids hold ${limiter.keyChars()} characters of keys`);
  limiter.hit('s:0', 'servers', '0'.padEnd(12_000, 'x'));
  t.equal(limiter.size(), 100, 'the same long id reaches the same counter');

  const s = await startTestService(t, {});
  const alice = await signup(s);
  const before = s.deps.limiter.keyChars();
  for (let i = 0; i < 50; i++) {
    const r = await alice.api.get(`/servers/${String(i).padEnd(12_000, 'Z')}`, { skipOpenApi: true });
    t.equal(r.status === 404 || r.status === 429, true, `long id ${i}: ${r.status}`);
  }
  t.ok(s.deps.limiter.keyChars() - before < 2_000, `50 requests with 12,000-character ids added ${s.deps.limiter.keyChars() - before} characters of keys`);
});
