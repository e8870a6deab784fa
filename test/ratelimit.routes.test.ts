/**
 * Every route the API registers, walked over HTTP: which bucket it falls in (X-RateLimit-Bucket) and what
 * its counter is keyed by (a second request on the same resource spends from the same counter, one on
 * another resource does not — or does, for routes keyed by route). A route missing from the table fails
 * the test, so a new route can never land in a bucket by accident (DESIGN §4 "rate limits").
 */
import t from 'tap';
import { API_ROUTES } from '../src/http/routes/index.ts';
import { BUCKET_LIMITS } from '../src/ratelimit/limiter.ts';
import { TAGS } from '../workers/media/policy.ts';
import { startTestService } from './helpers/service.ts';
import { request } from './helpers/http.ts';
import { newId } from '../src/ids.ts';

/** [method, path, bucket, what the counter is keyed by: a path parameter, 'parent' (emoji body), 'caller' or 'route']. */
const TABLE: Array<[string, string, keyof typeof BUCKET_LIMITS, string]> = [
  ['GET', '/', 'catch-all', 'route'],
  ['POST', '/auth/account/create', 'catch-all', 'route'],
  ['GET', '/auth/account/', 'catch-all', 'route'],
  ['PATCH', '/auth/account/change/password', 'catch-all', 'route'],
  ['POST', '/auth/session/login', 'catch-all', 'route'],
  ['POST', '/auth/session/logout', 'catch-all', 'route'],
  ['GET', '/auth/session/all', 'catch-all', 'route'],
  ['DELETE', '/auth/session/all', 'catch-all', 'route'],
  ['DELETE', '/auth/session/:session_id', 'catch-all', 'route'],
  ['PATCH', '/auth/session/:session_id', 'catch-all', 'route'],
  ['GET', '/onboard/hello', 'catch-all', 'route'],
  ['POST', '/onboard/complete', 'catch-all', 'route'],
  ['POST', '/policy/acknowledge', 'catch-all', 'route'],
  ['GET', '/users/@me', 'catch-all', 'route'],
  ['GET', '/users/:user_id', 'catch-all', 'route'],
  ['PATCH', '/users/:user_id', 'catch-all', 'route'],
  ['GET', '/users/:user_id/default_avatar', 'default_avatar', 'route'],
  ['GET', '/users/:user_id/profile', 'catch-all', 'route'],
  ['GET', '/users/:user_id/flags', 'catch-all', 'route'],
  ['PATCH', '/users/@me/username', 'catch-all', 'route'],
  ['POST', '/servers/create', 'servers', 'caller'],
  ['GET', '/servers/:server_id', 'servers', 'server_id'],
  ['PATCH', '/servers/:server_id', 'servers', 'server_id'],
  ['DELETE', '/servers/:server_id', 'servers', 'server_id'],
  ['PUT', '/servers/:server_id/permissions/default', 'servers', 'server_id'],
  ['PUT', '/servers/:server_id/permissions/:role_id', 'servers', 'server_id'],
  ['POST', '/servers/:server_id/channels', 'servers', 'server_id'],
  ['POST', '/servers/:server_id/roles', 'servers', 'server_id'],
  ['GET', '/servers/:server_id/roles/:role_id', 'servers', 'server_id'],
  ['PATCH', '/servers/:server_id/roles/:role_id', 'servers', 'server_id'],
  ['DELETE', '/servers/:server_id/roles/:role_id', 'servers', 'server_id'],
  ['PATCH', '/servers/:server_id/roles/ranks', 'servers', 'server_id'],
  ['GET', '/servers/:server_id/members', 'servers', 'server_id'],
  ['GET', '/servers/:server_id/members_experimental_query', 'servers', 'server_id'],
  ['GET', '/servers/:server_id/members/:user_id', 'servers', 'server_id'],
  ['PATCH', '/servers/:server_id/members/:user_id', 'servers', 'server_id'],
  ['DELETE', '/servers/:server_id/members/:user_id', 'servers', 'server_id'],
  ['PUT', '/servers/:server_id/bans/:user_id', 'servers', 'server_id'],
  ['DELETE', '/servers/:server_id/bans/:user_id', 'servers', 'server_id'],
  ['GET', '/servers/:server_id/bans', 'servers', 'server_id'],
  ['GET', '/servers/:server_id/invites', 'servers', 'server_id'],
  ['GET', '/servers/:server_id/audit_logs', 'servers', 'server_id'],
  ['GET', '/servers/:server_id/emojis', 'servers', 'server_id'],
  ['GET', '/channels/:channel_id', 'channels', 'channel_id'],
  ['PATCH', '/channels/:channel_id', 'channels', 'channel_id'],
  ['DELETE', '/channels/:channel_id', 'channels', 'channel_id'],
  ['PUT', '/channels/:channel_id/permissions/default', 'channels', 'channel_id'],
  ['PUT', '/channels/:channel_id/permissions/:role_id', 'channels', 'channel_id'],
  ['POST', '/channels/:channel_id/invites', 'channels', 'channel_id'],
  ['POST', '/channels/:channel_id/join_call', 'channels', 'channel_id'],
  ['PUT', '/channels/:channel_id/end_ring/:user_id', 'channels', 'channel_id'],
  ['POST', '/channels/:channel_id/search', 'channels', 'channel_id'],
  ['POST', '/channels/:channel_id/messages', 'messaging', 'channel_id'],
  ['GET', '/channels/:channel_id/messages', 'channels', 'channel_id'],
  ['GET', '/channels/:channel_id/messages/:message_id', 'channels', 'channel_id'],
  ['PATCH', '/channels/:channel_id/messages/:message_id', 'channels', 'channel_id'],
  ['DELETE', '/channels/:channel_id/messages/:message_id', 'channels', 'channel_id'],
  ['DELETE', '/channels/:channel_id/messages/bulk', 'channels', 'channel_id'],
  ['POST', '/channels/:channel_id/messages/:message_id/pin', 'channels', 'channel_id'],
  ['DELETE', '/channels/:channel_id/messages/:message_id/pin', 'channels', 'channel_id'],
  ['PUT', '/channels/:channel_id/messages/:message_id/reactions/:emoji', 'channels', 'channel_id'],
  ['DELETE', '/channels/:channel_id/messages/:message_id/reactions/:emoji', 'channels', 'channel_id'],
  ['DELETE', '/channels/:channel_id/messages/:message_id/reactions', 'channels', 'channel_id'],
  ['GET', '/invites/:code', 'catch-all', 'route'],
  ['POST', '/invites/:code', 'catch-all', 'route'],
  ['DELETE', '/invites/:code', 'catch-all', 'route'],
  ['PUT', '/custom/emoji/:emoji_id', 'servers', 'parent'],
  ['GET', '/custom/emoji/:emoji_id', 'catch-all', 'route'],
  ['DELETE', '/custom/emoji/:emoji_id', 'catch-all', 'route'],
  ['PATCH', '/custom/emoji/:emoji_id', 'catch-all', 'route'],
  ['PUT', '/channels/:channel_id/ack/:message_id', 'channels', 'channel_id'],
  ['PUT', '/servers/:server_id/ack', 'servers', 'server_id'],
  ['GET', '/sync/unreads', 'catch-all', 'route'],
  ['POST', '/sync/settings/fetch', 'catch-all', 'route'],
  ['POST', '/sync/settings/set', 'catch-all', 'route'],
  ['POST', '/auth/account/verify/:code', 'catch-all', 'route'],
  ['POST', '/auth/account/reverify', 'catch-all', 'route'],
  ['POST', '/auth/account/reset_password', 'catch-all', 'route'],
  ['PATCH', '/auth/account/reset_password', 'catch-all', 'route'],
  ['PATCH', '/auth/account/change/email', 'catch-all', 'route'],
  ['POST', '/auth/account/disable', 'catch-all', 'route'],
  ['POST', '/auth/account/delete', 'catch-all', 'route'],
  ['PUT', '/auth/account/delete', 'catch-all', 'route'],
  ['PUT', '/auth/mfa/ticket', 'catch-all', 'route'],
  ['GET', '/auth/mfa/', 'catch-all', 'route'],
  ['GET', '/auth/mfa/methods', 'catch-all', 'route'],
  ['POST', '/auth/mfa/recovery', 'catch-all', 'route'],
  ['PATCH', '/auth/mfa/recovery', 'catch-all', 'route'],
  ['POST', '/auth/mfa/totp', 'catch-all', 'route'],
  ['PUT', '/auth/mfa/totp', 'catch-all', 'route'],
  ['DELETE', '/auth/mfa/totp', 'catch-all', 'route'],
  ['POST', '/users/friend', 'catch-all', 'route'],
  ['PUT', '/users/:user_id/friend', 'catch-all', 'route'],
  ['DELETE', '/users/:user_id/friend', 'catch-all', 'route'],
  ['PUT', '/users/:user_id/block', 'catch-all', 'route'],
  ['DELETE', '/users/:user_id/block', 'catch-all', 'route'],
  ['GET', '/users/:user_id/mutual', 'catch-all', 'route'],
  ['GET', '/users/:user_id/dm', 'catch-all', 'route'],
  ['GET', '/users/dms', 'catch-all', 'route'],
  ['POST', '/channels/create', 'catch-all', 'route'],
  ['PUT', '/channels/:channel_id/recipients/:user_id', 'channels', 'channel_id'],
  ['DELETE', '/channels/:channel_id/recipients/:user_id', 'channels', 'channel_id'],
  ['GET', '/channels/:channel_id/members', 'channels', 'channel_id'],
  ['POST', '/safety/report', 'catch-all', 'route'],
  ['GET', '/admin/reports', 'catch-all', 'route'],
  ['GET', '/admin/reports/:report_id', 'catch-all', 'route'],
  ['PATCH', '/admin/reports/:report_id', 'catch-all', 'route'],
  ['GET', '/admin/users/:user_id', 'catch-all', 'route'],
  ['POST', '/admin/users/:user_id/suspend', 'catch-all', 'route'],
  ['POST', '/admin/users/:user_id/ban', 'catch-all', 'route'],
  ['POST', '/admin/users/:user_id/lift', 'catch-all', 'route'],
  ['DELETE', '/admin/users/:user_id', 'catch-all', 'route'],
  ['DELETE', '/admin/messages/:message_id', 'catch-all', 'route'],
  ['GET', '/admin/audit', 'catch-all', 'route'],
  ['GET', '/admin/export', 'compliance_export', 'caller'],
  ['GET', '/admin/retention', 'catch-all', 'route'],
  ['PUT', '/admin/retention/instance', 'catch-all', 'route'],
  ['PUT', '/admin/retention/servers/:server_id', 'catch-all', 'route'],
  ['PUT', '/admin/retention/channels/:channel_id', 'catch-all', 'route'],
  ['GET', '/auth/account/export', 'account_export', 'caller'],
  ['DELETE', '/admin/servers/:server_id', 'catch-all', 'route'],
  ['POST', '/admin/holds', 'catch-all', 'route'],
  ['GET', '/admin/holds', 'catch-all', 'route'],
  ['POST', '/admin/holds/:hold_id/lift', 'catch-all', 'route'],
  ['POST', '/livekit/webhook', 'catch-all', 'route'],
  ['POST', '/push/subscribe', 'catch-all', 'route'],
  ['POST', '/push/unsubscribe', 'catch-all', 'route'],
  ['POST', '/bots/create', 'bots', 'caller'],
  ['GET', '/bots/@me', 'bots', 'caller'],
  ['GET', '/bots/:bot', 'bots', 'caller'],
  ['PATCH', '/bots/:target', 'bots', 'caller'],
  ['DELETE', '/bots/:target', 'bots', 'caller'],
  ['GET', '/bots/:target/invite', 'bots', 'caller'],
  ['POST', '/bots/:target/invite', 'bots', 'caller'],
  ['POST', '/channels/:channel_id/webhooks', 'channels', 'channel_id'],
  ['GET', '/channels/:channel_id/webhooks', 'channels', 'channel_id'],
  ['GET', '/webhooks/:webhook_id', 'webhooks', 'webhook_id'],
  ['PATCH', '/webhooks/:webhook_id', 'webhooks', 'webhook_id'],
  ['DELETE', '/webhooks/:webhook_id', 'webhooks', 'webhook_id'],
  ['GET', '/webhooks/:webhook_id/:token', 'webhooks', 'webhook_id'],
  ['PATCH', '/webhooks/:webhook_id/:token', 'webhooks', 'webhook_id'],
  ['DELETE', '/webhooks/:webhook_id/:token', 'webhooks', 'webhook_id'],
  ['POST', '/webhooks/:webhook_id/:token', 'webhooks', 'webhook_id'],
  ['POST', '/webhooks/:webhook_id/:token/github', 'webhooks', 'webhook_id'],
  ['PATCH', '/webhooks/:webhook_id/:token/:message_id', 'webhooks', 'webhook_id'],
  ['DELETE', '/webhooks/:webhook_id/:token/:message_id', 'webhooks', 'webhook_id'],
];

