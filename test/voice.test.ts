// Voice (DESIGN §4 "voice", spec "Joining a voice channel is gated on Connect. The subscription right of the
// voice session token is derived from Listen"): the grants derived from a permission value, the join_call
// route over HTTP with its refusals, the LiveKit token it issues (signature verified, grants, room, identity,
// name, TTL, room cap), the member flags of steps 5 and 6 flowing into it, a voice channel outliving a
// switch-off, and `GET /` in both modes.
import t from 'tap';
import { TokenVerifier, TrackSource, type ClaimGrants } from 'livekit-server-sdk';
import { DEFINED_BITS, Permission as P } from '../src/permissions/bits.ts';
import { joinGrant, publishSources } from '../src/voice/grants.ts';
import { JOIN_TOKEN_TTL_SECONDS, LIVEKIT_NODE } from '../src/voice/token.ts';
import { client, signup, type Res, type TestUser } from './helpers/http.ts';
import { createServer, join, roleWith } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';

/** The assertions the helpers below make, on the subtest that calls them. */
type Tap = Pick<typeof t, 'equal' | 'match' | 'notOk'>;

const LIVEKIT = {
  VOICE_ENABLED: 'true',
  LIVEKIT_URL: 'wss://livekit.example',
  LIVEKIT_API_KEY: 'voice-test-key',
  LIVEKIT_API_SECRET: 'voice-test-secret-0123456789abcdefghij',
};
const VIEW = P.ViewChannel | P.ReadMessageHistory;
const MIC = ['microphone'];
const ALL_SOURCES = ['microphone', 'camera', 'screen_share', 'screen_share_audio'];

t.test('joinGrant: every capability follows its bit, written out explicitly', async (t) => {
  const room = 'R';
  t.strictSame(joinGrant(VIEW | P.Connect | P.Speak | P.Video | P.Listen, room), {
    room,
    roomJoin: true,
    canPublish: true,
    canPublishSources: [TrackSource.MICROPHONE, TrackSource.CAMERA, TrackSource.SCREEN_SHARE, TrackSource.SCREEN_SHARE_AUDIO],
    canSubscribe: true,
    canPublishData: true,
    canUpdateOwnMetadata: false,
  });
  t.strictSame(publishSources(P.Speak), [TrackSource.MICROPHONE], 'Speak: microphone only');
  t.strictSame(publishSources(P.Video), [TrackSource.CAMERA, TrackSource.SCREEN_SHARE, TrackSource.SCREEN_SHARE_AUDIO], 'Video: camera and screen share');
  t.strictSame(publishSources(DEFINED_BITS & ~(P.Speak | P.Video)), [], 'every other bit publishes nothing');
  const connectOnly = joinGrant(VIEW | P.Connect, room);
  t.equal(connectOnly.roomJoin, true);
  t.equal(connectOnly.canPublish, false, 'no source → canPublish false (LiveKit reads an empty list with canPublish as "any source")');
  t.strictSame(connectOnly.canPublishSources, []);
  t.equal(connectOnly.canSubscribe, false, 'set to false, not left out (LiveKit grants both when neither is set)');
  t.equal(connectOnly.canPublishData, false, 'set to false, not left out (LiveKit defaults it to true)');
  t.equal(joinGrant(VIEW | P.Speak | P.Listen, room).roomJoin, false, 'roomJoin only with Connect');
  t.equal(joinGrant(VIEW | P.Connect | P.Listen, room).canSubscribe, true, 'Listen alone gives subscribe');
  t.equal(joinGrant(VIEW | P.Connect | P.Video, room).canPublishData, false, 'data follows Speak, not Video');
  t.equal(joinGrant(VIEW | P.Connect | P.Speak, room).canPublishData, true);
});

