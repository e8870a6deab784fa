/**
 * Voice presence from LiveKit webhooks: signature verification (webhooks signed with the SDK as LiveKit signs
 * them: a JWT of the API key whose sha256 claim is the body's hash), join/leave/move and track state as
 * event-sourced voice events, Stoat's client events to the sockets that see the channel, Ready's
 * `voice_states`, and removal from the room through LiveKit's server API (a loopback HTTP server recording the
 * RoomService calls) when a participant loses Connect.
 */
import http from 'node:http';
import t from 'tap';
import { TokenVerifier } from 'livekit-server-sdk';
import { Permission as P } from '../src/permissions/bits.ts';
import { newId } from '../src/ids.ts';
import { request, signup, type TestUser } from './helpers/http.ts';
import { createServer, dumpCurrent, dumpRebuild, join } from './helpers/servers.ts';
import { startTestService, type TestService } from './helpers/service.ts';
import { joined, left, livekitWebhook, track } from './helpers/livekit.ts';
import { connectReady } from './helpers/ws.ts';
import { until } from './helpers/wait.ts';

const KEY = 'presence-test-key';
const SECRET = 'presence-test-secret-0123456789abcdef';

/**
 * A loopback stand-in for LiveKit's server API: records every RoomService call and answers `{}`, or the Twirp
 * error `fail` returns for it (`{status, code}`).
 */
