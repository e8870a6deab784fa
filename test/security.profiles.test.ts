/**
 * Issue 35 finding 3: a User object never carries `profile` (bio and background). Stoat's User model has no
 * `profile` field (its `into(perspective)` builds the User without it); the profile is read only through
 * `GET /users/:id/profile`, which refuses a stranger and a blocked user (403 ViewProfile). Checked for a
 * stranger and a blocked user on every path that presents a User: GET /users/:id, Ready, the member list,
 * `include_users` of history and search, a group's members, a friend request's answer, the gateway's
 * UserRelationship and UserUpdate events — and for the user's own objects (Stoat shows the profile to no one
 * inside a User, the owner included).
 */
import t from 'tap';
import { signup, type TestUser } from './helpers/http.ts';
import { createServer, join } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';
import { connectReady } from './helpers/ws.ts';
import { until } from './helpers/wait.ts';

const BIO = `secret-bio-${process.pid}`;

/** Whether any part of a JSON value carries the bio or a `profile` field. */
function leaks(value: unknown): boolean {
  const text = JSON.stringify(value) ?? '';
  return text.includes(BIO) || text.includes('"profile"');
}

t.test('no User object carries the profile', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [alice, blocked, stranger, friend] = await Promise.all([signup(s), signup(s), signup(s), signup(s)]);
  const befriend = async (a: TestUser, b: TestUser) => {
    await a.api.put(`/users/${b.userId}/friend`);
    const r = await b.api.put(`/users/${a.userId}/friend`);
    if (r.body.relationship !== 'Friend') throw new Error(`befriend: ${r.text}`);
  };
  const server = await createServer(alice);
  await join(alice, server.general, blocked);
  await befriend(alice, friend);
  await befriend(friend, stranger);
  t.equal((await alice.api.patch('/users/@me', { profile: { content: BIO } })).status, 200, 'alice writes a bio');
  const sent = await alice.api.post(`/channels/${server.general}/messages`, { content: `searchable${process.pid}` });
  t.equal(sent.status, 200);
  t.equal((await alice.api.put(`/users/${blocked.userId}/block`)).status, 200, 'alice blocks a member of her server');

  // The rule: the profile route refuses them.
  for (const [who, u] of [['stranger', stranger], ['blocked', blocked]] as const) {
    const r = await u.api.get(`/users/${alice.userId}/profile`);
    t.same([r.status, r.body.type, r.body.permission], [403, 'MissingPermission', 'ViewProfile'], `${who}: GET /users/:id/profile is 403`);
  }
  t.equal((await friend.api.get(`/users/${alice.userId}/profile`)).body.content, BIO, 'a friend reads it there');

  t.test('REST', async (t) => {
    for (const [who, u] of [['stranger', stranger], ['blocked', blocked], ['friend', friend], ['self', alice]] as const) {
      const r = await u.api.get(`/users/${alice.userId}`);
      t.equal(r.status, 200);
      t.notOk(leaks(r.body), `${who}: GET /users/:id`);
    }
    t.notOk(leaks((await alice.api.get('/users/@me')).body), 'self: GET /users/@me');
    t.notOk(leaks((await alice.api.patch('/users/@me', { display_name: 'Alice' })).body), 'self: PATCH /users/@me');
    const members = await blocked.api.get(`/servers/${server.id}/members`);
    t.equal(members.status, 200);
    t.ok(members.body.users.some((u: { _id: string }) => u._id === alice.userId));
    t.notOk(leaks(members.body), 'blocked: the member list');
    const history = await blocked.api.get(`/channels/${server.general}/messages?include_users=true`);
    t.ok(history.body.users.some((u: { _id: string }) => u._id === alice.userId));
    t.notOk(leaks(history.body), 'blocked: history include_users');
    const found = await until('the message is indexed', async () => {
      const r = await blocked.api.post(`/channels/${server.general}/search`, { query: `searchable${process.pid}`, include_users: true });
      return r.status === 200 && r.body.users?.length > 0 ? r : undefined;
    });
    t.notOk(leaks(found.body), 'blocked: search include_users');
    const group = await friend.api.post('/channels/create', { name: 'g', users: [alice.userId, stranger.userId] });
    t.equal(group.status, 200, group.text);
    const recipients = await stranger.api.get(`/channels/${group.body._id}/members`);
    t.ok(recipients.body.some((u: { _id: string }) => u._id === alice.userId));
    t.notOk(leaks(recipients.body), 'stranger: a group\'s members');
  });

  t.test('gateway', async (t) => {
    const [aliceWs, blockedWs, strangerWs] = await Promise.all([connectReady(s, alice.token), connectReady(s, blocked.token), connectReady(s, stranger.token)]);
    t.teardown(() => (aliceWs.close(), blockedWs.close(), strangerWs.close()));
    // A server peer's profile change reaches a socket that has the server active (Subscribe, bonfire's member topic;
    // gateway.subscribe.test.ts); the Pong says it was applied.
    blockedWs.send({ type: 'Subscribe', server_id: server.id });
    blockedWs.send({ type: 'Ping', data: 0 });
    await blockedWs.waitFor((e) => e.type === 'Pong' && e.data === 0);
    const readyOf = (ws: typeof aliceWs) => ws.events.find((e) => e.type === 'Ready')!;
    t.ok(readyOf(blockedWs).users.some((u: { _id: string }) => u._id === alice.userId), 'the blocked user has alice in Ready');
    t.notOk(leaks(readyOf(blockedWs)), 'blocked: Ready');
    t.notOk(leaks(readyOf(aliceWs)), 'self: Ready');

    const request = await stranger.api.put(`/users/${alice.userId}/friend`);
    t.equal(request.status, 200);
    t.notOk(leaks(request.body), 'stranger: a friend request answers the User without profile');
    const rel = await strangerWs.waitFor((e) => e.type === 'UserRelationship' && e.user?._id === alice.userId);
    t.notOk(leaks(rel), 'stranger: UserRelationship');

    t.equal((await alice.api.patch('/users/@me', { profile: { content: `${BIO} v2` }, display_name: 'Alice Two' })).status, 200);
    const update = await blockedWs.waitFor((e) => e.type === 'UserUpdate' && e.id === alice.userId && e.data?.display_name === 'Alice Two');
    t.notOk(leaks(update), 'blocked: UserUpdate');
    const own = await aliceWs.waitFor((e) => e.type === 'UserUpdate' && e.id === alice.userId && e.data?.display_name === 'Alice Two');
    t.notOk(leaks(own), 'self: UserUpdate');
    t.equal((await friend.api.get(`/users/${alice.userId}/profile`)).body.content, `${BIO} v2`, 'the profile route has the new bio');
  });
});