t.test('join_call with voice enabled', async (t) => {
  let clock = Date.now();
  const s = await startTestService(t, { RATE_LIMITS: 'off', ...LIVEKIT }, { now: () => clock });
  const verifier = new TokenVerifier(LIVEKIT.LIVEKIT_API_KEY, LIVEKIT.LIVEKIT_API_SECRET);
  const [owner, mod, full, speaker, video, voiceUser, muted, deaf, timed, plain, outsider, plainName] = await Promise.all([
    signup(s), signup(s), signup(s), signup(s), signup(s), signup(s), signup(s), signup(s), signup(s), signup(s), signup(s), signup(s),
  ]);
  const srv = await createServer(owner, 'Voice');
  const S = `/servers/${srv.id}`;
  await join(owner, srv.general, mod, full, speaker, video, voiceUser, muted, deaf, timed, plain, plainName);
  // Members start with view + history only, so every voice bit comes from the role under test.
  t.equal((await owner.api.put(`${S}/permissions/default`, { permissions: Number(VIEW) })).status, 200);
  // Created first, so it ranks above the roles created after it (the flags need the target ranked below).
  await roleWith(owner, srv.id, P.MuteMembers | P.DeafenMembers, [mod], 'moderators');
  await roleWith(owner, srv.id, DEFINED_BITS, [full], 'everything');
  await roleWith(owner, srv.id, P.Connect | P.Speak, [speaker], 'speakers');
  await roleWith(owner, srv.id, P.Connect | P.Video, [video], 'video');
  const voiceRole = await roleWith(owner, srv.id, P.Connect | P.Speak | P.Video | P.Listen, [voiceUser, muted, deaf, timed], 'voice');
  const call = await owner.api.post(`${S}/channels`, { type: 'Voice', name: 'call' });
  t.strictSame(call.body.voice, {});
  const callId: string = call.body._id;

  const joinCall = (u: TestUser, channel: string, body: unknown = {}): Promise<Res> => u.api.post(`/channels/${channel}/join_call`, body);
  /** Joins, expects 200, verifies the token's signature with the secret and returns its claims. */
  const claimsOf = async (t: Tap, u: TestUser, channel = callId, body: unknown = {}): Promise<ClaimGrants> => {
    const r = await joinCall(u, channel, body);
    if (r.status !== 200) throw new Error(`join_call ${r.status} ${r.text}`);
    t.equal(r.body.url, LIVEKIT.LIVEKIT_URL, 'url = LIVEKIT_URL');
    return verifier.verify(r.body.token);
  };
  const refused = async (t: Tap, u: TestUser, channel: string, expected: Record<string, unknown>, status: number, body: unknown = {}) => {
    const r = await joinCall(u, channel, body);
    t.equal(r.status, status, JSON.stringify(expected));
    t.match(r.body, expected);
    t.notOk('token' in (r.body ?? {}), 'no token with a refusal');
  };

  t.test('the token: signed with the secret, room = channel, identity = user, short TTL', async (t) => {
    const r = await joinCall(full, callId);
    t.equal(r.status, 200);
    t.strictSame(Object.keys(r.body).sort(), ['token', 'url']);
    t.equal(r.headers.get('x-ratelimit-bucket'), 'channels', 'join_call draws on the channels bucket');
    const claims = await verifier.verify(r.body.token);
    t.equal(claims.iss, LIVEKIT.LIVEKIT_API_KEY, 'issuer = LIVEKIT_API_KEY');
    t.equal(claims.sub, full.userId, 'identity = user id');
    t.equal(claims.video?.room, callId, 'room = channel id');
    t.equal(claims.name, full.username, 'no display name: the username');
    await t.rejects(new TokenVerifier(LIVEKIT.LIVEKIT_API_KEY, 'another-secret-of-at-least-32-chars!').verify(r.body.token), 'another secret does not verify it');
    await t.rejects(new TokenVerifier('another-key', LIVEKIT.LIVEKIT_API_SECRET).verify(r.body.token), 'another issuer does not verify it');
    // exp and nbf are whole seconds taken a moment apart, so their difference is the TTL or one less.
    const life = claims.exp! - claims.nbf!;
    t.ok(life === JOIN_TOKEN_TTL_SECONDS || life === JOIN_TOKEN_TTL_SECONDS - 1, `lifetime ${life} s`);
    t.ok(JOIN_TOKEN_TTL_SECONDS >= 30 && JOIN_TOKEN_TTL_SECONDS <= 300, 'TTL between 30 s and 5 min');
    t.ok(claims.exp! <= Math.ceil(Date.now() / 1000) + JOIN_TOKEN_TTL_SECONDS, 'expires within the TTL from now');
    t.notOk('roomConfig' in claims, 'no max_users: no room configuration');
  });

  t.test('the display name is the participant name', async (t) => {
    t.equal((await plainName.api.patch('/users/@me', { display_name: 'Night Owl' })).status, 200);
    // plainName has no Connect: give it the voice role to join.
    await owner.api.patch(`${S}/members/${plainName.userId}`, { roles: [voiceRole] });
    t.equal((await claimsOf(t, plainName)).name, 'Night Owl');
  });

  t.test('all bits: the owner (GrantAllSafe) and a role with every defined bit', async (t) => {
    const expected = {
      room: callId,
      roomJoin: true,
      canPublish: true,
      canPublishSources: ALL_SOURCES,
      canSubscribe: true,
      canPublishData: true,
      canUpdateOwnMetadata: false,
    };
    t.strictSame((await claimsOf(t, owner)).video, expected, 'owner');
    t.strictSame((await claimsOf(t, full)).video, expected, 'role with everything');
  });

  t.test('Connect + Speak without Listen: joins, speaks, hears nothing', async (t) => {
    t.strictSame((await claimsOf(t, speaker)).video, {
      room: callId,
      roomJoin: true,
      canPublish: true,
      canPublishSources: MIC,
      canSubscribe: false,
      canPublishData: true,
      canUpdateOwnMetadata: false,
    });
  });

  t.test('Connect + Video only: camera and screen share, no microphone, no data, no subscribe', async (t) => {
    t.strictSame((await claimsOf(t, video)).video, {
      room: callId,
      roomJoin: true,
      canPublish: true,
      canPublishSources: ['camera', 'screen_share', 'screen_share_audio'],
      canSubscribe: false,
      canPublishData: false,
      canUpdateOwnMetadata: false,
    });
  });

  t.test('can_publish = false (step 5) and can_receive = false (step 6), set with MuteMembers / DeafenMembers', async (t) => {
    const before = (await claimsOf(t, muted)).video!;
    t.strictSame(before.canPublishSources, ALL_SOURCES, 'before: everything');
    // Without MuteMembers / DeafenMembers the flags cannot be set.
    const noMute = await plain.api.patch(`${S}/members/${muted.userId}`, { can_publish: false });
    t.same([noMute.status, noMute.body.permission], [403, 'MuteMembers']);
    const noDeafen = await plain.api.patch(`${S}/members/${deaf.userId}`, { can_receive: false });
    t.same([noDeafen.status, noDeafen.body.permission], [403, 'DeafenMembers']);

    const m = await mod.api.patch(`${S}/members/${muted.userId}`, { can_publish: false });
    t.equal(m.status, 200);
    t.equal(m.body.can_publish, false, 'serialized when false');
    t.notOk('can_receive' in m.body, 'the default (true) is not serialized');
    t.strictSame((await claimsOf(t, muted)).video, {
      room: callId,
      roomJoin: true,
      canPublish: false,
      canPublishSources: [],
      canSubscribe: true,
      canPublishData: false,
      canUpdateOwnMetadata: false,
    }, 'muted: joins and hears, publishes nothing');

    const d = await mod.api.patch(`${S}/members/${deaf.userId}`, { can_receive: false });
    t.equal(d.status, 200);
    t.equal(d.body.can_receive, false);
    t.strictSame((await claimsOf(t, deaf)).video, {
      room: callId,
      roomJoin: true,
      canPublish: true,
      canPublishSources: ALL_SOURCES,
      canSubscribe: false,
      canPublishData: true,
      canUpdateOwnMetadata: false,
    }, 'deafened: joins and speaks, hears nothing');

    // Lifting the flags gives the rights back.
    const lifted = await mod.api.patch(`${S}/members/${muted.userId}`, { can_publish: true });
    t.notOk('can_publish' in lifted.body, 'true is not serialized');
    t.strictSame((await claimsOf(t, muted)).video!.canPublishSources, ALL_SOURCES);
    await mod.api.patch(`${S}/members/${deaf.userId}`, { remove: ['CanReceive'] });
    t.equal((await claimsOf(t, deaf)).video!.canSubscribe, true);
  });

  t.test('timed out: only ViewChannel and ReadMessageHistory remain, so no Connect (judged by deps.now())', async (t) => {
    t.equal((await claimsOf(t, timed)).video!.roomJoin, true, 'joins before the timeout');
    const until = new Date(clock + 3_600_000).toISOString();
    t.equal((await owner.api.patch(`${S}/members/${timed.userId}`, { timeout: until })).status, 200);
    await refused(t, timed, callId, { type: 'MissingPermission', permission: 'Connect' }, 403);
    clock += 3_600_001;
    t.strictSame((await claimsOf(t, timed)).video!.canPublishSources, ALL_SOURCES, 'the timeout ended on the service clock');
  });

  t.test('Connect denied by a channel override', async (t) => {
    const restricted = (await owner.api.post(`${S}/channels`, { type: 'Voice', name: 'restricted' })).body._id as string;
    t.equal((await claimsOf(t, voiceUser, restricted)).video!.room, restricted, 'allowed before the override');
    // Step 4: the channel's role override comes after the role's server-level allow.
    const o = await owner.api.put(`/channels/${restricted}/permissions/${voiceRole}`, { permissions: { allow: 0, deny: Number(P.Connect) } });
    t.equal(o.status, 200);
    await refused(t, voiceUser, restricted, { type: 'MissingPermission', permission: 'Connect' }, 403);
    t.equal((await claimsOf(t, voiceUser)).video!.room, callId, 'other voice channels are unaffected');
    // Step 2: a channel default deny takes Connect from a member whose Connect comes from the server default.
    const open = (await owner.api.post(`${S}/channels`, { type: 'Voice', name: 'open' })).body._id as string;
    t.equal((await owner.api.put(`${S}/permissions/default`, { permissions: Number(VIEW | P.Connect) })).status, 200);
    t.equal((await claimsOf(t, plain, open)).video!.roomJoin, true, 'Connect from the server default');
    t.equal((await owner.api.put(`/channels/${open}/permissions/default`, { permissions: { allow: 0, deny: Number(P.Connect) } })).status, 200);
    await refused(t, plain, open, { type: 'MissingPermission', permission: 'Connect' }, 403);
    // A channel the member cannot see (step 8 removes everything).
    t.equal((await owner.api.put(`/channels/${open}/permissions/default`, { permissions: { allow: 0, deny: Number(P.ViewChannel) } })).status, 200);
    await refused(t, plain, open, { type: 'MissingPermission', permission: 'Connect' }, 403);
    t.equal((await owner.api.put(`${S}/permissions/default`, { permissions: Number(VIEW) })).status, 200);
    await refused(t, plain, callId, { type: 'MissingPermission', permission: 'Connect' }, 403, {});
  });

  t.test('refusals: non-member 404, text channel 400, bodies', async (t) => {
    await refused(t, outsider, callId, { type: 'NotFound' }, 404);
    await refused(t, outsider, srv.general, { type: 'NotFound' }, 404);
    await refused(t, full, '01HZZZZZZZZZZZZZZZZZZZZZZZ', { type: 'NotFound' }, 404);
    await refused(t, full, srv.general, { type: 'NotAVoiceChannel' }, 400);
    await refused(t, plain, srv.general, { type: 'MissingPermission', permission: 'Connect' }, 403, {});
    // A text channel that gains voice settings becomes joinable, and stops being so when it loses them.
    const text = (await owner.api.post(`${S}/channels`, { name: 'chat' })).body._id as string;
    await refused(t, full, text, { type: 'NotAVoiceChannel' }, 400);
    t.equal((await owner.api.patch(`/channels/${text}`, { voice: {} })).status, 200);
    t.equal((await claimsOf(t, full, text)).video!.room, text);
    t.equal((await owner.api.patch(`/channels/${text}`, { remove: ['Voice'] })).status, 200);
    await refused(t, full, text, { type: 'NotAVoiceChannel' }, 400);
    // Stoat's body: node (the advertised one), force_disconnect and recipients are accepted; the body is strict.
    t.equal((await claimsOf(t, full, callId, { node: LIVEKIT_NODE, force_disconnect: true, recipients: [owner.userId] })).sub, full.userId);
    t.equal((await claimsOf(t, full, callId, { node: null, force_disconnect: null, recipients: null })).sub, full.userId);
    await refused(t, full, callId, { type: 'UnknownNode' }, 400, { node: 'elsewhere' });
    await refused(t, full, callId, { type: 'FailedValidation', error: /unknown_field/ }, 400, { unknown_field: 1 });
    await refused(t, full, callId, { type: 'FailedValidation', error: /force_disconnect/ }, 400, { force_disconnect: 'yes' });
    await refused(t, full, callId, { type: 'FailedValidation', error: /recipients/ }, 400, { recipients: 'everyone' });
    const anonymous = await client(s).post(`/channels/${callId}/join_call`, {});
    t.same([anonymous.status, anonymous.body.type], [401, 'NotAuthenticated'], 'no session');
  });

  t.test('max_users travels as the LiveKit room cap', async (t) => {
    const small = await owner.api.post(`${S}/channels`, { name: 'small', voice: { max_users: 3 } });
    t.strictSame(small.body.voice, { max_users: 3 });
    const claims = await claimsOf(t, full, small.body._id);
    t.equal(claims.roomConfig?.maxParticipants, 3);
    t.equal(claims.roomConfig?.name, small.body._id, 'for the room of this channel');
    t.equal((await owner.api.patch(`/channels/${small.body._id}`, { voice: { max_users: 7 } })).status, 200);
    t.equal((await claimsOf(t, full, small.body._id)).roomConfig?.maxParticipants, 7, 'follows an edit');
  });
});