async function fakeLiveKit(t: { teardown(fn: () => unknown): void }) {
  const calls: Array<{ method: string; body: any; auth: string }> = [];
  const lk = { url: '', calls, fail: (_method: string, _body: any): { status: number; code: string } | null => null };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const call = { method: (req.url ?? '').split('/').pop()!, body: body ? JSON.parse(body) : null, auth: String(req.headers.authorization ?? '') };
      calls.push(call);
      const failure = lk.fail(call.method, call.body);
      res.writeHead(failure?.status ?? 200, { 'Content-Type': 'application/json' });
      res.end(failure ? JSON.stringify({ code: failure.code, msg: failure.code.replace('_', ' ') }) : '{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  lk.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return lk;
}

/** Posts a webhook signed with this file's key (or with `o.secret`, `o.tamper`, no signature). */
function webhook(s: TestService, event: Record<string, unknown>, o: { secret?: string; unsigned?: boolean; tamper?: boolean } = {}) {
  return livekitWebhook(s, { key: KEY, secret: o.secret ?? SECRET }, event, o);
}

/** `a` asks `b` to be friends and `b` accepts. */
async function befriend(t: { equal(actual: unknown, expected: unknown): unknown }, a: TestUser, b: TestUser): Promise<void> {
  t.equal((await a.api.put(`/users/${b.userId}/friend`)).status, 200);
  t.equal((await b.api.put(`/users/${a.userId}/friend`)).body.relationship, 'Friend');
}

async function voiceChannel(owner: TestUser, serverId: string, name = 'Voice'): Promise<string> {
  const r = await owner.api.post(`/servers/${serverId}/channels`, { type: 'Voice', name });
  if (r.status !== 200) throw new Error(`voice channel ${r.status} ${r.text}`);
  return r.body._id as string;
}

t.test('voice presence', async (t) => {
  const lk = await fakeLiveKit(t);
  const s = await startTestService(t, { RATE_LIMITS: 'off', VOICE_ENABLED: 'true', LIVEKIT_URL: lk.url, LIVEKIT_API_KEY: KEY, LIVEKIT_API_SECRET: SECRET });
  const [owner, alice, bob] = await Promise.all([signup(s), signup(s), signup(s)]);
  const srv = await createServer(owner);
  await join(owner, srv.general, alice, bob);
  const vc = await voiceChannel(owner, srv.id);
  const hidden = await voiceChannel(owner, srv.id, 'Staff');
  // `hidden` is invisible to everyone but the owner.
  await owner.api.put(`/channels/${hidden}/permissions/default`, { permissions: { allow: 0, deny: Number(P.ViewChannel) } });

  t.test('unsigned, forged and tampered webhooks are refused with JSON errors', async (t) => {
    t.match(await webhook(s, joined(vc, alice.userId), { unsigned: true }), { status: 401, body: { type: 'NotAuthenticated' } });
    t.match(await webhook(s, joined(vc, alice.userId), { secret: 'another-secret-0123456789abcdefghijk' }), { status: 401, body: { type: 'InvalidCredentials' } });
    t.match(await webhook(s, joined(vc, alice.userId), { tamper: true }), { status: 401, body: { type: 'InvalidCredentials' } });
    const garbage = await request(s.apiUrl, 'POST', '/livekit/webhook', { rawBody: 'not json', contentType: 'application/webhook+json', headers: { Authorization: 'x' }, skipOpenApi: true });
    t.equal(garbage.status, 401, 'a body that is not what the signature covers: 401');
    t.equal(typeof garbage.body.type, 'string');
    t.equal(await s.readModels.getJson(`voice:${srv.id}`), null, 'nothing was recorded');
  });

  t.test('join, track changes, deafen and leave reach those who see the channel', async (t) => {
    const ownerWs = await connectReady(s, owner.token);
    const bobWs = await connectReady(s, bob.token);
    t.teardown(() => (ownerWs.close(), bobWs.close()));
    t.match(await webhook(s, joined(vc, alice.userId)), { status: 200, body: {} });
    const state = { id: alice.userId, joined_at: 1_700_000_000_000, is_receiving: true, is_publishing: false, screensharing: false, camera: false };
    t.same(await bobWs.waitFor((e) => e.type === 'VoiceChannelJoin'), { type: 'VoiceChannelJoin', id: vc, state });
    t.equal((await webhook(s, joined(vc, alice.userId))).status, 200, 'a repeated webhook');

    await webhook(s, track('track_published', vc, alice.userId, 'MICROPHONE'));
    t.same(await bobWs.waitFor((e) => e.type === 'UserVoiceStateUpdate'), { type: 'UserVoiceStateUpdate', id: alice.userId, channel_id: vc, data: { is_publishing: true } });
    await webhook(s, track('track_published', vc, alice.userId, 'MICROPHONE')); // no change: no event
    await webhook(s, track('track_published', vc, alice.userId, 'CAMERA'));
    await webhook(s, track('track_published', vc, alice.userId, 'SCREEN_SHARE'));
    await webhook(s, track('track_muted', vc, alice.userId, 'MICROPHONE'));
    const updates = async (n: number) => until(`${n} updates`, () => (bobWs.events.filter((e) => e.type === 'UserVoiceStateUpdate').length >= n ? bobWs.events.filter((e) => e.type === 'UserVoiceStateUpdate') : null));
    t.same((await updates(4)).map((e) => e.data), [{ is_publishing: true }, { camera: true }, { screensharing: true }, { is_publishing: false }], 'one event per change, in order');

    // Server deafen (can_receive) switches is_receiving.
    t.equal((await owner.api.patch(`/servers/${srv.id}/members/${alice.userId}`, { can_receive: false })).status, 200);
    t.same((await updates(5))[4]!.data, { is_receiving: false });

    // Ready of a new socket lists the channel's participants.
    const late = await connectReady(s, bob.token);
    t.same(late.frames[1]!.voice_states, [{ id: vc, participants: [{ ...state, is_publishing: false, camera: true, screensharing: true, is_receiving: false }] }]);
    late.close();

    // In the hidden channel: the owner hears of it, bob does not (Ready included).
    await webhook(s, joined(hidden, owner.userId));
    await ownerWs.waitFor((e) => e.type === 'VoiceChannelJoin' && e.id === hidden);
    await webhook(s, left(hidden, owner.userId));
    await ownerWs.waitFor((e) => e.type === 'VoiceChannelLeave' && e.id === hidden);
    t.notOk(bobWs.events.some((e) => String(e.type).startsWith('Voice') && e.id === hidden), 'bob never hears of the hidden channel');

    await webhook(s, left(vc, alice.userId));
    t.same(await bobWs.waitFor((e) => e.type === 'VoiceChannelLeave'), { type: 'VoiceChannelLeave', id: vc, user: alice.userId });
    const after = await connectReady(s, bob.token);
    t.same(after.frames[1]!.voice_states, []);
    after.close();
    await owner.api.patch(`/servers/${srv.id}/members/${alice.userId}`, { can_receive: true });
  });

  t.test('joining another channel of the server is a move; the old room\'s late leave changes nothing', async (t) => {
    const vc2 = await voiceChannel(owner, srv.id, 'Second');
    const ws = await connectReady(s, bob.token);
    t.teardown(() => ws.close());
    await webhook(s, joined(vc, alice.userId));
    await ws.waitFor((e) => e.type === 'VoiceChannelJoin');
    await webhook(s, joined(vc2, alice.userId));
    t.match(await ws.waitFor((e) => e.type === 'VoiceChannelMove'), { user: alice.userId, from: vc, to: vc2, state: { id: alice.userId } });
    await webhook(s, left(vc, alice.userId));
    const r = await connectReady(s, bob.token);
    t.same(r.frames[1]!.voice_states.map((c: any) => [c.id, c.participants.map((p: any) => p.id)]), [[vc2, [alice.userId]]], 'still in the second channel');
    r.close();
    await webhook(s, left(vc2, alice.userId));
    await ws.waitFor((e) => e.type === 'VoiceChannelLeave' && e.id === vc2);
  });

  t.test('webhooks about rooms that are not voice channels of this service are ignored', async (t) => {
    t.match(await webhook(s, joined('not-a-channel', alice.userId)), { status: 200, body: {} });
    t.match(await webhook(s, joined(srv.general, alice.userId)), { status: 200, body: {} }, 'a text channel');
    t.match(await webhook(s, joined(newId(), alice.userId)), { status: 200, body: {} });
    t.match(await webhook(s, { event: 'room_started', room: { sid: 'RM_1', name: vc } }), { status: 200, body: {} });
    const st = await s.readModels.getJson<any>(`voice:${srv.id}`);
    t.same(st.participants, {});
  });

  t.test('losing Connect removes the participant from the room through LiveKit', async (t) => {
    await webhook(s, joined(vc, alice.userId));
    await webhook(s, joined(vc, bob.userId));
    await until('both in', async () => Object.keys((await s.readModels.getJson<any>(`voice:${srv.id}`))?.participants ?? {}).length === 2);
    const before = lk.calls.length;
    // A channel override takes Connect from everyone but the owner's GrantAllSafe: both are removed.
    await owner.api.put(`/channels/${vc}/permissions/default`, { permissions: { allow: 0, deny: Number(P.Connect) } });
    await until('RemoveParticipant called twice', () => lk.calls.length >= before + 2);
    const removed = lk.calls.slice(before).filter((c) => c.method === 'RemoveParticipant').map((c) => c.body.identity).sort();
    t.same(removed, [alice.userId, bob.userId].sort());
    t.ok(lk.calls.slice(before).every((c) => c.body.room === vc));
    // The server API call is authenticated with a roomAdmin token of our key.
    const grants = await new TokenVerifier(KEY, SECRET).verify(lk.calls[before]!.auth.replace(/^Bearer /, ''));
    t.match(grants.video, { roomAdmin: true, room: vc });
    // LiveKit then reports the leaves.
    await webhook(s, left(vc, alice.userId));
    await webhook(s, left(vc, bob.userId));
    await owner.api.put(`/channels/${vc}/permissions/default`, { permissions: { allow: 0, deny: 0 } });

    // A kick removes too; a change that keeps Connect removes nobody.
    await webhook(s, joined(vc, bob.userId));
    await webhook(s, joined(vc, alice.userId));
    const mark = lk.calls.length;
    await owner.api.patch(`/servers/${srv.id}`, { description: 'no permission change' });
    await owner.api.patch(`/servers/${srv.id}/members/${alice.userId}`, { nickname: 'still here' });
    t.equal((await owner.api.del(`/servers/${srv.id}/members/${bob.userId}`)).status, 204);
    await until('bob removed', () => lk.calls.slice(mark).some((c) => c.method === 'RemoveParticipant' && c.body.identity === bob.userId));
    t.same(lk.calls.slice(mark).filter((c) => c.method === 'RemoveParticipant').map((c) => c.body.identity), [bob.userId], 'only the kicked member');
    await webhook(s, left(vc, bob.userId));
    await webhook(s, left(vc, alice.userId));
    await join(owner, srv.general, bob);
  });

  t.test('other permission changes reach a live call: UpdateParticipant with what the member may now do', async (t) => {
    await webhook(s, joined(vc, alice.userId));
    await webhook(s, joined(vc, bob.userId));
    await until('both in', async () => Object.keys((await s.readModels.getJson<any>(`voice:${srv.id}`))?.participants ?? {}).length === 2);
    const updatesOf = (from: number, user: string) => lk.calls.slice(from).filter((c) => c.method === 'UpdateParticipant' && c.body.identity === user);
    // Proto3 JSON leaves out false and empty fields.
    const perm = (c: any) => ({ sub: c.body.permission.canSubscribe ?? false, pub: c.body.permission.canPublish ?? false, data: c.body.permission.canPublishData ?? false, sources: [...(c.body.permission.canPublishSources ?? [])].sort() });

    // Server mute (can_publish false): alice may publish nothing, data included; she still hears.
    let mark = lk.calls.length;
    t.equal((await owner.api.patch(`/servers/${srv.id}/members/${alice.userId}`, { can_publish: false })).status, 200);
    await until('alice updated', () => updatesOf(mark, alice.userId).length > 0);
    t.same(perm(updatesOf(mark, alice.userId).at(-1)), { sub: true, pub: false, data: false, sources: [] });
    t.equal(updatesOf(mark, alice.userId).at(-1)!.body.room, vc);
    t.same(updatesOf(mark, bob.userId), [], 'a member edit concerns that member only');
    t.notOk(lk.calls.slice(mark).some((c) => c.method === 'RemoveParticipant'), 'she keeps Connect');

    // Losing Video in the channel: both may publish only their microphone.
    mark = lk.calls.length;
    t.equal((await owner.api.patch(`/servers/${srv.id}/members/${alice.userId}`, { remove: ['CanPublish'] })).status, 200);
    await until('alice unmuted', () => updatesOf(mark, alice.userId).length > 0);
    t.same(perm(updatesOf(mark, alice.userId).at(-1)), { sub: true, pub: true, data: true, sources: ['CAMERA', 'MICROPHONE', 'SCREEN_SHARE', 'SCREEN_SHARE_AUDIO'] });
    mark = lk.calls.length;
    await owner.api.put(`/channels/${vc}/permissions/default`, { permissions: { allow: 0, deny: Number(P.Video) } });
    await until('both updated', () => updatesOf(mark, alice.userId).length > 0 && updatesOf(mark, bob.userId).length > 0);
    for (const u of [alice, bob]) t.same(perm(updatesOf(mark, u.userId).at(-1)), { sub: true, pub: true, data: true, sources: ['MICROPHONE'] });

    // A change that leaves their rights as they were calls nothing: a nickname, or the same override again.
    mark = lk.calls.length;
    await owner.api.patch(`/servers/${srv.id}/members/${alice.userId}`, { nickname: 'loud' });
    await owner.api.put(`/channels/${vc}/permissions/default`, { permissions: { allow: 0, deny: Number(P.Video) } });
    // ...then a real change for bob only (Speak denied through a role): bob's update comes, alice's does not.
    const quiet = await owner.api.post(`/servers/${srv.id}/roles`, { name: 'quiet' });
    await owner.api.put(`/servers/${srv.id}/permissions/${quiet.body.id}`, { permissions: { allow: 0, deny: Number(P.Speak) } });
    await owner.api.patch(`/servers/${srv.id}/members/${bob.userId}`, { roles: [quiet.body.id] });
    await until('bob muted by the role', () => updatesOf(mark, bob.userId).some((c) => perm(c).sources.length === 0));
    t.same(perm(updatesOf(mark, bob.userId).at(-1)), { sub: true, pub: false, data: false, sources: [] });
    t.same(updatesOf(mark, alice.userId), [], 'nothing for alice: her rights did not change');

    // A deleted voice channel's room is closed.
    const doomed = await voiceChannel(owner, srv.id, 'Doomed');
    await webhook(s, joined(doomed, alice.userId));
    mark = lk.calls.length;
    t.equal((await owner.api.del(`/channels/${doomed}`)).status, 204);
    await until('room deleted', () => lk.calls.slice(mark).some((c) => c.method === 'DeleteRoom' && c.body.room === doomed));

    await owner.api.put(`/channels/${vc}/permissions/default`, { permissions: { allow: 0, deny: 0 } });
    await owner.api.patch(`/servers/${srv.id}/members/${bob.userId}`, { remove: ['Roles'] });
    await webhook(s, left(vc, bob.userId));
    await webhook(s, left(vc, alice.userId));
  });

  t.test('moving a member between calls (voice_channel): MoveMembers, through LiveKit MoveParticipant', async (t) => {
    const vc3 = await voiceChannel(owner, srv.id, 'Third');
    const S = `/servers/${srv.id}/members`;
    await webhook(s, joined(vc, alice.userId));
    await until('alice in', async () => (await s.readModels.getJson<any>(`voice:${srv.id}`))?.participants?.[alice.userId]?.channel === vc);
    const moves = (from: number) => lk.calls.slice(from).filter((c) => c.method === 'MoveParticipant');
    const mark = lk.calls.length;

    // Authorization and bad input first: nothing reaches LiveKit.
    t.match(await bob.api.patch(`${S}/${alice.userId}`, { voice_channel: vc3 }), { status: 403, body: { type: 'MissingPermission', permission: 'MoveMembers' } });
    t.match(await alice.api.patch(`${S}/${alice.userId}`, { voice_channel: vc3 }), { status: 403, body: { type: 'MissingPermission', permission: 'MoveMembers' } }, 'moving oneself needs it too');
    t.match(await owner.api.patch(`${S}/${alice.userId}`, { voice_channel: 42 }), { status: 400, body: { type: 'FailedValidation' } });
    t.match(await owner.api.patch(`${S}/${alice.userId}`, { voice_channel: newId() }), { status: 404, body: { type: 'UnknownChannel' } });
    t.match(await owner.api.patch(`${S}/${alice.userId}`, { voice_channel: srv.general }), { status: 400, body: { type: 'NotAVoiceChannel' } });
    t.match(await owner.api.patch(`${S}/${bob.userId}`, { voice_channel: vc3 }), { status: 400, body: { type: 'NotConnected' } }, 'bob is in no call');
    t.match(await owner.api.patch(`${S}/${newId()}`, { voice_channel: vc3 }), { status: 404, body: { type: 'NotFound' } });
    const elsewhere = await createServer(bob, 'Elsewhere');
    const foreign = await voiceChannel(bob, elsewhere.id, 'Foreign');
    t.match(await owner.api.patch(`${S}/${alice.userId}`, { voice_channel: foreign }), { status: 404, body: { type: 'UnknownChannel' } }, "another server's channel");
    t.match(await owner.api.patch(`${S}/${alice.userId}`, { voice_channel: hidden, nickname: 'x'.repeat(33) }), { status: 400, body: { type: 'FailedValidation' } });
    // The destination must let the member Connect.
    t.match(await owner.api.patch(`${S}/${alice.userId}`, { voice_channel: hidden }), { status: 403, body: { type: 'MissingPermission', permission: 'Connect' } });
    t.same(moves(mark), [], 'no refused move reached LiveKit');

    // A member with MoveMembers who ranks above the target moves them; one who does not rank above cannot.
    const movers = await owner.api.post(`/servers/${srv.id}/roles`, { name: 'movers' });
    await owner.api.put(`/servers/${srv.id}/permissions/${movers.body.id}`, { permissions: { allow: Number(P.MoveMembers | P.ManageNicknames), deny: 0 } });
    await owner.api.patch(`${S}/${bob.userId}`, { roles: [movers.body.id] });
    await owner.api.patch(`${S}/${alice.userId}`, { roles: [movers.body.id] });
    t.match(await bob.api.patch(`${S}/${alice.userId}`, { voice_channel: vc3 }), { status: 403, body: { type: 'NotElevated' } }, 'same rank');
    await owner.api.patch(`${S}/${alice.userId}`, { remove: ['Roles'] });
    const aliceWs = await connectReady(s, alice.token);
    const bobWs = await connectReady(s, bob.token);
    t.teardown(() => (aliceWs.close(), bobWs.close()));
    t.notOk(aliceWs.events.some((e) => e.type === 'UserMoveVoiceChannel'), 'no refused move told the member anything');
    const moved = await bob.api.patch(`${S}/${alice.userId}`, { voice_channel: vc3, nickname: 'moved' });
    t.equal(moved.status, 200, moved.text);
    // Stoat's member_edit.rs: the moved member's client gets the rooms, the node and a token for the new room.
    const told = await aliceWs.waitFor((e) => e.type === 'UserMoveVoiceChannel');
    t.same({ ...told, token: undefined }, { type: 'UserMoveVoiceChannel', node: 'default', from: vc, to: vc3, token: undefined });
    const moveClaims = await new TokenVerifier(KEY, SECRET).verify(told.token);
    t.equal(moveClaims.video?.room, vc3, 'a token for the new room');
    t.equal(moveClaims.sub, alice.userId, 'for the moved member');
    t.match(moveClaims.video, { roomJoin: true, canSubscribe: true });
    await bobWs.waitFor((e) => e.type === 'ServerMemberUpdate' && e.data?.nickname === 'moved');
    t.notOk(bobWs.events.some((e) => e.type === 'UserMoveVoiceChannel'), 'nobody else is told');
    t.equal(moved.body.nickname, 'moved', 'with the rest of the edit');
    t.same(moves(mark).map((c) => [c.body.room, c.body.identity, c.body.destinationRoom]), [[vc, alice.userId, vc3]]);
    // LiveKit reports the move as a join of the new room and a leave of the old: presence follows.
    await webhook(s, joined(vc3, alice.userId));
    await webhook(s, left(vc, alice.userId));
    await until('alice in the third channel', async () => (await s.readModels.getJson<any>(`voice:${srv.id}`))?.participants?.[alice.userId]?.channel === vc3);
    t.equal((await bob.api.patch(`${S}/${alice.userId}`, { voice_channel: vc3 })).status, 200, 'already there: nothing to do');
    t.equal(moves(mark).length, 1);

    // LiveKit answering not_found (she left meanwhile) → NotConnected, and the edit is not applied.
    lk.fail = (method) => (method === 'MoveParticipant' ? { status: 404, code: 'not_found' } : null);
    t.match(await bob.api.patch(`${S}/${alice.userId}`, { voice_channel: vc, nickname: 'not applied' }), { status: 400, body: { type: 'NotConnected' } });
    lk.fail = (method) => (method === 'MoveParticipant' ? { status: 400, code: 'invalid_argument' } : null);
    t.match(await bob.api.patch(`${S}/${alice.userId}`, { voice_channel: vc }), { status: 400, body: { type: 'LiveKitUnavailable' } });
    lk.fail = () => null;
    t.equal((await owner.api.get(`${S}/${alice.userId}`)).body.nickname, 'moved', 'a failed move applied nothing');
    await webhook(s, left(vc3, alice.userId));
    await owner.api.patch(`${S}/${bob.userId}`, { remove: ['Roles'] });
  });

  t.test('calls in DMs and groups: join_call, presence to the recipients, Ready, refusals', async (t) => {
    const [carol, dave, stranger] = await Promise.all([signup(s), signup(s), signup(s)]);
    await befriend(t, alice, bob);
    await befriend(t, alice, carol);
    await befriend(t, alice, dave);
    const dm = (await alice.api.get(`/users/${bob.userId}/dm`)).body._id as string;
    const group = (await alice.api.post('/channels/create', { name: 'Call group', users: [bob.userId, carol.userId] })).body._id as string;
    const notes = (await alice.api.get('/users/@me/dm')).body._id as string;
    const daveDm = (await alice.api.get(`/users/${dave.userId}/dm`)).body._id as string;
    const verifier = new TokenVerifier(KEY, SECRET);

    // join_call: a token for the DM's and the group's room, no room cap.
    const dmJoin = await alice.api.post(`/channels/${dm}/join_call`, { recipients: [bob.userId] });
    t.equal(dmJoin.status, 200, dmJoin.text);
    const claims = await verifier.verify(dmJoin.body.token);
    t.equal(claims.video?.room, dm, 'room = the DM');
    t.equal(claims.sub, alice.userId);
    t.match(claims.video, { roomJoin: true, canPublish: true, canSubscribe: true });
    t.notOk('roomConfig' in claims, 'no max_users');
    // A ring list of 100 ids is taken, 101 refused as a JSON error.
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `01K${String(i).padStart(23, '0')}`);
    t.equal((await alice.api.post(`/channels/${dm}/join_call`, { recipients: ids(100) })).status, 200, '100 recipients');
    t.match(await alice.api.post(`/channels/${dm}/join_call`, { recipients: ids(101) }), { status: 400, body: { type: 'FailedValidation' } }, '101 recipients');
    const groupJoin = await carol.api.post(`/channels/${group}/join_call`, {});
    t.equal(groupJoin.status, 200, 'a group member');
    t.equal((await verifier.verify(groupJoin.body.token)).video?.room, group);
    // Refusals: Saved Notes is no voice channel; someone else's DM is not found; a DM whose other side is no
    // longer a friend is view only (no Connect), as a DM without friendship is for messages.
    t.match(await alice.api.post(`/channels/${notes}/join_call`, {}), { status: 400, body: { type: 'NotAVoiceChannel' } });
    t.match(await stranger.api.post(`/channels/${dm}/join_call`, {}), { status: 404, body: { type: 'NotFound' } });
    t.equal((await dave.api.del(`/users/${alice.userId}/friend`)).status, 200);
    t.match(await alice.api.post(`/channels/${daveDm}/join_call`, {}), { status: 403, body: { type: 'MissingPermission', permission: 'Connect' } });

    // Presence: the recipients hear of it, nobody else; Ready lists it; a leave ends it.
    const bobWs = await connectReady(s, bob.token);
    const strangerWs = await connectReady(s, stranger.token);
    const ownerWs = await connectReady(s, owner.token);
    t.teardown(() => (bobWs.close(), strangerWs.close(), ownerWs.close()));
    t.match(await webhook(s, joined(dm, alice.userId)), { status: 200, body: {} });
    const state = { id: alice.userId, joined_at: 1_700_000_000_000, is_receiving: true, is_publishing: false, screensharing: false, camera: false };
    t.same(await bobWs.waitFor((e) => e.type === 'VoiceChannelJoin' && e.id === dm), { type: 'VoiceChannelJoin', id: dm, state });
    await webhook(s, track('track_published', dm, alice.userId, 'MICROPHONE'));
    t.same(await bobWs.waitFor((e) => e.type === 'UserVoiceStateUpdate' && e.channel_id === dm), { type: 'UserVoiceStateUpdate', id: alice.userId, channel_id: dm, data: { is_publishing: true } });
    const st = await s.readModels.getJson<any>(`voice:${dm}`);
    t.same(Object.keys(st.participants), [alice.userId], 'kept under the DM itself');

    // A call in a group at the same time: its own scope, so no move out of the DM.
    await webhook(s, joined(group, carol.userId));
    await bobWs.waitFor((e) => e.type === 'VoiceChannelJoin' && e.id === group);
    const late = await connectReady(s, bob.token);
    t.same(
      late.frames[1]!.voice_states.filter((v: { id: string }) => v.id === dm || v.id === group).sort((a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : 1)),
      [{ id: dm, participants: [{ ...state, is_publishing: true }] }, { id: group, participants: [{ ...state, id: carol.userId }] }].sort((a, b) => (a.id < b.id ? -1 : 1)),
      'Ready lists both calls',
    );
    late.close();
    const strangerReady = await connectReady(s, stranger.token);
    t.notOk(strangerReady.frames[1]!.voice_states.some((v: { id: string }) => v.id === dm || v.id === group), 'not in anyone else’s Ready');
    strangerReady.close();

    // Rooms that are no call: Saved Notes, or a channel that does not exist.
    t.match(await webhook(s, joined(notes, alice.userId)), { status: 200, body: {} });
    t.equal(await s.readModels.getJson(`voice:${notes}`), null, 'Saved Notes has no call');

    // The call's system message: posted by the join that started it, finished by the leave that ends it.
    const started = await bobWs.waitFor((e) => e.type === 'Message' && e.channel === dm && e.system?.type === 'call_started');
    t.same(started.system, { type: 'call_started', by: alice.userId }, 'call_started by Alice, not finished');
    t.equal(started.author, '00000000000000000000000000', 'a system message');
    await webhook(s, joined(dm, bob.userId));
    await bobWs.waitFor((e) => e.type === 'VoiceChannelJoin' && e.id === dm && e.state.id === bob.userId);
    await webhook(s, left(dm, alice.userId));
    t.same(await bobWs.waitFor((e) => e.type === 'VoiceChannelLeave' && e.id === dm && e.user === alice.userId), { type: 'VoiceChannelLeave', id: dm, user: alice.userId });
    t.notOk(bobWs.events.some((e) => e.type === 'MessageUpdate' && e.id === started._id), 'Bob is still in the call: not finished');
    await webhook(s, left(dm, bob.userId));
    const finished = await bobWs.waitFor((e) => e.type === 'MessageUpdate' && e.id === started._id);
    t.equal(finished.data.system.type, 'call_started');
    t.match(finished.data.system.finished_at, /^\d{4}-\d\d-\d\dT/, 'finished_at once the last one left');
    const history = (await bob.api.get(`/channels/${dm}/messages?limit=10`)).body as Array<{ _id: string; system?: unknown }>;
    t.same(history.find((m) => m._id === started._id)?.system, finished.data.system, 'the history has it finished');
    t.equal(history.filter((m) => (m.system as { type?: string } | undefined)?.type === 'call_started').length, 1, 'one message for the call');
    await webhook(s, left(group, carol.userId));
    await bobWs.waitFor((e) => e.type === 'VoiceChannelLeave' && e.id === group);
    // The stranger and a server member who shares no private channel heard none of it.
    t.notOk([...strangerWs.events, ...ownerWs.events].some((e) => String(e.type).startsWith('Voice') || e.type === 'UserVoiceStateUpdate'), 'no call event outside the recipients');
    const after = await connectReady(s, bob.token);
    t.notOk(after.frames[1]!.voice_states.some((v: { id: string }) => v.id === dm || v.id === group), 'ended calls are gone from Ready');
    after.close();
  });

  t.test('VoiceCallUpdate: a DM call starting rings its recipients; the last one out ends it for everyone', async (t) => {
    const [ivy, jack] = await Promise.all([signup(s), signup(s)]);
    await befriend(t, ivy, jack);
    const dm = (await ivy.api.get(`/users/${jack.userId}/dm`)).body._id as string;
    const ivyWs = await connectReady(s, ivy.token);
    const jackWs = await connectReady(s, jack.token);
    const bobWs = await connectReady(s, bob.token);
    t.teardown(() => (ivyWs.close(), jackWs.close(), bobWs.close()));
    t.equal((await ivy.api.post(`/channels/${dm}/join_call`, { recipients: [jack.userId] })).status, 200);
    await webhook(s, joined(dm, ivy.userId));
    const started = await jackWs.waitFor((e) => e.type === 'VoiceCallUpdate');
    t.same(started, { type: 'VoiceCallUpdate', initiator_id: ivy.userId, channel_id: dm, started_at: new Date(1_700_000_000_000).toISOString(), ended: false }, 'the rung recipient');
    await webhook(s, joined(dm, jack.userId));
    await ivyWs.waitFor((e) => e.type === 'VoiceChannelJoin' && e.state.id === jack.userId);
    t.notOk(ivyWs.events.some((e) => e.type === 'VoiceCallUpdate'), 'the caller is not rung; a second join starts nothing');
    t.equal(jackWs.events.filter((e) => e.type === 'VoiceCallUpdate').length, 1);
    await webhook(s, left(dm, ivy.userId));
    await jackWs.waitFor((e) => e.type === 'VoiceChannelLeave' && e.user === ivy.userId);
    t.equal(jackWs.events.filter((e) => e.type === 'VoiceCallUpdate').length, 1, 'not ended while someone is in it');
    await webhook(s, left(dm, jack.userId));
    const ended = { type: 'VoiceCallUpdate', initiator_id: jack.userId, channel_id: dm, started_at: null, ended: true };
    t.same(await ivyWs.waitFor((e) => e.type === 'VoiceCallUpdate' && e.ended === true), ended, 'ended, to every recipient');
    t.same(await jackWs.waitFor((e) => e.type === 'VoiceCallUpdate' && e.ended === true), ended);
    t.notOk(bobWs.events.some((e) => e.type === 'VoiceCallUpdate'), 'nobody outside the DM');
  });

  t.test("join_call while in a call: AlreadyConnected; force_disconnect removes every other session through LiveKit", async (t) => {
    const vc4 = await voiceChannel(owner, srv.id, 'Fourth');
    const [kim, lee] = await Promise.all([signup(s), signup(s)]);
    await join(owner, srv.general, kim);
    await befriend(t, kim, lee);
    const dm = (await kim.api.get(`/users/${lee.userId}/dm`)).body._id as string;
    await webhook(s, joined(vc, kim.userId));
    await webhook(s, joined(dm, kim.userId));
    await until('kim in both', async () => (await s.readModels.getJson<any>(`voice:${srv.id}`))?.participants?.[kim.userId] && (await s.readModels.getJson<any>(`voice:${dm}`))?.participants?.[kim.userId]);
    const removals = (from: number) => lk.calls.slice(from).filter((c) => c.method === 'RemoveParticipant').map((c) => [c.body.room, c.body.identity]);
    const mark = lk.calls.length;
    t.match(await kim.api.post(`/channels/${vc4}/join_call`, {}), { status: 400, body: { type: 'AlreadyConnected' } });
    t.match(await kim.api.post(`/channels/${vc4}/join_call`, { force_disconnect: false }), { status: 400, body: { type: 'AlreadyConnected' } });
    t.same(removals(mark), [], 'nobody removed without force_disconnect');
    lk.fail = (method) => (method === 'RemoveParticipant' ? { status: 500, code: 'internal' } : null);
    t.match(await kim.api.post(`/channels/${vc4}/join_call`, { force_disconnect: true }), { status: 400, body: { type: 'LiveKitUnavailable' } }, 'LiveKit failing: no token');
    lk.fail = (method, body) => (method === 'RemoveParticipant' && body.room === dm ? { status: 404, code: 'not_found' } : null);
    const forced = await kim.api.post(`/channels/${vc4}/join_call`, { force_disconnect: true });
    t.equal(forced.status, 200, 'a room that no longer has them is no failure');
    lk.fail = () => null;
    t.equal((await new TokenVerifier(KEY, SECRET).verify(forced.body.token)).video?.room, vc4);
    t.same(removals(mark).filter(([, who]) => who === kim.userId).map(([room]) => room).sort(), [vc, vc, dm, dm].sort(), 'removed from the server call and the DM call (twice: the failed try and this one)');
    await webhook(s, left(vc, kim.userId));
    await webhook(s, left(dm, kim.userId));
    await until('kim out', async () => !(await s.readModels.getJson<any>(`voice:${srv.id}`))?.participants?.[kim.userId]);
    await until('kim out of the DM', async () => !(await s.readModels.getJson<any>(`voice:${dm}`))?.participants?.[kim.userId]);
    t.equal((await kim.api.post(`/channels/${vc4}/join_call`, {})).status, 200, 'in no call: joins without it');
  });

  t.test('DM and group calls lose whoever may no longer Connect: an ended friendship, a block, a removal from the group, a group without Connect', async (t) => {
    const [erin, frank, gina, hank] = await Promise.all([signup(s), signup(s), signup(s), signup(s)]);
    await befriend(t, erin, frank);
    await befriend(t, erin, gina);
    await befriend(t, erin, hank);
    const removedSince = (from: number) => lk.calls.slice(from).filter((c) => c.method === 'RemoveParticipant').map((c) => `${c.body.room} ${c.body.identity}`).sort();
    const inCall = async (channel: string, n: number) => until(`${n} in ${channel}`, async () => Object.keys((await s.readModels.getJson<any>(`voice:${channel}`))?.participants ?? {}).length === n);

    // A DM call: a relationship change that keeps the friendship (another user's request) removes nobody.
    const dm = (await erin.api.get(`/users/${frank.userId}/dm`)).body._id as string;
    await webhook(s, joined(dm, erin.userId));
    await webhook(s, joined(dm, frank.userId));
    await inCall(dm, 2);
    let mark = lk.calls.length;
    t.equal((await frank.api.put(`/users/${gina.userId}/friend`)).status, 200, 'a request to someone else');
    // Frank ends the friendship: the DM is view only for both, both are removed from its room.
    t.equal((await frank.api.del(`/users/${erin.userId}/friend`)).status, 200);
    await until('both removed', () => removedSince(mark).length >= 2);
    t.same(removedSince(mark), [`${dm} ${erin.userId}`, `${dm} ${frank.userId}`].sort(), 'both recipients, from the DM room, nobody else');
    await webhook(s, left(dm, erin.userId));
    await webhook(s, left(dm, frank.userId));
    await inCall(dm, 0);

    // A block ends a DM call the same way.
    const dm2 = (await erin.api.get(`/users/${hank.userId}/dm`)).body._id as string;
    await webhook(s, joined(dm2, erin.userId));
    await webhook(s, joined(dm2, hank.userId));
    await inCall(dm2, 2);
    mark = lk.calls.length;
    t.equal((await hank.api.put(`/users/${erin.userId}/block`)).status, 200);
    await until('both removed after the block', () => removedSince(mark).length >= 2);
    t.same(removedSince(mark), [`${dm2} ${erin.userId}`, `${dm2} ${hank.userId}`].sort());
    await webhook(s, left(dm2, erin.userId));
    await webhook(s, left(dm2, hank.userId));
    t.equal((await hank.api.del(`/users/${erin.userId}/block`)).status, 200);

    // A group call: removing a member takes them out of the room, and only them.
    await befriend(t, erin, hank);
    const group = (await erin.api.post('/channels/create', { name: 'Call group', users: [gina.userId, hank.userId] })).body._id as string;
    for (const u of [erin, gina, hank]) await webhook(s, joined(group, u.userId));
    await inCall(group, 3);
    mark = lk.calls.length;
    t.equal((await erin.api.del(`/channels/${group}/recipients/${hank.userId}`)).status, 204);
    await until('hank removed', () => removedSince(mark).length >= 1);
    t.same(removedSince(mark), [`${group} ${hank.userId}`], 'only the removed member');
    await webhook(s, left(group, hank.userId));
    await inCall(group, 2);
    // Group permissions that keep Connect remove nobody; without Connect every member but the owner goes.
    mark = lk.calls.length;
    const keep = Number(P.ViewChannel | P.ReadMessageHistory | P.SendMessage | P.Connect | P.Speak | P.Listen);
    t.equal((await erin.api.put(`/channels/${group}/permissions/default`, { permissions: keep })).status, 200);
    t.equal((await erin.api.put(`/channels/${group}/permissions/default`, { permissions: Number(P.ViewChannel | P.ReadMessageHistory | P.SendMessage) })).status, 200);
    await until('gina removed', () => removedSince(mark).length >= 1);
    t.same(removedSince(mark), [`${group} ${gina.userId}`], 'the owner keeps the room');
    await webhook(s, left(group, gina.userId));
    // Handing the group on: the old owner keeps only the group's permissions (no Connect) and is removed.
    await webhook(s, joined(group, gina.userId));
    await inCall(group, 2);
    mark = lk.calls.length;
    t.equal((await erin.api.patch(`/channels/${group}`, { owner: gina.userId })).status, 200);
    await until('erin removed', () => removedSince(mark).length >= 1);
    t.same(removedSince(mark), [`${group} ${erin.userId}`], 'the new owner stays');
    await webhook(s, left(group, erin.userId));
    // The group ends when its last member leaves: its room is closed and the call's presence goes with it.
    t.equal((await erin.api.del(`/channels/${group}`)).status, 204);
    mark = lk.calls.length;
    t.equal((await gina.api.del(`/channels/${group}`)).status, 204, 'the owner, in the call, leaves last');
    await until('room closed', () => lk.calls.slice(mark).some((c) => c.method === 'DeleteRoom' && c.body.room === group));
    await until('presence gone', async () => (await s.readModels.getJson(`voice:${group}`)) === null);
  });

  t.test('rebuild equals live', async (t) => {
    const live = await dumpCurrent(s.redis, s.prefix);
    const rebuilt = await dumpRebuild(t, s.redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions });
    t.same(rebuilt, live);
    t.ok(`voice:${srv.id}` in live || Object.keys(live).some((k) => k.endsWith(`voice:${srv.id}`)));
  });
});

