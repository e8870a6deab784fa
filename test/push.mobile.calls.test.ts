/**
 * A call started in a DM reaches phones end to end (issue 38): the ring and its stop go to the loopback FCM
 * endpoint as Stoat's fcm.rs data message (values all strings, high priority, the ring as TTL) and to the
 * loopback APNs endpoint as apn.rs's call payload, and every APNs payload carries `aps.badge`: the user's
 * unread mentions over all channels (Stoat's `get_badge_count`), which an ack lowers; an ack that leaves mentions
 * unread sends the new badge alone (Stoat's BadgeUpdate).
 */
import t from 'tap';
import { signup, type TestUser } from './helpers/http.ts';
import { joined, livekitWebhook } from './helpers/livekit.ts';
import { startFakeApns, startFakeFcm } from './helpers/mobilePush.ts';
import { createServer, join } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';
import { until } from './helpers/wait.ts';

const KEY = 'mobile-ring-key';
const SECRET = 'mobile-ring-secret-0123456789abcdefghij';

async function befriend(a: TestUser, b: TestUser): Promise<void> {
  await a.api.put(`/users/${b.userId}/friend`);
  const r = await b.api.put(`/users/${a.userId}/friend`);
  if (r.body.relationship !== 'Friend') throw new Error(`befriend: ${r.text}`);
}