t.test('every registered route falls in its bucket, keyed as the table says', async (t) => {
  // A frozen clock (no window ends mid-row), moved on by a window between rows: routes sharing a bucket per
  // caller (all of /bots) each start from a full budget.
  let clock = 5_000_000;
  const s = await startTestService(t, {}, { now: () => clock });
  const registered = API_ROUTES.map((r) => `${r.method} ${r.path}`).sort();
  const tabled = TABLE.map(([m, p]) => `${m} ${p}`).sort();
  t.same(registered.filter((r) => !tabled.includes(r)), [], 'every registered route has a row (add new routes to TABLE)');
  t.same(tabled.filter((r) => !registered.includes(r)), [], 'every row is a registered route');

  for (const [method, path, bucket, key] of TABLE) {
    clock += 10_001;
    // Unauthenticated: the caller is this client's IP, and counting happens before authentication.
    const values = () => Object.fromEntries([...path.matchAll(/:(\w+)/g)].map((m) => [m[1]!, m[1] === 'emoji' ? '%F0%9F%91%8D' : newId()]));
    const fill = (v: Record<string, string>) => path.replace(/:(\w+)/g, (_, n: string) => v[n]!);
    const a = values();
    const parentA = newId();
    const body = (parent: string) => (key === 'parent' ? { name: 'x', parent: { type: 'Server', id: parent } } : {});
    const send = (v: Record<string, string>, parent = parentA) =>
      request(s.apiUrl, method, fill(v), { ...(method === 'GET' ? {} : { body: body(parent) }), skipOpenApi: true });
    const first = await send(a);
    const second = await send(a);
    const what = `${method} ${path}`;
    t.equal(first.headers.get('x-ratelimit-bucket'), bucket, `${what} → ${bucket}`);
    t.equal(Number(first.headers.get('x-ratelimit-limit')), BUCKET_LIMITS[bucket], `${what} limit`);
    const r1 = Number(first.headers.get('x-ratelimit-remaining'));
    t.equal(Number(second.headers.get('x-ratelimit-remaining')), r1 - 1, `${what}: same resource, same counter`);
    // Another resource: a fresh counter when keyed by it, the same counter when keyed by route or caller.
    const b = { ...a };
    if (key !== 'route' && key !== 'caller' && key !== 'parent') b[key] = newId();
    const other = await send(b, key === 'parent' ? newId() : parentA);
    const r3 = Number(other.headers.get('x-ratelimit-remaining'));
    if (key === 'route' || key === 'caller') t.equal(r3, r1 - 2, `${what}: keyed by ${key}, shared across resources`);
    else t.equal(r3, BUCKET_LIMITS[bucket] - 1, `${what}: keyed by ${key}, another one has its own budget`);
  }
});

