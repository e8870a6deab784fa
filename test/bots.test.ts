/**
 * Bots (issue 22): Stoat's /bots routes, the per-user bot limit (N passes, N+1 → ReachedMaximumBots, a race
 * ends exactly at it), `X-Bot-Token` on REST and `Authenticate` on the gateway, the IsBot list, the mention
 * flags only bots may set, the token as a secret (encrypted in the log, reset revokes it and closes the bot's
 * sockets), bot invites to servers (ManageServer) and groups (InviteOthers) with their audit entry, deletion,
 * and rebuild equals live.
 */
import t from 'tap';
import type { EventStore } from '../src/eventstore/port.ts';
import type { PersonalDataStore } from '../src/personal/store.ts';
import { Permission as P } from '../src/permissions/bits.ts';
import { request, signup } from './helpers/http.ts';
import { createServer, dumpCurrent, dumpRebuild, join, roleWith } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';
import { connectReady, connectWs } from './helpers/ws.ts';

t.test('bots', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', BOT_LIMIT: '2' });
  const owner = await signup(s);
  const other = await signup(s);
  const asBot = (token: string) => {
    const go = (method: string, path: string, body?: unknown, skipOpenApi = false) =>
      request(s.apiUrl, method, path, { headers: { 'X-Bot-Token': token }, ...(body !== undefined ? { body } : {}), skipOpenApi });
    return { get: (p: string) => go('GET', p), post: (p: string, b: unknown = {}) => go('POST', p, b), put: (p: string, b: unknown = {}) => go('PUT', p, b), del: (p: string) => go('DELETE', p), patch: (p: string, b: unknown) => go('PATCH', p, b) };
  };
  let botId = '';
  let token = '';

  t.test('create: BotWithUserResponse; the user carries bot.owner', async (t) => {
    const r = await owner.api.post('/bots/create', { name: `helper${process.pid}` });
    t.equal(r.status, 200);
    t.equal(r.body.owner, owner.userId);
    t.equal(r.body.public, false);
    t.type(r.body.token, 'string');
    t.ok(r.body.token.length >= 60, 'a long random token');
    t.same(r.body.user.bot, { owner: owner.userId });
    t.equal(r.body.user._id, r.body._id);
    botId = r.body._id;
    token = r.body.token;
    t.match(await owner.api.post('/bots/create', { name: 'x' }), { status: 400, body: { type: 'FailedValidation' } }, 'names as usernames: 2–32');
    t.match(await owner.api.post('/bots/create', { name: 'helper', extra: 1 }), { status: 400, body: { type: 'FailedValidation' } });
    t.match(await request(s.apiUrl, 'POST', '/bots/create', { body: { name: 'anon' } }), { status: 401, body: { type: 'NotAuthenticated' } });
  });

  t.test('the limit: BOT_LIMIT bots pass, one more is ReachedMaximumBots; a race ends exactly at it', async (t) => {
    const second = await owner.api.post('/bots/create', { name: `second${process.pid}` });
    t.equal(second.status, 200, 'the 2nd of 2');
    t.match(await owner.api.post('/bots/create', { name: `third${process.pid}` }), { status: 400, body: { type: 'ReachedMaximumBots' } });
    const racer = await signup(s);
    const results = await Promise.all([0, 1, 2, 3, 4].map((i) => racer.api.post('/bots/create', { name: `race${process.pid}x${i}` })));
    t.equal(results.filter((r) => r.status === 200).length, 2, 'exactly the limit');
    t.ok(results.filter((r) => r.status !== 200).every((r) => r.body.type === 'ReachedMaximumBots'));
    t.equal((await racer.api.get('/bots/@me')).body.bots.length, 2);
    t.equal((await owner.api.del(`/bots/${second.body._id}`)).status, 204, 'deleting one frees a slot');
  });

  t.test('owned, fetch, public: the token only for the owner', async (t) => {
    const mine = await owner.api.get('/bots/@me');
    t.equal(mine.status, 200);
    t.same(mine.body.bots.map((b: { _id: string }) => b._id), [botId]);
    t.equal(mine.body.bots[0].token, token);
    t.same(mine.body.users.map((u: { _id: string }) => u._id), [botId]);
    const fetched = await owner.api.get(`/bots/${botId}`);
    t.equal(fetched.status, 200);
    t.equal(fetched.body.bot.token, token);
    t.equal(fetched.body.user._id, botId);
    t.match(await other.api.get(`/bots/${botId}`), { status: 404, body: { type: 'NotFound' } }, "someone else's bot");
    t.match(await other.api.get(`/bots/${botId}/invite`), { status: 404, body: { type: 'NotFound' } }, 'private: not shown to others');
    const pub = await owner.api.get(`/bots/${botId}/invite`);
    t.same(pub.body, { _id: botId, username: `helper${process.pid}` }, 'PublicBot, without the token');
    t.match(await owner.api.patch(`/bots/${botId}`, { public: true, analytics: true, interactions_url: 'https://example.test/i' }), { status: 200, body: { public: true, analytics: true, interactions_url: 'https://example.test/i' } });
    t.equal((await request(s.apiUrl, 'GET', `/bots/${botId}/invite`)).status, 200, 'public: no session needed');
    const cleared = await owner.api.patch(`/bots/${botId}`, { remove: ['InteractionsURL'] });
    t.equal(cleared.body.interactions_url, undefined);
    t.equal(cleared.body.token, token, 'the token is unchanged by other edits');
    t.match(await other.api.patch(`/bots/${botId}`, { public: false }), { status: 404, body: { type: 'NotFound' } });
    t.match(await other.api.del(`/bots/${botId}`), { status: 404, body: { type: 'NotFound' } });
    t.match(await owner.api.patch(`/bots/${botId}`, { remove: ['Avatar'] }), { status: 400, body: { type: 'FailedValidation' } });
    const renamed = await owner.api.patch(`/bots/${botId}`, { name: `renamed${process.pid}` });
    t.equal(renamed.body.user.username, `renamed${process.pid}`, 'a new name renames its user');
    t.equal((await owner.api.get(`/users/${botId}`)).body.username, `renamed${process.pid}`);
    t.equal((await owner.api.patch(`/bots/${botId}`, { name: `helper${process.pid}` })).body.user.username, `helper${process.pid}`, 'and back');
  });

  t.test('X-Bot-Token works on REST; a wrong one is InvalidSession; auth routes take no bot', async (t) => {
    const bot = asBot(token);
    const me = await bot.get('/users/@me');
    t.equal(me.status, 200);
    t.equal(me.body._id, botId);
    t.same(me.body.bot, { owner: owner.userId });
    t.match(await asBot(token + 'x').get('/users/@me'), { status: 401, body: { type: 'InvalidSession' } });
    t.match(await asBot('x'.repeat(300)).get('/users/@me'), { status: 401, body: { type: 'InvalidSession' } });
    t.match(await bot.get('/auth/session/all'), { status: 401, body: { type: 'NotAuthenticated' } }, 'sessions are for accounts');
    t.match(await bot.get('/auth/account/'), { status: 401, body: { type: 'NotAuthenticated' } });
    t.match(await bot.post('/onboard/complete', { username: 'whatever' }), { status: 401, body: { type: 'NotAuthenticated' } });
  });

  t.test('IsBot: what Stoat refuses to bots', async (t) => {
    const bot = asBot(token);
    const srv = await createServer(owner);
    const invite = await owner.api.post(`/channels/${srv.general}/invites`);
    const refused: Array<[string, string, unknown?]> = [
      ['POST', '/servers/create', { name: 'by a bot' }],
      ['POST', '/users/friend', { username: `${owner.username}#0000` }],
      ['PUT', `/users/${owner.userId}/friend`],
      ['DELETE', `/users/${owner.userId}/friend`],
      ['POST', '/channels/create', { name: 'group' }],
      ['POST', `/invites/${invite.body._id}`],
      ['POST', '/bots/create', { name: 'botbot' }],
      ['GET', `/bots/${botId}`],
      ['POST', `/bots/${botId}/invite`, { server: srv.id }],
      ['POST', '/safety/report', { content: { type: 'User', id: owner.userId, report_reason: 'SpamAbuse' } }],
      ['PATCH', '/users/@me/username', { username: 'newname', password: 'whatever12' }],
    ];
    for (const [method, path, body] of refused) {
      const r = await request(s.apiUrl, method, path, { headers: { 'X-Bot-Token': token }, ...(body !== undefined ? { body } : {}), skipOpenApi: true });
      t.match(r, { status: 400, body: { type: 'IsBot' } }, `${method} ${path}`);
    }
    t.equal((await owner.api.get('/users/@me')).status, 200, 'the same routes still serve users');
  });

  t.test('invite: server (ManageServer) and group (InviteOthers); private bots only by their owner; audited', async (t) => {
    const srv = await createServer(other);
    t.match(await other.api.post(`/bots/${botId}/invite`, { server: srv.id }), { status: 204 }, 'public now: anyone with ManageServer');
    t.ok((await other.api.get(`/servers/${srv.id}/members/${botId}`)).status === 200, 'the bot is a member');
    t.match(await other.api.post(`/bots/${botId}/invite`, { server: srv.id }), { status: 409, body: { type: 'AlreadyInServer' } });
    const audit = await other.api.get(`/servers/${srv.id}/audit_logs`, { skipOpenApi: true });
    t.ok(audit.body.audit_logs.some((e: { action: string; target: { id: string }; actor: string }) => e.action === 'BotAdd' && e.target.id === botId && e.actor === other.userId), 'BotAdd entry by the inviter');

    const plain = await signup(s);
    const mgr = await signup(s);
    const srv2 = await createServer(owner);
    await join(owner, srv2.general, plain, mgr);
    await roleWith(owner, srv2.id, P.ManageServer, [mgr]);
    t.match(await plain.api.post(`/bots/${botId}/invite`, { server: srv2.id }), { status: 403, body: { type: 'MissingPermission', permission: 'ManageServer' } });
    t.match(await other.api.post(`/bots/${botId}/invite`, { server: srv2.id }), { status: 404, body: { type: 'NotFound' } }, 'not a member');
    await owner.api.patch(`/bots/${botId}`, { public: false });
    t.match(await mgr.api.post(`/bots/${botId}/invite`, { server: srv2.id }), { status: 403, body: { type: 'BotIsPrivate' } });
    t.equal((await owner.api.post(`/bots/${botId}/invite`, { server: srv2.id })).status, 204, 'the owner may');
    t.match(await owner.api.post(`/bots/${botId}/invite`, { server: srv2.id, group: srv2.id }), { status: 400, body: { type: 'FailedValidation' } });

    const friend = await signup(s);
    await owner.api.post('/users/friend', { username: `${friend.username}#${(await friend.api.get('/users/@me')).body.discriminator}` });
    await friend.api.put(`/users/${owner.userId}/friend`);
    const group = await owner.api.post('/channels/create', { name: 'with a bot', users: [friend.userId] });
    t.equal(group.status, 200);
    t.equal((await owner.api.post(`/bots/${botId}/invite`, { group: group.body._id })).status, 204);
    t.ok((await owner.api.get(`/channels/${group.body._id}`)).body.recipients.includes(botId), 'a recipient without friendship');
    t.match(await plain.api.post(`/bots/${botId}/invite`, { group: group.body._id }), { status: 403, body: { type: 'BotIsPrivate' } });
  });

  t.test('mention flags: IsNotBot for users; a bot with MentionEveryone may set @everyone', async (t) => {
    const srv = await createServer(owner);
    await owner.api.post(`/bots/${botId}/invite`, { server: srv.id });
    t.match(await owner.api.post(`/channels/${srv.general}/messages`, { content: 'hi', flags: 4 }), { status: 400, body: { type: 'IsNotBot' } });
    const bot = asBot(token);
    t.match(await bot.post(`/channels/${srv.general}/messages`, { content: 'hi', flags: 4 }), { status: 403, body: { type: 'MissingPermission', permission: 'MentionEveryone' } });
    const role = await owner.api.post(`/servers/${srv.id}/roles`, { name: 'mass' });
    await owner.api.put(`/servers/${srv.id}/permissions/${role.body.id}`, { permissions: { allow: Number(P.MentionEveryone), deny: 0 } });
    await owner.api.patch(`/servers/${srv.id}/members/${botId}`, { roles: [role.body.id] });
    const sent = await bot.post(`/channels/${srv.general}/messages`, { content: 'hello everyone', flags: 4 });
    t.equal(sent.status, 200);
    t.equal(sent.body.author, botId);
    t.equal(sent.body.flags, 4);
    const unreads = await owner.api.get('/sync/unreads');
    const mine = unreads.body.find((u: { _id: { channel: string } }) => u._id.channel === srv.general);
    t.ok(mine?.mentions?.includes(sent.body._id), "the flag mentions everyone: it is in the owner's mentions");
  });

  t.test('nobody befriends a bot (IsBot)', async (t) => {
    t.match(await other.api.put(`/users/${botId}/friend`), { status: 400, body: { type: 'IsBot' } });
    const me = await asBot(token).get('/users/@me');
    t.match(await other.api.post('/users/friend', { username: `${me.body.username}#${me.body.discriminator}` }), { status: 400, body: { type: 'IsBot' } });
  });

  t.test('the token is encrypted in the log; a reset revokes it and closes its sockets', async (t) => {
    const events = await readAllEvents((s.store as PersonalDataStore).inner);
    t.ok(events.length > 0);
    t.notOk(events.includes(token), 'the plain token is nowhere in the log');

    const ws = await connectReady(s, token);
    t.equal((await asBot(token).get('/users/@me')).status, 200);
    const reset = await owner.api.patch(`/bots/${botId}`, { remove: ['Token'] });
    t.equal(reset.status, 200);
    t.not(reset.body.token, token, 'a new token');
    const closed = await ws.closed;
    t.ok(closed.code === 1000, 'the socket with the old token was closed');
    t.ok(ws.frames.some((f) => f.type === 'Logout'), 'with Logout');
    t.match(await asBot(token).get('/users/@me'), { status: 401, body: { type: 'InvalidSession' } }, 'the old token is revoked');
    const again = connectWs(s, { token });
    await again.closed;
    t.ok(again.frames.some((f) => f.type === 'Error' && f.data?.type === 'InvalidSession'), 'the gateway refuses the old token');
    token = reset.body.token;
    t.equal((await asBot(token).get('/users/@me')).status, 200, 'the new one works');
    const ws2 = await connectReady(s, token);
    const ready = ws2.frames.find((f) => f.type === 'Ready')!;
    t.ok(ready.users.some((u: { _id: string; bot?: unknown }) => u._id === botId && u.bot), 'Ready names the bot user with bot.owner');
    ws2.close();
  });

  t.test('delete: the token stops working, the user shows as deleted', async (t) => {
    const made = await other.api.post('/bots/create', { name: `gone${process.pid}` });
    const ws = await connectReady(s, made.body.token);
    t.equal((await other.api.del(`/bots/${made.body._id}`)).status, 204);
    await ws.closed;
    t.match(await asBot(made.body.token).get('/users/@me'), { status: 401, body: { type: 'InvalidSession' } });
    t.same((await other.api.get('/bots/@me')).body, { bots: [], users: [] });
    t.match(await other.api.get(`/bots/${made.body._id}`), { status: 404 });
    const user = await other.api.get(`/users/${made.body._id}`);
    t.equal(user.body.username, 'Deleted User');
    t.equal((await other.api.post('/bots/create', { name: `gone${process.pid}` })).status, 200, 'its name is free again');
  });

  t.test('rebuild equals live', async (t) => {
    const live = await dumpCurrent(s.redis, s.prefix);
    t.same(await dumpRebuild(t, s.redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions }), live);
  });
});

/** Every event of the log as stored on disk (sealed fields sealed), as one string. */
async function readAllEvents(store: EventStore): Promise<string> {
  const out: string[] = [];
  for await (const e of store.readAll()) out.push(JSON.stringify(e, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));
  return out.join('\n');
}
