/**
 * An account deleted for abuse (issue 38): `DELETE /admin/users/:user_id {reason}` (instance admins) deletes the
 * account as its owner would, records it in the instance audit log, and sends Stoat's `UserPlatformWipe` with
 * the user flag Deleted (2) to everyone who shares a server, a DM, a group or a relationship with the user.
 * Someone who shares nothing gets nothing; moderators and users are refused.
 */
import t from 'tap';
import { runAdmin } from '../src/cli/accountsAdmin.ts';
import { newId } from '../src/ids.ts';
import { signup, type TestUser } from './helpers/http.ts';
import { createServer, join } from './helpers/servers.ts';
import { startTestService, type TestService } from './helpers/service.ts';
import { until } from './helpers/wait.ts';
import { connectReady, type WsClient } from './helpers/ws.ts';

async function grant(s: TestService, u: TestUser, role: 'moderator' | 'admin'): Promise<void> {
  if ((await runAdmin(['grant', u.userId, '--role', role], { store: s.store, print: () => {}, error: () => {} })) !== 0) throw new Error('grant failed');
  await until(`${role} granted`, async () => (await s.readModels.hgetJson<string>('instance:staff', u.userId)) === role);
}

async function befriend(a: TestUser, b: TestUser): Promise<void> {
  await a.api.put(`/users/${b.userId}/friend`);
  if ((await b.api.put(`/users/${a.userId}/friend`)).body.relationship !== 'Friend') throw new Error('befriend');
}

t.test('an account deleted for abuse is wiped with flags Deleted (2)', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [admin, mod, victim, member, dmPeer, groupPeer, asker, stranger] = await Promise.all([signup(s), signup(s), signup(s), signup(s), signup(s), signup(s), signup(s), signup(s)]);
  await grant(s, admin, 'admin');
  await grant(s, mod, 'moderator');
  const srv = await createServer(member);
  await join(member, srv.general, victim);
  t.equal((await victim.api.post(`/channels/${srv.general}/messages`, { content: 'abuse' })).status, 200);
  // A DM and a group that outlive the friendships they started from, and a pending request.
  await befriend(victim, dmPeer);
  const dm = (await dmPeer.api.get(`/users/${victim.userId}/dm`)).body._id as string;
  t.equal((await dmPeer.api.post(`/channels/${dm}/messages`, { content: 'hi' })).status, 200);
  t.equal((await dmPeer.api.del(`/users/${victim.userId}/friend`)).status, 200);
  await befriend(victim, groupPeer);
  t.equal((await groupPeer.api.post('/channels/create', { name: 'g', users: [victim.userId] })).status, 200);
  t.equal((await groupPeer.api.del(`/users/${victim.userId}/friend`)).status, 200);
  t.equal((await asker.api.put(`/users/${victim.userId}/friend`)).status, 200);

  const sockets = new Map<TestUser, WsClient>();
  for (const u of [member, dmPeer, groupPeer, asker, stranger]) {
    const c = await connectReady(s, u.token);
    t.teardown(() => c.close());
    sockets.set(u, c);
  }
  const wipes = (u: TestUser) => sockets.get(u)!.events.filter((e) => e.type === 'UserPlatformWipe');

  t.test('refused: users and moderators (403), self, bad bodies, unknown ids', async (t) => {
    t.match(await member.api.del(`/admin/users/${victim.userId}`, { reason: 'x' }), { status: 403, body: { type: 'NotPrivileged' } }, 'a user');
    t.match(await mod.api.del(`/admin/users/${victim.userId}`, { reason: 'x' }), { status: 403, body: { type: 'NotPrivileged' } }, 'a moderator');
    t.match(await admin.api.del(`/admin/users/${admin.userId}`, { reason: 'x' }), { status: 400, body: { type: 'InvalidOperation' } }, 'oneself');
    t.match(await admin.api.del(`/admin/users/${victim.userId}`, {}), { status: 400, body: { type: 'FailedValidation' } }, 'a reason is required');
    t.match(await admin.api.del(`/admin/users/${victim.userId}`, { reason: 'r'.repeat(513) }), { status: 400, body: { type: 'FailedValidation' } });
    t.match(await admin.api.del(`/admin/users/${newId()}`, { reason: 'x' }), { status: 404, body: { type: 'NotFound' } });
    t.match(await admin.api.del('/admin/users/not-an-id', { reason: 'x' }), { status: 404, body: { type: 'NotFound' } });
    t.equal((await victim.api.get('/users/@me')).status, 200, 'nothing happened to the account');
    t.same(wipes(member), [], 'no wipe yet');
  });

  t.test('an admin deletes the account: the wipe reaches everyone who shares something', async (t) => {
    t.equal((await admin.api.del(`/admin/users/${victim.userId}`, { reason: 'spam ring' })).status, 204);
    for (const [who, u] of [['a server member', member], ['a DM peer', dmPeer], ['a group peer', groupPeer], ['a pending request', asker]] as const) {
      const e = await sockets.get(u)!.waitFor((f) => f.type === 'UserPlatformWipe');
      t.same(e, { type: 'UserPlatformWipe', user_id: victim.userId, flags: 2 }, who);
    }
    // The stranger's own profile edit comes after the wipe on the one dispatch queue: by then the wipe would have arrived.
    t.equal((await stranger.api.patch('/users/@me', { display_name: 'Stranger' })).status, 200);
    await sockets.get(stranger)!.waitFor((f) => f.type === 'UserUpdate' && f.id === stranger.userId && f.data?.display_name === 'Stranger');
    t.same(wipes(stranger), [], 'someone who shares nothing gets nothing');
    for (const u of [member, dmPeer, groupPeer, asker]) t.equal(wipes(u).length, 1, 'once each');
    // Deleted as its owner would delete it: the session ends, the user shows as deleted (Stoat's flag 2).
    await until('the session ended', async () => (await victim.api.get('/users/@me')).status === 401);
    const seen = await member.api.get(`/users/${victim.userId}`);
    t.equal(seen.status, 200);
    t.equal((seen.body.flags & 2) === 2, true, 'flag Deleted');
    const audit = await until('the audit entry', async () => {
      const r = await admin.api.get('/admin/audit');
      return (r.body as Array<{ action: string }>).find((e) => e.action === 'AccountDelete');
    });
    t.match(audit, { action: 'AccountDelete', actor: admin.userId, target: { type: 'User', id: victim.userId }, reason: 'spam ring' });
    t.match(await admin.api.del(`/admin/users/${victim.userId}`, { reason: 'again' }), { status: 404, body: { type: 'NotFound' } }, 'a deleted account is gone');
  });
});