t.test('a DM call rings FCM and APNs as Stoat shapes them; APNs badges count unread mentions', async (t) => {
  const fcm = await startFakeFcm(t);
  const apns = await startFakeApns(t);
  const s = await startTestService(
    t,
    {
      RATE_LIMITS: 'off',
      PUSH_RETRY_DELAY_MS: '20',
      FCM_SERVICE_ACCOUNT: fcm.serviceAccount,
      FCM_ENDPOINT: fcm.origin,
      APNS_KEY: apns.key,
      APNS_KEY_ID: apns.keyId,
      APNS_TEAM_ID: apns.teamId,
      APNS_TOPIC: apns.topic,
      APNS_ENDPOINT: apns.origin,
      VOICE_ENABLED: 'true',
      LIVEKIT_URL: 'wss://livekit.example',
      LIVEKIT_API_KEY: KEY,
      LIVEKIT_API_SECRET: SECRET,
    },
    { pushAgentOptions: { ca: apns.ca } },
  );
  await s.pushWorker!.caughtUp;
  const [alice, bob, carol] = await Promise.all([signup(s), signup(s), signup(s)]);
  const bobToken = 'bobFcm:APA91b_' + 'y'.repeat(140);
  const carolToken = 'beef01'.repeat(10) + 'abcd';
  t.equal((await bob.api.post('/push/subscribe', { endpoint: 'fcm', p256dh: '', auth: bobToken })).status, 204);
  t.equal((await carol.api.post('/push/subscribe', { endpoint: 'apn', p256dh: '', auth: carolToken })).status, 204);
  await befriend(alice, bob);
  await befriend(alice, carol);
  const webhook = (event: Record<string, unknown>) => livekitWebhook(s, { key: KEY, secret: SECRET }, event);
  const toCarol = () => apns.received.filter((r) => r.deviceToken === carolToken);
  /** A badge update: the payload is `{aps: {badge}}` and nothing else. */
  const badgeOnly = (r: { payload: any }) => Object.keys(r.payload).join() === 'aps' && Object.keys(r.payload.aps).join() === 'badge';

  // Two mentions of Carol in one server channel: two unread mentions (one channel).
  const srv = await createServer(alice);
  await join(alice, srv.general, carol);
  const mentions: string[] = [];
  for (const text of ['one', 'two']) {
    const r = await alice.api.post(`/channels/${srv.general}/messages`, { content: `<@${carol.userId}> ${text}` });
    t.equal(r.status, 200);
    mentions.push(r.body._id);
  }
  await until('two unread mentions', async () => {
    const u = ((await carol.api.get('/sync/unreads')).body as Array<{ _id: { channel: string }; mentions?: string[] }>).find((x) => x._id.channel === srv.general);
    return u?.mentions?.length === 2;
  });
  const mentionPush = await until('the second mention pushed to APNs', () => toCarol().find((r) => r.payload.message?._id === mentions[1]));
  t.type(mentionPush.payload.aps.badge, 'number', 'a message push carries the badge');

  // Alice starts a DM call with each (LiveKit reports her join): Bob's phone (FCM) and Carol's (APNs) ring.
  const dmBob = (await alice.api.get(`/users/${bob.userId}/dm`)).body._id as string;
  const dmCarol = (await alice.api.get(`/users/${carol.userId}/dm`)).body._id as string;
  t.equal((await alice.api.post(`/channels/${dmBob}/join_call`, {})).status, 200);
  t.equal((await webhook(joined(dmBob, alice.userId))).status, 200);
  const ring = await until('Bob rung on FCM', () => fcm.received.find((r) => r.message.token === bobToken && r.message.data.channel_id === dmBob && r.message.data.ended === 'false'));
  t.match(ring.message, { data: { initiator_id: alice.userId, channel_id: dmBob, ended: 'false' }, android: { priority: 'HIGH' } });
  t.ok(Object.values(ring.message.data).every((v) => typeof v === 'string'), 'FCM data values are all strings');
  t.ok(!Number.isNaN(Date.parse(ring.message.data.started_at!)), 'started_at is the call start');
  t.match(ring.message.android.ttl, /^\d+s$/, 'rings for the TTL');

  // Carol's ring: leave the first call (join_call refuses a user in a call), start the second.
  await webhook({ event: 'participant_left', room: { sid: 'RM_1', name: dmBob }, participant: { sid: 'PA_1', identity: alice.userId } });
  t.equal((await alice.api.post(`/channels/${dmCarol}/join_call`, {})).status, 200);
  t.equal((await webhook(joined(dmCarol, alice.userId))).status, 200);
  const apnRing = await until('Carol rung on APNs', () => toCarol().find((r) => r.payload.channelId === dmCarol && r.payload.ended === false));
  t.same(apnRing.payload.aps, { 'mutable-content': 1, badge: 2 }, 'no alert; the badge is her two unread mentions');
  t.match(apnRing.payload, { initiator_id: alice.userId, channelId: dmCarol, ended: false });
  t.ok(!Number.isNaN(Date.parse(apnRing.payload.startedAt)), 'startedAt is the call start');
  t.equal(apnRing.headers['apns-topic'], apns.topic);

  // Carol reads the first mention: an ack sends her phone the new badge alone (Stoat's BadgeUpdate), 1.
  t.equal((await carol.api.put(`/channels/${srv.general}/ack/${mentions[0]}`)).status, 204);
  const badge = await until('the badge update', () => toCarol().find(badgeOnly));
  t.same(badge.payload, { aps: { badge: 1 } }, 'one unread mention left');
  // Then the rest: no mention left, and (as in Stoat) no badge update for it. Alice stops ringing her: the
  // stop carries badge 0.
  t.equal((await carol.api.put(`/channels/${srv.general}/ack/${mentions[1]}`)).status, 204);
  await until('mentions cleared', async () => {
    const u = ((await carol.api.get('/sync/unreads')).body as Array<{ _id: { channel: string }; mentions?: string[] }>).find((x) => x._id.channel === srv.general);
    return !u?.mentions?.length;
  });
  t.equal((await alice.api.put(`/channels/${dmCarol}/end_ring/${carol.userId}`)).status, 204);
  const stop = await until('the stop on APNs', () => toCarol().find((r) => r.payload.channelId === dmCarol && r.payload.ended === true));
  t.same(stop.payload.aps, { 'mutable-content': 1, badge: 0 }, 'acked: badge 0');
  t.same(toCarol().filter(badgeOnly).map((r) => r.payload), [{ aps: { badge: 1 } }], 'the ack that left no mention sent no badge update');
  t.same(fcm.errors, []);
  t.same(apns.errors, []);
});