t.test('signed webhooks are not rate limited; unsigned ones are', async (t) => {
  const lk = await fakeLiveKit(t);
  const s = await startTestService(t, { VOICE_ENABLED: 'true', LIVEKIT_URL: lk.url, LIVEKIT_API_KEY: KEY, LIVEKIT_API_SECRET: SECRET }, { now: () => 9_000_000 });
  const statuses: number[] = [];
  for (let i = 0; i < 25; i++) statuses.push((await webhook(s, { event: 'room_started', room: { sid: 'RM', name: 'x' } })).status);
  t.same([...new Set(statuses)], [200], '25 signed webhooks in one window, none refused');
  const unsigned: number[] = [];
  for (let i = 0; i < 21; i++) unsigned.push((await webhook(s, { event: 'room_started' }, { unsigned: true })).status);
  t.equal(unsigned.filter((x) => x === 429).length, 1, 'the 21st unsigned request is refused');
});

t.test('with voice disabled the webhook answers FeatureDisabled, end_ring LiveKitUnavailable', async (t) => {
  const s = await startTestService(t);
  t.match(await webhook(s, { event: 'room_started' }), { status: 400, body: { type: 'FeatureDisabled', feature: 'voice' } });
  const [a, b] = await Promise.all([signup(s), signup(s)]);
  t.match(await a.api.put(`/channels/${newId()}/end_ring/${b.userId}`), { status: 400, body: { type: 'LiveKitUnavailable' } }, "Stoat's stop_ring without voice");
});
