// Friends, blocks, DMs, Saved Notes and groups over HTTP and the gateway: Stoat's relationship state machine
// and errors, the outgoing-request limit at N and N+1, user permissions deciding DMs, every group rule
// (friends only, size limit at N and N+1, owner-only removal, leave with ownership transfer, PATCH with system
// messages, default permissions), messages / reactions / pins / edits in private channels through the same
// routes, per-viewer `relationship`, the events each person receives, Ready, and rebuild = live.
import t from 'tap';
import { client, signup, type TestUser } from './helpers/http.ts';
import { createServer, dumpCurrent, dumpRebuild, join } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';
import { connectReady, type Frame } from './helpers/ws.ts';
import { DEFAULT_PERMISSION_DIRECT_MESSAGE } from '../src/permissions/user.ts';
import { stateAt } from '../src/cli/stateCounts.ts';
import { createEmoji, uploadImage } from './helpers/messages.ts';
import { createLogger } from '../src/log.ts';
import { newId } from '../src/ids.ts';

const LIMIT = 3; // FRIEND_REQUEST_LIMIT in this file
const GROUP = 4; // GROUP_SIZE_LIMIT in this file

t.test('relationships, DMs and groups', async (t) => {
  // Two projector partitions: a relationship change spans two users' partitions, a private channel is its own.
  const s = await startTestService(t, { RATE_LIMITS: 'off', FRIEND_REQUEST_LIMIT: String(LIMIT), GROUP_SIZE_LIMIT: String(GROUP), PROJECTOR_PARTITIONS: '2' });
  const users: TestUser[] = await Promise.all(Array.from({ length: 8 }, () => signup(s)));
  const [alice, bob, carol, dave, erin, frank, gina, hank] = users as [TestUser, TestUser, TestUser, TestUser, TestUser, TestUser, TestUser, TestUser];
  const rel = async (viewer: TestUser, other: TestUser) => (await viewer.api.get(`/users/${other.userId}`)).body.relationship as string;
  const befriend = async (a: TestUser, b: TestUser) => {
    const sent = await a.api.put(`/users/${b.userId}/friend`);
    const accepted = await b.api.put(`/users/${a.userId}/friend`);
    if (sent.status !== 200 || accepted.body.relationship !== 'Friend') throw new Error(`befriend: ${sent.text} ${accepted.text}`);
  };

  t.test('friend request → accept: both sides, events to both, per-viewer relationship', async (t) => {
    const wsA = await connectReady(s, alice.token);
    const wsB = await connectReady(s, bob.token);
    t.teardown(() => (wsA.close(), wsB.close()));
    const sent = await alice.api.post('/users/friend', { username: `${bob.username}#${(await bob.api.get('/users/@me')).body.discriminator}` });
    t.same([sent.status, sent.body._id, sent.body.relationship], [200, bob.userId, 'Outgoing'], 'the answer is the target as the caller sees it');
    t.equal(await rel(bob, alice), 'Incoming');
    t.equal(await rel(carol, alice), 'None', 'a third user sees None');
    const toA = await wsA.waitFor((e) => e.type === 'UserRelationship' && e.user._id === bob.userId);
    t.same([toA.id, toA.user.relationship, toA.user.username], [alice.userId, 'Outgoing', bob.username], 'the sender hears it, with the profile');
    const toB = await wsB.waitFor((e) => e.type === 'UserRelationship' && e.user._id === alice.userId);
    t.same([toB.id, toB.user.relationship], [bob.userId, 'Incoming'], 'the receiver hears it');
    t.same((await alice.api.put(`/users/${bob.userId}/friend`)).body.type, 'AlreadySentRequest');
    const accepted = await bob.api.put(`/users/${alice.userId}/friend`);
    t.same([accepted.status, accepted.body.relationship], [200, 'Friend']);
    t.equal(await rel(alice, bob), 'Friend');
    const again = await bob.api.put(`/users/${alice.userId}/friend`);
    t.same([again.status, again.body.type], [409, 'AlreadyFriends']);
    const self = await alice.api.put(`/users/${alice.userId}/friend`);
    t.same([self.status, self.body.type], [400, 'NoEffect'], 'oneself');
    await wsA.waitFor((e) => e.type === 'UserRelationship' && e.user._id === bob.userId && e.user.relationship === 'Friend');
    await wsB.waitFor((e) => e.type === 'UserRelationship' && e.user._id === alice.userId && e.user.relationship === 'Friend');
  });

  t.test('username form and unknown users', async (t) => {
    const cases: Array<[unknown, number, string]> = [
      [{ username: 'nohash' }, 400, 'InvalidProperty'],
      [{ username: `${carol.username}#0000` }, 404, 'NotFound'],
      [{ username: 'nobody-here#1234' }, 404, 'NotFound'],
      [{ username: 5 }, 400, 'FailedValidation'],
      [{}, 400, 'FailedValidation'],
      [{ username: 'a#1', extra: 1 }, 400, 'FailedValidation'],
    ];
    for (const [body, status, type] of cases) {
      const r = await alice.api.post('/users/friend', body);
      t.same([r.status, r.body.type], [status, type], JSON.stringify(body));
    }
    for (const id of ['not-an-id', '01HZZZZZZZZZZZZZZZZZZZZZZZ']) {
      for (const [m, p] of [['put', 'friend'], ['del', 'friend'], ['put', 'block'], ['del', 'block'], ['get', 'dm'], ['get', 'mutual']] as const) {
        const r = await (m === 'get' ? alice.api.get(`/users/${id}/${p}`) : alice.api[m](`/users/${id}/${p}`));
        t.same([r.status, r.body.type], [404, 'NotFound'], `${m} ${p} of ${id}`);
      }
    }
  });

  t.test('outgoing request limit: N pending pass, N+1 refused; cancelling frees one', async (t) => {
    const targets = [dave, erin, frank, gina];
    for (const u of targets.slice(0, LIMIT)) t.equal((await hank.api.put(`/users/${u.userId}/friend`)).status, 200);
    const over = await hank.api.put(`/users/${targets[LIMIT]!.userId}/friend`);
    t.same([over.status, over.body], [400, { type: 'TooManyPendingFriendRequests', max: LIMIT, location: '/users/:user_id/friend' }]);
    // Accepting an incoming request is not an outgoing one.
    t.equal((await carol.api.put(`/users/${hank.userId}/friend`)).status, 200);
    t.same((await hank.api.put(`/users/${carol.userId}/friend`)).body.relationship, 'Friend', 'accepting works at the limit');
    const cancel = await hank.api.del(`/users/${dave.userId}/friend`);
    t.same([cancel.status, cancel.body.relationship], [200, 'None'], 'cancel');
    t.equal(await rel(dave, hank), 'None', 'the other side is cleared too');
    t.equal((await hank.api.put(`/users/${targets[LIMIT]!.userId}/friend`)).status, 200, 'room again');
    const deny = await erin.api.del(`/users/${hank.userId}/friend`);
    t.same([deny.status, deny.body.relationship], [200, 'None'], 'deny an incoming request');
    const none = await erin.api.del(`/users/${hank.userId}/friend`);
    t.same([none.status, none.body.type], [400, 'NoEffect'], 'nothing to remove');
    for (const u of [frank, gina]) await hank.api.del(`/users/${u.userId}/friend`);
    await carol.api.del(`/users/${hank.userId}/friend`);
  });

  t.test('blocks: both directions, unblock, no friending and no DM', async (t) => {
    await befriend(dave, erin);
    const b = await dave.api.put(`/users/${erin.userId}/block`);
    t.same([b.status, b.body.relationship], [200, 'Blocked'], 'blocking a friend');
    t.equal(await rel(erin, dave), 'BlockedOther');
    t.same((await dave.api.put(`/users/${erin.userId}/block`)).body.type, 'NoEffect', 'twice');
    t.same([(await dave.api.put(`/users/${erin.userId}/friend`)).status, (await dave.api.put(`/users/${erin.userId}/friend`)).body.type], [409, 'Blocked']);
    const byOther = await erin.api.put(`/users/${dave.userId}/friend`);
    t.same([byOther.status, byOther.body.type], [403, 'BlockedByOther']);
    t.same((await erin.api.post('/users/friend', { username: `${dave.username}#${(await dave.api.get('/users/@me')).body.discriminator}` })).body.type, 'BlockedByOther', 'by username too');
    for (const [u, o] of [[dave, erin], [erin, dave]] as const) {
      const dm = await u.api.get(`/users/${o.userId}/dm`);
      t.same([dm.status, dm.body], [403, { type: 'MissingPermission', permission: 'SendMessage', location: '/users/:user_id/dm' }], 'no DM either way');
    }
    t.same((await erin.api.put(`/users/${dave.userId}/block`)).body.relationship, 'Blocked', 'blocked back: both blocked');
    t.equal(await rel(dave, erin), 'Blocked');
    t.same((await dave.api.del(`/users/${erin.userId}/block`)).body.relationship, 'BlockedOther', 'one unblock leaves the other block');
    t.equal(await rel(erin, dave), 'Blocked');
    t.same((await dave.api.del(`/users/${erin.userId}/block`)).body.type, 'NoEffect', 'nothing of mine to lift');
    t.same((await erin.api.del(`/users/${dave.userId}/block`)).body.relationship, 'None', 'both lifted');
    t.equal(await rel(dave, erin), 'None');
    t.same((await dave.api.del(`/users/${erin.userId}/block`)).body.type, 'NoEffect');
    t.same((await dave.api.put(`/users/${dave.userId}/block`)).body.type, 'NoEffect', 'oneself');
  });

  let dmId = '';
  t.test('DM: friends only, opened once, messages with every feature, close and reopen', async (t) => {
    const none = await alice.api.get(`/users/${carol.userId}/dm`);
    t.same([none.status, none.body.type, none.body.permission], [403, 'MissingPermission', 'SendMessage'], 'no relationship: no DM');
    const [a, b] = await Promise.all([alice.api.get(`/users/${bob.userId}/dm`), bob.api.get(`/users/${alice.userId}/dm`)]);
    t.equal(a.status, 200);
    t.same(a.body, b.body, 'opened from both sides at once: one channel');
    t.same([a.body.channel_type, a.body.active, [...a.body.recipients].sort()], ['DirectMessage', true, [alice.userId, bob.userId].sort()]);
    dmId = a.body._id;
    t.same((await alice.api.get(`/users/${bob.userId}/dm`)).body._id, dmId, 'reused');
    t.same((await bob.api.get(`/channels/${dmId}`)).body, a.body, 'fetch');
    const outsider = await carol.api.get(`/channels/${dmId}`);
    t.same([outsider.status, outsider.body.type], [404, 'NotFound'], 'a non-recipient gets 404');
    t.same((await carol.api.post(`/channels/${dmId}/messages`, { content: 'hi' })).status, 404);
    t.same((await carol.api.get(`/channels/${dmId}/messages`)).status, 404);

    const wsB = await connectReady(s, bob.token);
    t.teardown(() => wsB.close());
    const sent = await alice.api.post(`/channels/${dmId}/messages`, { content: `hello <@${bob.userId}>`, masquerade: { name: 'Al' }, embeds: [{ title: 'e' }] }, { headers: { 'Idempotency-Key': 'dm-1' } });
    t.equal(sent.status, 200);
    t.same([sent.body.channel, sent.body.mentions, sent.body.masquerade, sent.body.user.relationship], [dmId, [bob.userId], { name: 'Al' }, 'User']);
    t.notOk('member' in sent.body, 'no member object in a DM');
    t.same((await alice.api.post(`/channels/${dmId}/messages`, { content: 'again' }, { headers: { 'Idempotency-Key': 'dm-1' } })).status, 409, 'idempotency');
    await wsB.waitFor((e) => e.type === 'Message' && e._id === sent.body._id);
    const reply = await bob.api.post(`/channels/${dmId}/messages`, { content: 'yo', replies: [{ id: sent.body._id, mention: true }] });
    t.same(reply.body.mentions, [alice.userId], 'a reply mention');
    t.equal((await bob.api.put(`/channels/${dmId}/messages/${sent.body._id}/reactions/%F0%9F%91%8D`)).status, 204, 'react');
    // Any existing custom emoji works in a DM (it has no emoji of its own); an unknown one is 404.
    const emojiServer = await createServer(alice, 'emoji home');
    const custom = await createEmoji(s, alice, emojiServer.id, 'party');
    t.equal((await bob.api.put(`/channels/${dmId}/messages/${sent.body._id}/reactions/${custom._id}`)).status, 204, 'a custom emoji from a server bob is not in');
    t.same((await bob.api.put(`/channels/${dmId}/messages/${sent.body._id}/reactions/${newId()}`)).body.type, 'NotFound', 'an unknown custom emoji: 404');
    t.equal((await alice.api.patch(`/channels/${dmId}/messages/${sent.body._id}`, { content: 'edited' })).status, 200, 'edit');
    const pin = await bob.api.post(`/channels/${dmId}/messages/${sent.body._id}/pin`);
    t.same([pin.status, pin.body.permission], [403, 'ManageMessages'], 'ManageMessages is not a DM bit (as in Stoat)');
    await wsB.waitFor((e) => e.type === 'MessageReact' && e.id === sent.body._id);
    await wsB.waitFor((e) => e.type === 'MessageUpdate' && e.id === sent.body._id && e.data.content === 'edited');
    const history = await bob.api.get(`/channels/${dmId}/messages?include_users=true`);
    t.same([history.status, history.body.members], [200, []]);
    t.same(history.body.users.find((u: Frame) => u._id === alice.userId)?.relationship, 'Friend', 'include_users: relationship per viewer');
    t.equal((await bob.api.del(`/channels/${dmId}/messages/${reply.body._id}`)).status, 204, 'delete own');
    t.equal((await bob.api.get(`/channels/${dmId}`)).body.last_message_id !== undefined, true, 'last_message_id kept');

    wsB.send({ type: 'BeginTyping', channel: dmId });
    const wsA = await connectReady(s, alice.token);
    t.teardown(() => wsA.close());
    const from = wsA.events.length;
    wsB.send({ type: 'BeginTyping', channel: dmId });
    const typing = await wsA.waitFor((e) => e.type === 'ChannelStartTyping', 20_000, from);
    t.same([typing.id, typing.user], [dmId, bob.userId], 'typing reaches the other recipient');

    // Close: active false for both; a message reopens it.
    t.equal((await alice.api.del(`/channels/${dmId}`)).status, 204);
    await wsB.waitFor((e) => e.type === 'ChannelUpdate' && e.id === dmId && e.data.active === false);
    t.equal((await bob.api.get(`/channels/${dmId}`)).body.active, false);
    t.ok((await alice.api.get('/users/dms')).body.some((c: Frame) => c._id === dmId), 'a closed DM is still listed');
    await bob.api.post(`/channels/${dmId}/messages`, { content: 'back' });
    t.equal((await alice.api.get(`/channels/${dmId}`)).body.active, true, 'a message reopens it');
    await wsB.waitFor((e) => e.type === 'ChannelUpdate' && e.id === dmId && e.data.active === true);

    // Unfriended: the DM stays readable and becomes read-only.
    await befriend(alice, carol);
    const dmC = (await carol.api.get(`/users/${alice.userId}/dm`)).body._id as string;
    await carol.api.del(`/users/${alice.userId}/friend`);
    const ro = await carol.api.post(`/channels/${dmC}/messages`, { content: 'x' });
    t.same([ro.status, ro.body.type, ro.body.permission], [403, 'MissingPermission', 'SendMessage'], 'no longer friends: read only');
    t.equal((await carol.api.get(`/channels/${dmC}/messages`)).status, 200, 'history still readable');
    await carol.api.put(`/users/${alice.userId}/block`);
    t.same((await alice.api.post(`/channels/${dmC}/messages`, { content: 'x' })).body.type, 'MissingPermission', 'blocked: read only');
    await carol.api.del(`/users/${alice.userId}/block`);
  });

  t.test('Saved Notes: the self-DM, nobody else', async (t) => {
    const r = await dave.api.get(`/users/${dave.userId}/dm`);
    t.same([r.status, r.body.channel_type, r.body.user], [200, 'SavedMessages', dave.userId]);
    t.same((await dave.api.get('/users/@me/dm')).body._id, r.body._id, '@me: the same channel');
    const m = await dave.api.post(`/channels/${r.body._id}/messages`, { content: 'note to self' });
    t.equal(m.status, 200);
    t.equal((await dave.api.post(`/channels/${r.body._id}/messages/${m.body._id}/pin`)).status, 204, 'everything allowed');
    t.equal((await erin.api.get(`/channels/${r.body._id}`)).status, 404);
    t.equal((await erin.api.get(`/channels/${r.body._id}/messages`)).status, 404);
    const del = await dave.api.del(`/channels/${r.body._id}`);
    t.same([del.status, del.body.type], [400, 'NoEffect'], 'Saved Notes cannot be closed');
    t.ok((await dave.api.get('/users/dms')).body.some((c: Frame) => c._id === r.body._id));
  });

  t.test('groups: create, friends only, size limit, add, remove, leave, edit, permissions, events', async (t) => {
    await befriend(alice, dave);
    await befriend(alice, erin);
    await befriend(alice, frank);
    const notFriend = await alice.api.post('/channels/create', { name: 'g', users: [gina.userId] });
    t.same([notFriend.status, notFriend.body.type], [403, 'NotFriends']);
    const tooBig = await alice.api.post('/channels/create', { name: 'g', users: [bob.userId, dave.userId, erin.userId, frank.userId] });
    t.same([tooBig.status, tooBig.body], [403, { type: 'GroupTooLarge', max: GROUP, location: '/channels/create' }], 'owner + 4 > 4');
    for (const body of [{ name: '' }, { name: 'x'.repeat(33) }, { name: 'g', users: [bob.userId, bob.userId] }, { name: 'g', colour: 1 }, {}]) {
      t.same((await alice.api.post('/channels/create', body)).body.type, 'FailedValidation', JSON.stringify(body));
    }
    const wsB = await connectReady(s, bob.token);
    const wsD = await connectReady(s, dave.token);
    const wsE = await connectReady(s, erin.token);
    t.teardown(() => (wsB.close(), wsD.close(), wsE.close()));
    const g = await alice.api.post('/channels/create', { name: 'Group', description: 'd', users: [bob.userId, dave.userId] });
    t.same([g.status, g.body.channel_type, g.body.owner, g.body.recipients], [200, 'Group', alice.userId, [alice.userId, bob.userId, dave.userId]], 'owner + 2 ≤ 4');
    const id = g.body._id as string;
    await wsB.waitFor((e) => e.type === 'ChannelCreate' && e._id === id);
    const members = await bob.api.get(`/channels/${id}/members`);
    t.same(members.body.map((u: Frame) => u._id).sort(), [alice.userId, bob.userId, dave.userId].sort());
    t.same(members.body.find((u: Frame) => u._id === dave.userId).relationship, 'None', 'members carry relationship per viewer');
    t.same((await bob.api.get(`/channels/${dmId}/members`)).body.type, 'InvalidOperation', 'members of a DM');
    t.equal((await erin.api.get(`/channels/${id}`)).status, 404, 'a non-member');

    // Adding: InviteOthers (members have it by default), friends of the adder, the limit.
    t.same((await bob.api.put(`/channels/${id}/recipients/${erin.userId}`)).body.type, 'NotFriends', "erin is not bob's friend");
    t.equal((await alice.api.put(`/channels/${id}/recipients/${erin.userId}`)).status, 204, 'the 4th member');
    const join = await wsD.waitFor((e) => e.type === 'ChannelGroupJoin' && e.id === id);
    t.equal(join.user, erin.userId);
    const created = await wsE.waitFor((e) => e.type === 'ChannelCreate' && e._id === id);
    t.equal(created.recipients.length, 4, 'the new member gets the channel');
    t.same((await alice.api.put(`/channels/${id}/recipients/${frank.userId}`)).body, { type: 'GroupTooLarge', max: GROUP, location: '/channels/:channel_id/recipients/:user_id' }, 'a 5th: refused');
    t.same((await alice.api.put(`/channels/${id}/recipients/${erin.userId}`)).body.type, 'AlreadyInGroup');
    const sys = (await alice.api.get(`/channels/${id}/messages?limit=1`)).body[0];
    t.same(sys.system, { type: 'user_added', id: erin.userId, by: alice.userId }, 'system message');

    // Removing: the owner only.
    const notOwner = await bob.api.del(`/channels/${id}/recipients/${erin.userId}`);
    t.same([notOwner.status, notOwner.body.type, notOwner.body.permission], [403, 'MissingPermission', 'ManageChannel']);
    t.same((await bob.api.del(`/channels/${id}/recipients/01HZZZZZZZZZZZZZZZZZZZZZZZ`)).body.permission, 'ManageChannel', 'the owner check comes before the lookup');
    t.same((await alice.api.del(`/channels/${id}/recipients/not-an-id`)).status, 404, 'a malformed user id');
    t.same((await alice.api.del(`/channels/${id}/recipients/${alice.userId}`)).body.type, 'CannotRemoveYourself');
    t.same((await alice.api.del(`/channels/${id}/recipients/${frank.userId}`)).body.type, 'NotInGroup');
    t.equal((await alice.api.del(`/channels/${id}/recipients/${erin.userId}`)).status, 204);
    const leave = await wsE.waitFor((e) => e.type === 'ChannelGroupLeave' && e.id === id);
    t.equal(leave.user, erin.userId, 'the removed member hears it');
    t.equal((await erin.api.get(`/channels/${id}/messages`)).status, 404, 'and can read no more');

    // Messages in the group; default permissions; PATCH with system messages.
    t.equal((await dave.api.post(`/channels/${id}/messages`, { content: 'hi all' })).status, 200);
    const perms = await dave.api.put(`/channels/${id}/permissions/default`, { permissions: 0 });
    t.same([perms.status, perms.body.permission], [403, 'ManagePermissions'], 'members cannot');
    const setP = await alice.api.put(`/channels/${id}/permissions/default`, { permissions: 0 });
    t.same([setP.status, setP.body.permissions], [200, 0]);
    const muted = await dave.api.post(`/channels/${id}/messages`, { content: 'x' });
    t.same([muted.status, muted.body.permission], [403, 'SendMessage'], 'view only now');
    t.equal((await dave.api.get(`/channels/${id}/messages`)).status, 200, 'view only still reads');
    t.equal((await alice.api.post(`/channels/${id}/messages`, { content: 'owner' })).status, 200, 'the owner has everything');
    t.same((await alice.api.put(`/channels/${id}/permissions/default`, { permissions: { allow: 0, deny: 0 } })).body.type, 'InvalidOperation', 'the override form');
    t.same((await alice.api.put(`/channels/${id}/permissions/default`, { permissions: 1 << 14 })).body.type, 'FailedValidation', 'an undefined bit');
    const forbid = await dave.api.patch(`/channels/${id}`, { name: 'x' });
    t.same([forbid.status, forbid.body.permission], [403, 'ManageChannel']);
    await alice.api.put(`/channels/${id}/permissions/default`, { permissions: Number(DEFAULT_PERMISSION_DIRECT_MESSAGE) });
    const renamed = await dave.api.patch(`/channels/${id}`, { name: 'Renamed', description: 'new' });
    t.same([renamed.status, renamed.body.name, renamed.body.description], [200, 'Renamed', 'new']);
    const update = await wsB.waitFor((e) => e.type === 'ChannelUpdate' && e.id === id && e.data.name === 'Renamed');
    t.same(update.data, { name: 'Renamed', description: 'new' });
    const last2 = (await alice.api.get(`/channels/${id}/messages?limit=2`)).body.map((m: Frame) => m.system);
    t.same(last2, [{ type: 'channel_description_changed', by: dave.userId }, { type: 'channel_renamed', name: 'Renamed', by: dave.userId }]);
    t.same((await dave.api.patch(`/channels/${id}`, { owner: dave.userId })).body.type, 'NotOwner');
    t.same((await alice.api.patch(`/channels/${id}`, { owner: erin.userId })).body.type, 'NotInGroup');
    t.same((await alice.api.patch(`/channels/${id}`, { voice: {} })).body.type, 'InvalidOperation', 'voice is not a group field');
    const moved = await alice.api.patch(`/channels/${id}`, { owner: bob.userId });
    t.same([moved.status, moved.body.owner], [200, bob.userId], 'ownership transferred');
    t.same((await alice.api.get(`/channels/${id}/messages?limit=1`)).body[0].system, { type: 'channel_ownership_changed', from: alice.userId, to: bob.userId });

    // Leaving: the owner hands over; the last one deletes.
    t.equal((await bob.api.del(`/channels/${id}`)).status, 204, 'the owner leaves');
    t.same((await alice.api.get(`/channels/${id}`)).body.owner, alice.userId, 'the next recipient owns it');
    t.same((await alice.api.get(`/channels/${id}/messages?limit=2`)).body.map((m: Frame) => m.system), [
      { type: 'user_left', id: bob.userId },
      { type: 'channel_ownership_changed', from: bob.userId, to: alice.userId },
    ]);
    const latest = (await alice.api.get(`/channels/${id}/messages?limit=1`)).body[0]._id;
    t.equal((await dave.api.del(`/channels/${id}?leave_silently=true`)).status, 204);
    t.same((await alice.api.get(`/channels/${id}/messages?limit=1`)).body[0]._id, latest, 'silently: no user_left');
    t.same((await alice.api.get(`/channels/${id}/members`)).body.map((u: Frame) => u._id), [alice.userId], 'dave is gone');
    t.notOk((await dave.api.get('/users/dms')).body.some((c: Frame) => c._id === id), 'gone from the leaver\'s list');
    t.equal((await alice.api.del(`/channels/${id}`)).status, 204, 'the last member');
    t.equal((await alice.api.get(`/channels/${id}`)).status, 404, 'deleted');
  });

  t.test('mutual, Ready', async (t) => {
    const srv = await createServer(alice, 'Mutual');
    await join(alice, srv.general, gina);
    const m = await alice.api.get(`/users/${bob.userId}/mutual`);
    t.same(m.body, { users: [], servers: [], channels: [dmId] }, 'alice and bob: a DM');
    t.same((await alice.api.get(`/users/${gina.userId}/mutual`)).body, { users: [], servers: [srv.id], channels: [] });
    t.same((await alice.api.get(`/users/${alice.userId}/mutual`)).body.type, 'InvalidOperation');
    t.same((await hank.api.get(`/users/${gina.userId}/mutual`)).body, { type: 'MissingPermission', permission: 'ViewProfile', location: '/users/:user_id/mutual' }, 'no connection');
    await befriend(bob, dave);
    t.same((await alice.api.get(`/users/${bob.userId}/mutual`)).body.users, [dave.userId], 'a mutual friend');

    const ws = await connectReady(s, alice.token);
    t.teardown(() => ws.close());
    const ready = ws.frames.find((f) => f.type === 'Ready')!;
    const byId = new Map<string, Frame>(ready.users.map((u: Frame) => [u._id, u]));
    t.equal(byId.get(alice.userId)?.relationship, 'User');
    for (const u of [bob, dave, erin, frank]) t.equal(byId.get(u.userId)?.relationship, 'Friend', 'friends in Ready');
    t.ok(ready.channels.some((c: Frame) => c._id === dmId && c.channel_type === 'DirectMessage'), 'the DM in Ready');
    t.ok(byId.has(carol.userId), 'a DM recipient who is no friend is listed');
  });

  t.test('group invites through the invite routes', async (t) => {
    const g = (await alice.api.post('/channels/create', { name: 'Invited', users: [bob.userId] })).body;
    const inv = await bob.api.post(`/channels/${g._id}/invites`);
    t.same([inv.status, inv.body.type, inv.body.creator, inv.body.channel], [200, 'Group', bob.userId, g._id], 'a member creates one');
    t.same((await bob.api.post(`/channels/${dmId}/invites`)).body.type, 'InvalidOperation', 'not for a DM');
    t.equal((await hank.api.post(`/channels/${g._id}/invites`)).status, 404, 'a non-member');
    const info = await client(s).get(`/invites/${inv.body._id}`);
    t.same(info.body, { type: 'Group', code: inv.body._id, channel_id: g._id, channel_name: 'Invited', user_name: bob.username }, 'public info');
    const wsA = await connectReady(s, alice.token);
    t.teardown(() => wsA.close());
    const joined = await hank.api.post(`/invites/${inv.body._id}`);
    t.same([joined.status, joined.body.type, joined.body.channel._id, joined.body.users.length], [200, 'Group', g._id, 3], 'a stranger joins');
    t.equal((await wsA.waitFor((e) => e.type === 'ChannelGroupJoin' && e.id === g._id)).user, hank.userId);
    t.same((await alice.api.get(`/channels/${g._id}/messages?limit=1`)).body[0].system, { type: 'user_added', id: hank.userId, by: bob.userId });
    t.same((await hank.api.post(`/invites/${inv.body._id}`)).body.type, 'AlreadyInGroup');
    t.same((await alice.api.del(`/invites/${inv.body._id}`)).body.type, 'NotOwner', 'only its creator deletes it');
    t.equal((await bob.api.del(`/invites/${inv.body._id}`)).status, 204);
    t.equal((await client(s).get(`/invites/${inv.body._id}`)).status, 404, 'gone');
    const again = (await bob.api.post(`/channels/${g._id}/invites`)).body._id;
    for (const u of [hank, bob, alice]) await u.api.del(`/channels/${g._id}`);
    t.equal((await client(s).get(`/invites/${again}`)).status, 404, "a deleted group's invites go with it");
  });

  t.test('group icons: an icons upload on create and PATCH, removed with remove: [Icon]', async (t) => {
    const icon = await uploadImage(s, alice, 'icons');
    const g = await alice.api.post('/channels/create', { name: 'Iconic', icon });
    t.same([g.status, g.body.icon?._id, g.body.icon?.tag], [200, icon, 'icons']);
    t.same((await alice.api.post('/channels/create', { name: 'again', icon })).status, 404, 'an upload is used once');
    const next = await uploadImage(s, alice, 'icons');
    const p = await alice.api.patch(`/channels/${g.body._id}`, { icon: next });
    t.same([p.status, p.body.icon?._id], [200, next]);
    t.same((await alice.api.get(`/channels/${g.body._id}/messages?limit=1`)).body[0].system, { type: 'channel_icon_changed', by: alice.userId });
    const cleared = await alice.api.patch(`/channels/${g.body._id}`, { remove: ['Icon', 'Description'] });
    t.same([cleared.status, 'icon' in cleared.body], [200, false]);
    t.same((await alice.api.patch(`/channels/${g.body._id}`, { remove: ['DefaultPermissions'] })).body.type, 'InvalidOperation', 'a server-only field');
    await alice.api.del(`/channels/${g.body._id}`);
  });

  t.test('friends hear presence without a shared server; others do not', async (t) => {
    const [x, y, z] = await Promise.all([signup(s), signup(s), signup(s)]);
    await befriend(x, y);
    const wsX = await connectReady(s, x.token);
    const wsZ = await connectReady(s, z.token);
    t.teardown(() => (wsX.close(), wsZ.close()));
    const fromZ = wsZ.presence.length;
    const wsY = await connectReady(s, y.token);
    t.teardown(() => wsY.close());
    await wsX.waitForPresence((e) => e.id === y.userId && e.data.online === true);
    // z learns nothing of y: x's presence frames and z's own arrive, never one about y.
    const wsZ2 = await connectReady(s, z.token);
    t.teardown(() => wsZ2.close());
    t.notOk(wsZ.presence.slice(fromZ).some((e) => e.id === y.userId), 'a stranger hears nothing');
  });

  t.test('events state --at counts the private state', async (t) => {
    const now = (await s.store.headPosition())!;
    const st = await stateAt({ store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, position: now, log: createLogger('silent'), keep: false });
    const dms = (await Promise.all(users.map((u) => u.api.get('/users/dms')))).flatMap((r) => r.body as Frame[]);
    const unique = new Map(dms.map((c) => [c._id, c.channel_type]));
    t.equal(st.direct_messages, [...unique.values()].filter((c) => c === 'DirectMessage').length);
    t.equal(st.saved_notes, 1);
    t.equal(st.groups, 0, 'every group of this file was left');
    const friendships = (await Promise.all(users.map(async (u) => (await Promise.all(users.map((o) => u.api.get(`/users/${o.userId}`)))).filter((r) => r.body.relationship === 'Friend').length)));
    t.equal(st.friendships, friendships.reduce((a, b) => a + b, 0) / 2 + 1, 'the pairs among these users, and x–y of the presence test');
  });

  t.test('rebuild equals live', async (t) => {
    const live = await dumpCurrent(s.redis, s.prefix);
    t.same(await dumpRebuild(t, s.redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions }), live);
  });
});