t.test('the image proxy: its own bucket, one counter per caller', async (t) => {
  const s = await startTestService(t, {}, { now: () => 5_000_000 });
  const hit = () => request(s.mediaUrl, 'GET', '/proxy?url=not-a-url', { skipOpenApi: true });
  const first = await hit();
  const second = await hit();
  t.equal(first.status, 400, 'a malformed URL is refused after counting');
  t.equal(first.headers.get('x-ratelimit-bucket'), 'proxy');
  t.equal(Number(first.headers.get('x-ratelimit-limit')), BUCKET_LIMITS.proxy);
  t.equal(Number(first.headers.get('x-ratelimit-remaining')), BUCKET_LIMITS.proxy - 1);
  t.equal(Number(second.headers.get('x-ratelimit-remaining')), BUCKET_LIMITS.proxy - 2);
  for (let i = 2; i < BUCKET_LIMITS.proxy; i++) await hit();
  const over = await hit();
  t.equal(over.status, 429, 'request limit + 1 is refused');
});

t.test('media uploads: catch-all, one counter per tag', async (t) => {
  const s = await startTestService(t, {}, { now: () => 5_000_000 });
  for (const tag of TAGS) {
    const up = () => request(s.mediaUrl, 'POST', `/${tag}`, { rawBody: '', contentType: 'multipart/form-data; boundary=x', skipOpenApi: true });
    const first = await up();
    const second = await up();
    t.equal(first.headers.get('x-ratelimit-bucket'), 'catch-all', `${tag} → catch-all`);
    t.equal(Number(first.headers.get('x-ratelimit-remaining')), BUCKET_LIMITS['catch-all'] - 1, `${tag} has its own counter`);
    t.equal(Number(second.headers.get('x-ratelimit-remaining')), BUCKET_LIMITS['catch-all'] - 2);
  }
});
