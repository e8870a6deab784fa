// HTTP tests of members, bans and invites: listing, editing, kicking, banning (a banned user cannot join),
// invite codes, joining (409 AlreadyInServer), invite deletion, and channel deletion taking its invites.
import t from 'tap';
import { INVITE_ALPHABET } from '../src/ids.ts';
import { Permission as P } from '../src/permissions/bits.ts';
import { rm } from '../src/readmodel/keys.ts';
import { client, signup } from './helpers/http.ts';
import { createServer, join, roleWith } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';

t.test('members, bans and invites', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [owner, alice, bob, stranger] = await Promise.all([signup(s), signup(s), signup(s), signup(s)]);
  const srv = await createServer(owner, 'Members');
  const S = `/servers/${srv.id}`;

  t.test('invites: code shape, public info, join, already a member', async (t) => {
    const created = await owner.api.post(`/channels/${srv.general}/invites`);
    t.equal(created.status, 200);
    const code = created.body._id as string;
    t.same(created.body, { type: 'Server', _id: code, server: srv.id, creator: owner.userId, channel: srv.general });
    t.equal(code.length, 8);
    t.ok([...code].every((c) => INVITE_ALPHABET.includes(c)), 'Revolt alphabet');
    t.equal(INVITE_ALPHABET.length, 54);
    t.notOk(/[ILOUilou]/.test(INVITE_ALPHABET));
    const codes = new Set<string>();
    for (let i = 0; i < 5; i++) codes.add((await owner.api.post(`/channels/${srv.general}/invites`)).body._id);
    t.equal(codes.size, 5, 'codes differ');

    const info = await client(s).get(`/invites/${code}`);
    t.equal(info.status, 200, 'no session needed');
    t.same(info.body, {
      type: 'Server',
      code,
      server_id: srv.id,
      server_name: 'Members',
      channel_id: srv.general,
      channel_name: 'General',
      user_name: owner.username,
      member_count: 1,
    });
    t.equal((await client(s).get('/invites/nonexist')).status, 404);

    const joined = await alice.api.post(`/invites/${code}`);
    t.equal(joined.status, 200);
    t.equal(joined.body.type, 'Server');
    t.equal(joined.body.server._id, srv.id);
    t.same(joined.body.channels.map((c: { _id: string }) => c._id), [srv.general]);
    const again = await alice.api.post(`/invites/${code}`);
    t.same([again.status, again.body.type], [409, 'AlreadyInServer']);
    t.equal((await owner.api.post(`/invites/${code}`)).body.type, 'AlreadyInServer', 'the owner too');
    t.equal((await client(s).get(`/invites/${code}`)).body.member_count, 2);
    t.ok(await s.redis.sismember(s.readModels.key(rm.userServers(alice.userId)), srv.id));
    t.equal((await client(s).post(`/invites/${code}`)).status, 401, 'joining needs a session');

    const list = await owner.api.get(`${S}/invites`);
    t.equal(list.body.length, 6);
    t.ok(list.body.every((i: { server: string }) => i.server === srv.id));
  });

  t.test('members: list, fetch, roles view', async (t) => {
    const role = await roleWith(owner, srv.id, P.ManageNicknames, [alice], 'Mods');
    const list = await alice.api.get(`${S}/members?exclude_offline=false`);
    t.equal(list.status, 200);
    t.same(list.body.members.map((m: { _id: { user: string } }) => m._id.user).sort(), [owner.userId, alice.userId].sort());
    t.same(list.body.users.map((u: { _id: string }) => u._id).sort(), [owner.userId, alice.userId].sort());
    t.ok(list.body.users.every((u: { username: string }) => typeof u.username === 'string'));
    const one = await owner.api.get(`${S}/members/${alice.userId}`);
    t.match(one.body, { _id: { server: srv.id, user: alice.userId }, joined_at: String, roles: [role] });
    t.notOk('can_publish' in one.body, 'can_publish only shown when false');
    const withRoles = await owner.api.get(`${S}/members/${alice.userId}?roles=true`);
    t.same(Object.keys(withRoles.body.roles), [role]);
    t.equal(withRoles.body.roles[role].name, 'Mods');
    t.equal((await owner.api.get(`${S}/members/${stranger.userId}`)).status, 404);
    t.equal((await stranger.api.get(`${S}/members`)).status, 404);
    t.equal((await stranger.api.get(`${S}/members/${alice.userId}`)).status, 404);
  });

  t.test('member edit: fields round-trip, remove, timeout', async (t) => {
    const e = await owner.api.patch(`${S}/members/${alice.userId}`, { nickname: 'Al', can_publish: false, can_receive: false });
    t.equal(e.status, 200);
    t.match(e.body, { nickname: 'Al', can_publish: false, can_receive: false });
    const back = await owner.api.patch(`${S}/members/${alice.userId}`, { can_publish: true, remove: ['Nickname', 'CanReceive'] });
    t.notOk('nickname' in back.body);
    t.notOk('can_publish' in back.body);
    t.notOk('can_receive' in back.body);
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const timed = await owner.api.patch(`${S}/members/${alice.userId}`, { timeout: until });
    t.equal(timed.body.timeout, until);
    // Alice holds ManageNicknames through "Mods", but a timeout keeps only ViewChannel and ReadMessageHistory.
    t.equal((await alice.api.patch(`${S}/members/${owner.userId}`, { nickname: 'x' })).body.permission, 'ManageNicknames');
    t.equal((await alice.api.patch(`${S}/members/${alice.userId}`, { nickname: 'x' })).body.permission, 'ChangeNickname');
    t.equal((await alice.api.post(`/channels/${srv.general}/invites`)).body.permission, 'InviteOthers');
    t.equal((await alice.api.get(`/channels/${srv.general}`)).status, 200, 'still sees the channel');
    const untimed = await owner.api.patch(`${S}/members/${alice.userId}`, { remove: ['Timeout'] });
    t.notOk('timeout' in untimed.body);
    t.equal((await alice.api.patch(`${S}/members/${alice.userId}`, { nickname: 'back' })).status, 200);
    const past = await owner.api.patch(`${S}/members/${alice.userId}`, { timeout: new Date(Date.now() - 1000).toISOString() });
    t.equal(past.status, 200);
    t.equal((await alice.api.patch(`${S}/members/${alice.userId}`, { nickname: 'free' })).status, 200, 'a past timeout restricts nothing');
    t.equal((await owner.api.patch(`${S}/members/${alice.userId}`, { timeout: 'tomorrow' })).body.type, 'FailedValidation');
    t.equal((await owner.api.patch(`${S}/members/${alice.userId}`, { roles: ['unknown'] })).body.type, 'InvalidRole');
    // voice_channel (moving a member between calls) needs voice: without it, 400 FeatureDisabled and nothing
    // of the edit is applied (the moves themselves are tested in voice.presence.test.ts).
    const move = await owner.api.patch(`${S}/members/${alice.userId}`, { voice_channel: srv.general, nickname: 'not applied' });
    t.match(move, { status: 400, body: { type: 'FeatureDisabled', feature: 'voice' } });
    t.not((await owner.api.get(`${S}/members/${alice.userId}`)).body.nickname, 'not applied');
    t.match(await owner.api.patch(`${S}/members/${alice.userId}`, { voice_channel: 7 }), { status: 400, body: { type: 'FailedValidation' } });
    t.equal((await owner.api.patch(`${S}/members/${alice.userId}`, { pronouns: 'x' })).body.type, 'FailedValidation');
    t.equal((await owner.api.patch(`${S}/members/${stranger.userId}`, { nickname: 'x' })).status, 404);
    t.equal((await owner.api.patch(`${S}/members/@me`, { nickname: 'boss' })).body.nickname, 'boss');
  });

  t.test('kick, ban, banned cannot join, unban', async (t) => {
    const code = (await owner.api.post(`/channels/${srv.general}/invites`)).body._id;
    t.equal((await bob.api.post(`/invites/${code}`)).status, 200);
    t.equal((await owner.api.del(`${S}/members/${bob.userId}`)).status, 204);
    t.equal((await bob.api.get(S)).status, 404, 'kicked');
    t.notOk(await s.redis.sismember(s.readModels.key(rm.userServers(bob.userId)), srv.id));
    t.equal((await owner.api.del(`${S}/members/${bob.userId}`)).status, 404, 'not a member any more');
    t.equal((await bob.api.post(`/invites/${code}`)).status, 200, 'a kicked user can come back');

    const ban = await owner.api.put(`${S}/bans/${bob.userId}`, { reason: 'spam', delete_message_seconds: 60 });
    t.equal(ban.status, 200);
    t.same(ban.body, { _id: { server: srv.id, user: bob.userId }, reason: 'spam' });
    t.equal((await bob.api.get(S)).status, 404, 'a banned member is removed');
    const refused = await bob.api.post(`/invites/${code}`);
    t.same([refused.status, refused.body.type], [403, 'Banned']);
    const bans = await owner.api.get(`${S}/bans`);
    t.same(bans.body.bans, [{ _id: { server: srv.id, user: bob.userId }, reason: 'spam' }]);
    t.same(bans.body.users, [{ _id: bob.userId, username: bob.username, discriminator: bans.body.users[0].discriminator }]);
    t.equal((await owner.api.put(`${S}/bans/${stranger.userId}`, {})).status, 200, 'a non-member can be banned');
    t.equal((await stranger.api.post(`/invites/${code}`)).body.type, 'Banned');
    t.equal((await owner.api.put(`${S}/bans/01HZZZZZZZZZZZZZZZZZZZZZZZ`, {})).status, 404, 'an unknown user');
    t.equal((await owner.api.put(`${S}/bans/${owner.userId}`, {})).body.type, 'CannotRemoveYourself');
    t.equal((await owner.api.put(`${S}/bans/${bob.userId}`, { reason: 'x'.repeat(1025) })).body.type, 'FailedValidation');
    t.equal((await owner.api.del(`${S}/bans/${bob.userId}`)).status, 204);
    t.equal((await owner.api.del(`${S}/bans/${bob.userId}`)).status, 404, 'not banned any more');
    t.equal((await bob.api.post(`/invites/${code}`)).status, 200, 'unbanned: can join again');
    await owner.api.del(`${S}/bans/${stranger.userId}`);
  });

  t.test('invite deletion; a deleted channel takes its invites', async (t) => {
    const code = (await owner.api.post(`/channels/${srv.general}/invites`)).body._id;
    t.equal((await stranger.api.del(`/invites/${code}`)).status, 404, 'a non-member');
    t.equal((await owner.api.del(`/invites/${code}`)).status, 204);
    t.equal((await client(s).get(`/invites/${code}`)).status, 404);
    t.equal((await stranger.api.post(`/invites/${code}`)).status, 404);
    t.equal((await owner.api.del(`/invites/${code}`)).status, 404);

    const extra = (await owner.api.post(`${S}/channels`, { name: 'doomed' })).body._id;
    const doomed = (await owner.api.post(`/channels/${extra}/invites`)).body._id;
    const kept = (await owner.api.post(`/channels/${srv.general}/invites`)).body._id;
    await owner.api.del(`/channels/${extra}`);
    t.equal((await client(s).get(`/invites/${doomed}`)).status, 404);
    t.notOk(await s.redis.sismember(s.readModels.key(rm.serverInvites(srv.id)), doomed));
    t.equal((await client(s).get(`/invites/${kept}`)).status, 200);
  });

  t.test('leaving', async (t) => {
    t.equal((await alice.api.del(S)).status, 204);
    t.equal((await alice.api.get(S)).status, 404);
    t.equal((await owner.api.get(S)).status, 200, 'the server stays');
    t.notOk((await owner.api.get(`${S}/members`)).body.members.some((m: { _id: { user: string } }) => m._id.user === alice.userId));
  });
});