t.test('voice disabled: no voice channels, no joins, existing voice channels stay readable', async (t) => {
  // Two API processes on one store and one set of read models: the first with voice on (it also projects),
  // the second with voice off, as after an operator turned voice off.
  const on = await startTestService(t, { RATE_LIMITS: 'off', ...LIVEKIT });
  const off = await startTestService(t, { RATE_LIMITS: 'off', DATA_DIR: on.dataDir, REDIS_PREFIX: on.prefix, ROLES: 'api' });
  const owner = await signup(on);
  const srv = await createServer(owner, 'Was voice');
  const made = await owner.api.post(`/servers/${srv.id}/channels`, { type: 'Voice', name: 'call', voice: { max_users: 2 } });
  t.equal(made.status, 200);
  const voiceId = made.body._id as string;
  t.equal((await owner.api.post(`/channels/${voiceId}/join_call`, {})).status, 200, 'joinable while voice is on');

  const offApi = client(off, owner.token);

  const read = await offApi.get(`/channels/${voiceId}`);
  t.equal(read.status, 200, 'still readable');
  t.strictSame(read.body.voice, { max_users: 2 }, 'with its voice settings');
  const joinOff = await offApi.post(`/channels/${voiceId}/join_call`, {});
  t.same([joinOff.status, joinOff.body.type, joinOff.body.feature], [400, 'FeatureDisabled', 'voice']);
  t.notOk('token' in joinOff.body);
  t.equal((await offApi.post(`/channels/${srv.general}/join_call`, {})).body.type, 'NotAVoiceChannel', 'a text channel is still not a voice channel');
  const create = await offApi.post(`/servers/${srv.id}/channels`, { type: 'Voice', name: 'new call' });
  t.same([create.status, create.body.type, create.body.feature], [400, 'FeatureDisabled', 'voice']);
  const bySettings = await offApi.post(`/servers/${srv.id}/channels`, { name: 'new call', voice: {} });
  t.same([bySettings.status, bySettings.body.type], [400, 'FeatureDisabled']);
  t.equal((await offApi.post(`/servers/${srv.id}/channels`, { name: 'text' })).status, 200, 'text channels still work');
});

t.test('GET / reports voice consistently in both modes', async (t) => {
  const off = await startTestService(t, { RATE_LIMITS: 'off', ROLES: 'api' });
  const r0 = (await client(off).get('/')).body;
  t.strictSame(r0.features.voice, { enabled: false });
  t.strictSame(r0.features.livekit, { enabled: false, nodes: [] });

  const on = await startTestService(t, { RATE_LIMITS: 'off', ROLES: 'api', ...LIVEKIT });
  const r1 = (await client(on).get('/')).body;
  t.strictSame(r1.features.voice, { enabled: true });
  t.equal(r1.features.livekit.enabled, true);
  t.strictSame(r1.features.livekit.nodes, [{ name: LIVEKIT_NODE, lat: 0, lon: 0, public_url: LIVEKIT.LIVEKIT_URL }], 'one node: LIVEKIT_URL');
  t.notOk(JSON.stringify(r1).includes(LIVEKIT.LIVEKIT_API_SECRET), 'the secret is never shown');
  t.notOk(JSON.stringify(r1).includes(LIVEKIT.LIVEKIT_API_KEY), 'nor the key');
});
