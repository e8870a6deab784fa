/**
 * UserPlatformWipe (issue 38; Stoat defines it, never sends it): when an instance admin bans a user, everyone
 * who shares a server, a DM, a group or a relationship with them receives `{type: "UserPlatformWipe", user_id,
 * flags: 4}` (Stoat's Banned flag) so their clients drop the user's messages. Someone who shares nothing with
 * the user gets nothing; a suspension wipes nothing.
 */
import { Client } from 'stoat.js';
import t from 'tap';
import { runAdmin } from '../src/cli/accountsAdmin.ts';
import { signup, type TestUser } from './helpers/http.ts';
import { createServer, join } from './helpers/servers.ts';
import { startTestService, type TestService } from './helpers/service.ts';
import { until } from './helpers/wait.ts';
import { connectReady, type WsClient } from './helpers/ws.ts';
import { clearClientIntervalsAtTeardown, installWebSocket, signUpWithClient } from './helpers/realClients.ts';

installWebSocket();

async function grant(s: TestService, u: TestUser, role: 'moderator' | 'admin'): Promise<void> {
  if ((await runAdmin(['grant', u.userId, '--role', role], { store: s.store, print: () => {}, error: () => {} })) !== 0) throw new Error('grant failed');
  await until(`${role} granted`, async () => (await s.readModels.hgetJson<string>('instance:staff', u.userId)) === role);
}

async function befriend(a: TestUser, b: TestUser): Promise<void> {
  await a.api.put(`/users/${b.userId}/friend`);
  if ((await b.api.put(`/users/${a.userId}/friend`)).body.relationship !== 'Friend') throw new Error('befriend');
}

t.test('a ban sends UserPlatformWipe to everyone who shares something with the user', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [admin, victim, member, dmPeer, groupPeer, asker, stranger, suspended] = await Promise.all([signup(s), signup(s), signup(s), signup(s), signup(s), signup(s), signup(s), signup(s)]);
  await grant(s, admin, 'admin');
  const srv = await createServer(member);
  await join(member, srv.general, victim, suspended);
  // A DM and a group that outlive the friendships they started from.
  await befriend(victim, dmPeer);
  const dm = (await dmPeer.api.get(`/users/${victim.userId}/dm`)).body._id as string;
  t.equal((await dmPeer.api.post(`/channels/${dm}/messages`, { content: 'hi' })).status, 200);
  t.equal((await dmPeer.api.del(`/users/${victim.userId}/friend`)).status, 200);
  await befriend(victim, groupPeer);
  t.equal((await groupPeer.api.post('/channels/create', { name: 'g', users: [victim.userId] })).status, 200);
  t.equal((await groupPeer.api.del(`/users/${victim.userId}/friend`)).status, 200);
  // A pending friend request is a relationship too.
  t.equal((await asker.api.put(`/users/${victim.userId}/friend`)).status, 200);

  const sockets = new Map<TestUser, WsClient>();
  for (const u of [member, dmPeer, groupPeer, asker, stranger]) {
    const c = await connectReady(s, u.token);
    t.teardown(() => c.close());
    sockets.set(u, c);
  }
  const wipes = (u: TestUser) => sockets.get(u)!.events.filter((e) => e.type === 'UserPlatformWipe');

  // A suspension wipes nothing; a ban does.
  t.equal((await admin.api.post(`/admin/users/${suspended.userId}/suspend`, { reason: 'cool off' })).status, 200);
  t.equal((await admin.api.post(`/admin/users/${victim.userId}/ban`, { reason: 'spam' })).status, 200);
  for (const [who, u] of [['a server member', member], ['a DM peer', dmPeer], ['a group peer', groupPeer], ['a pending request', asker]] as const) {
    const e = await sockets.get(u)!.waitFor((f) => f.type === 'UserPlatformWipe');
    t.same(e, { type: 'UserPlatformWipe', user_id: victim.userId, flags: 4 }, who);
  }
  // The stranger's own profile edit comes after the wipe on the one dispatch queue: by then the wipe would have arrived.
  t.equal((await stranger.api.patch('/users/@me', { display_name: 'Stranger' })).status, 200);
  await sockets.get(stranger)!.waitFor((f) => f.type === 'UserUpdate' && f.id === stranger.userId && f.data?.display_name === 'Stranger');
  t.same(wipes(stranger), [], 'someone who shares nothing gets nothing');
  for (const u of [member, dmPeer, groupPeer, asker]) t.equal(wipes(u).length, 1, 'once each');
  t.notOk(sockets.get(member)!.events.some((e) => e.type === 'UserPlatformWipe' && e.user_id === suspended.userId), 'no wipe for the suspension');
});

t.test('stoat.js drops the banned user\'s messages and marks the user Banned', async (t) => {
  clearClientIntervalsAtTeardown(t);
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [admin, victim] = await Promise.all([signup(s), signup(s)]);
  await grant(s, admin, 'admin');
  const watcher = await signUpWithClient(t, Client as never, 'stoat.js', s.apiUrl, `wipewatch${process.pid}`);
  const srv = (await watcher.api.post('/servers/create', { name: 'wipe' })) as { server: { _id: string }; channels: Array<{ _id: string }> };
  const general = srv.channels[0]!._id;
  const invite = (await watcher.api.post(`/channels/${general}/invites`)) as { _id: string };
  t.equal((await victim.api.post(`/invites/${invite._id}`)).status, 200);
  const sent = await victim.api.post(`/channels/${general}/messages`, { content: 'spam spam' });
  t.equal(sent.status, 200);
  const kept = (await watcher.api.post(`/channels/${general}/messages`, { content: 'mine' })) as { _id: string };
  await until('both messages cached by stoat.js', () => (watcher.messages.get(sent.body._id) && watcher.messages.get(kept._id) ? true : undefined));
  t.equal((await admin.api.post(`/admin/users/${victim.userId}/ban`, { reason: 'spam' })).status, 200);
  await until('the message dropped by stoat.js', () => (watcher.messages.get(sent.body._id) ? undefined : true));
  t.notOk(watcher.messages.get(sent.body._id), "the banned user's message is gone from the client");
  t.ok(watcher.messages.get(kept._id), 'the others stay');
  await until('the user marked', () => (watcher.users.get(victim.userId)?.flags === 4 ? true : undefined));
});
