/**
 * Mobile push (issue 38, Stoat's pushd fcm.rs and apn.rs): phones subscribe with endpoint "fcm" or "apn" and
 * their device token in `auth`; the worker delivers DMs, friend requests and calls to a loopback OAuth + FCM
 * stand-in and a TLS HTTP/2 APNs stand-in (test CA made with openssl), which verify the JWTs (RS256 grant
 * assertion, ES256 provider token) and record the payloads; an unregistered device loses its subscription;
 * a 503 is retried; the access and provider tokens are reused, then renewed before they expire.
 */
import t from 'tap';
import { ConfigError, loadConfig } from '../src/config.ts';
import type { AccountState } from '../src/domain/account/state.ts';
import { rm } from '../src/readmodel/keys.ts';
import { apnsPayload, fcmMessage } from '../src/push/mobile.ts';
import { ApnsClient, FcmClient, PROVIDER_TOKEN_REUSE_MS } from '../workers/push/mobile.ts';
import { signup, type TestUser } from './helpers/http.ts';
import { startFakeApns, startFakeFcm } from './helpers/mobilePush.ts';
import { startTestService, type TestService } from './helpers/service.ts';
import { until } from './helpers/wait.ts';

async function befriend(a: TestUser, b: TestUser): Promise<void> {
  await a.api.put(`/users/${b.userId}/friend`);
  const r = await b.api.put(`/users/${a.userId}/friend`);
  if (r.body.relationship !== 'Friend') throw new Error(`befriend: ${r.text}`);
}

async function dmSend(a: TestUser, b: TestUser, content: string): Promise<string> {
  const dm = (await a.api.get(`/users/${b.userId}/dm`)).body._id as string;
  const r = await a.api.post(`/channels/${dm}/messages`, { content });
  if (r.status !== 200) throw new Error(`send ${r.status} ${r.text}`);
  return r.body._id as string;
}

async function subscription(s: TestService, u: TestUser) {
  return (await s.readModels.getJson<AccountState>(rm.account(u.userId)))?.sessions[u.sessionId]?.subscription;
}

t.test('configuration: a service account and an APNs key are checked at start', async (t) => {
  const fcm = await startFakeFcm(t);
  const apns = await startFakeApns(t);
  const base = { DATA_DIR: '/tmp/x' };
  const c = loadConfig({ ...base, FCM_SERVICE_ACCOUNT: fcm.serviceAccount, APNS_KEY: apns.key, APNS_KEY_ID: apns.keyId, APNS_TEAM_ID: apns.teamId, APNS_TOPIC: apns.topic, APNS_SANDBOX: 'true' });
  t.equal(c.push.fcm?.origin, 'https://fcm.googleapis.com');
  t.equal(c.push.fcm?.account.projectId, 'stoatish-test');
  t.equal(c.push.apns?.origin, 'https://api.sandbox.push.apple.com', 'APNS_SANDBOX picks the sandbox host');
  t.equal(loadConfig({ ...base, APNS_KEY: apns.key, APNS_KEY_ID: apns.keyId, APNS_TEAM_ID: apns.teamId, APNS_TOPIC: apns.topic }).push.apns?.origin, 'https://api.push.apple.com');
  t.equal(loadConfig(base).push.fcm, undefined);
  t.throws(() => loadConfig({ ...base, FCM_SERVICE_ACCOUNT: '{"project_id":"x"}' }), ConfigError, 'a service account without its key');
  t.throws(() => loadConfig({ ...base, FCM_SERVICE_ACCOUNT: '/no/such/file.json' }), ConfigError, 'a path that does not exist');
  t.throws(() => loadConfig({ ...base, APNS_KEY: apns.key }), ConfigError, 'APNS_KEY without its ids and topic');
  const rsa = JSON.parse(fcm.serviceAccount).private_key as string;
  t.throws(() => loadConfig({ ...base, APNS_KEY: rsa, APNS_KEY_ID: 'K', APNS_TEAM_ID: 'T', APNS_TOPIC: 'a.b' }), ConfigError, 'an RSA key is not an ES256 key');
  try {
    loadConfig({ ...base, FCM_SERVICE_ACCOUNT: fcm.serviceAccount.replace('"project_id":"stoatish-test"', '"project_id":"Bad Id"') });
    t.fail('a bad project id passes');
  } catch (err) {
    t.notMatch((err as Error).message, 'PRIVATE KEY', 'the key is never repeated in the error');
  }
});

t.test('phones subscribe: "fcm" and "apn" with a device token; bad tokens are refused', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const u = await signup(s);
  t.equal((await u.api.post('/push/subscribe', { endpoint: 'fcm', p256dh: '', auth: 'dGVzdA:APA91b-token_1' })).status, 204, 'empty p256dh, as the Android app sends it');
  t.same(await subscription(s, u), { endpoint: 'fcm', p256dh: '', auth: 'dGVzdA:APA91b-token_1' });
  t.equal((await u.api.post('/push/subscribe', { endpoint: 'apn', p256dh: 'x', auth: 'ab'.repeat(32) })).status, 204);
  t.equal((await subscription(s, u))?.endpoint, 'apn', 'a new subscription replaces the old one');
  for (const auth of ['', 'has space', 'slash/../x', 'x'.repeat(4097)]) {
    const r = await u.api.post('/push/subscribe', { endpoint: 'fcm', p256dh: '', auth });
    t.equal(r.status, 400, `auth ${JSON.stringify(auth.slice(0, 20))}`);
    t.equal(r.body.type, 'FailedValidation');
  }
  t.equal((await u.api.post('/push/subscribe', { endpoint: 'fcm', p256dh: '', auth: 'x'.repeat(4096) })).status, 204, '4,096 characters pass');
  const web = await u.api.post('/push/subscribe', { endpoint: 'https://push.example.com/x', p256dh: '', auth: 'AAAAAAAAAAAAAAAAAAAAAA' });
  t.equal(web.status, 400, 'a Web Push subscription still needs its P-256 key');
});

t.test('DMs and friend requests reach FCM and APNs as Stoat shapes them; dead devices are unsubscribed', async (t) => {
  const fcm = await startFakeFcm(t);
  const apns = await startFakeApns(t);
  const s = await startTestService(
    t,
    { RATE_LIMITS: 'off', PUSH_RETRY_DELAY_MS: '20', FCM_SERVICE_ACCOUNT: fcm.serviceAccount, FCM_ENDPOINT: fcm.origin, APNS_KEY: apns.key, APNS_KEY_ID: apns.keyId, APNS_TEAM_ID: apns.teamId, APNS_TOPIC: apns.topic, APNS_ENDPOINT: apns.origin },
    { pushAgentOptions: { ca: apns.ca } },
  );
  await s.pushWorker!.caughtUp;
  const [alice, bob, carol, dave] = await Promise.all([signup(s), signup(s), signup(s), signup(s)]);
  t.equal((await alice.api.patch('/users/@me', { display_name: 'Alice A' })).status, 200);
  const bobToken = 'bobFcm:APA91b_' + 'x'.repeat(140);
  const carolToken = 'c0ffee'.repeat(10) + 'abcd';
  t.equal((await bob.api.post('/push/subscribe', { endpoint: 'fcm', p256dh: '', auth: bobToken })).status, 204);
  t.equal((await carol.api.post('/push/subscribe', { endpoint: 'apn', p256dh: '', auth: carolToken })).status, 204);
  await befriend(alice, bob);
  await befriend(alice, carol);

  // A DM to Bob: an FCM data message, values all strings, collapsed per channel; one OAuth grant.
  fcm.answer(bobToken, 503);
  const toBob = await dmSend(alice, bob, 'hello bob');
  const bobGot = await until('the FCM delivery', () => fcm.received.find((r) => r.message.token === bobToken && r.status === 200 && r.message.data.body === 'hello bob'));
  t.same(bobGot.message.data, { title: 'Alice A', body: 'hello bob', image: `${s.config.publicUrl}/users/${alice.userId}/default_avatar` });
  t.equal(bobGot.message.android?.collapse_key, bobGot.message.android?.collapse_key && (await alice.api.get(`/users/${bob.userId}/dm`)).body._id);
  t.equal(bobGot.projectId, 'stoatish-test');
  t.equal(fcm.received.filter((r) => r.message.data.body === 'hello bob').length, 2, 'the 503 was retried');
  t.equal(fcm.grants.length, 1, 'one access token for both attempts');
  t.ok(toBob);

  // A DM to Carol: APNs with aps.alert {title, body}, the message and its URL; topic and push type set.
  const toCarol = await dmSend(alice, carol, 'hello carol');
  const carolGot = await until('the APNs delivery', () => apns.received.find((r) => r.deviceToken === carolToken && r.payload.message?._id === toCarol));
  t.same(carolGot.payload.aps.alert, { title: 'Alice A', body: 'hello carol' });
  t.equal(carolGot.payload.message.content, 'hello carol');
  t.match(carolGot.payload.url, new RegExp(`/channel/[0-9A-Z]{26}/${toCarol}$`));
  t.equal(carolGot.payload.authorDisplayName, 'Alice A');
  t.equal(carolGot.headers['apns-topic'], apns.topic);
  t.equal(carolGot.headers['apns-push-type'], 'alert');
  t.equal(carolGot.jwt.header.kid, apns.keyId);
  t.equal(carolGot.jwt.claims.iss, apns.teamId);

  // A friend request to Bob (FCM) and to Carol (APNs): Stoat's types and localisation keys.
  const daveUser = (await dave.api.get('/users/@me')).body as { username: string; discriminator: string };
  await dave.api.put(`/users/${bob.userId}/friend`);
  await dave.api.put(`/users/${carol.userId}/friend`);
  const fr = await until('the FCM friend request', () => fcm.received.find((r) => r.message.data.type === 'push.fr.receive' && r.message.data.id === dave.userId));
  t.same(fr.message.data, { type: 'push.fr.receive', id: dave.userId, username: `${daveUser.username}#${daveUser.discriminator}` });
  const afr = await until('the APNs friend request', () => apns.received.find((r) => r.payload.aps?.alert?.['loc-key'] === 'push.fr.received' && r.payload.aps.alert['loc-args'][0] !== 'Alice A'));
  t.same(afr.payload.aps.alert['loc-args'], [`${daveUser.username}#${daveUser.discriminator}`]);

  // Unregistered devices: FCM 404 UNREGISTERED and APNs 410 Unregistered remove the subscription.
  fcm.unregistered.add(bobToken);
  apns.unregistered.add(carolToken);
  await dmSend(alice, bob, 'are you there');
  await dmSend(alice, carol, 'are you there');
  await until('Bob unsubscribed', async () => ((await subscription(s, bob)) === undefined ? true : undefined));
  await until('Carol unsubscribed', async () => ((await subscription(s, carol)) === undefined ? true : undefined));
  t.same(fcm.errors, []);
  t.same(apns.errors, []);
});

t.test('tokens: the access token is renewed before it expires, the provider token after 50 minutes', async (t) => {
  const fcm = await startFakeFcm(t, { expiresIn: 3600 });
  const apns = await startFakeApns(t);
  const c = loadConfig({ DATA_DIR: '/tmp/x', FCM_SERVICE_ACCOUNT: fcm.serviceAccount, FCM_ENDPOINT: fcm.origin, APNS_KEY: apns.key, APNS_KEY_ID: apns.keyId, APNS_TEAM_ID: apns.teamId, APNS_TOPIC: apns.topic, APNS_ENDPOINT: apns.origin });
  let now = 1_700_000_000_000;
  const f = new FcmClient(c.push.fcm!, 5000, () => now);
  t.equal((await f.send('tok', { data: { a: 'b' } })).result, 'sent');
  now += 54 * 60_000;
  t.equal((await f.send('tok', { data: { a: 'b' } })).result, 'sent');
  t.equal(fcm.grants.length, 1, 'reused at 54 minutes');
  now += 2 * 60_000;
  t.equal((await f.send('tok', { data: { a: 'b' } })).result, 'sent');
  t.equal(fcm.grants.length, 2, 'renewed at 56 minutes, before its hour is up');
  t.equal(fcm.grants[1]!.claims.iat, Math.floor(now / 1000));
  t.equal(fcm.received.at(-1)!.accessToken, fcm.grants[1]!.accessToken, 'the send used the new token');

  const a = new ApnsClient(c.push.apns!, 5000, { ca: apns.ca }, () => now);
  t.teardown(() => a.close());
  const token = 'ab'.repeat(32);
  t.equal((await a.send(token, { aps: { alert: { title: 't', body: 'b' } } })).result, 'sent');
  const first = apns.received.at(-1)!.jwt.claims.iat;
  now += PROVIDER_TOKEN_REUSE_MS - 1000;
  await a.send(token, { aps: {} });
  t.equal(apns.received.at(-1)!.jwt.claims.iat, first, 'reused within 50 minutes');
  now += 2000;
  await a.send(token, { aps: {} });
  t.equal(apns.received.at(-1)!.jwt.claims.iat, Math.floor(now / 1000), 'signed again after 50 minutes (Apple refuses one older than an hour)');
  apns.answer(token, 503);
  t.equal((await a.send(token, { aps: {} })).result, 'retry', 'a 503 is retried');
  t.equal((await a.send('not a token', { aps: {} })).result, 'refused', 'a bad path is given up');
  t.same(apns.errors, []);
  t.same(fcm.errors, []);
});

t.test('call notifications: FCM data as strings with a high priority and the ring as TTL; APNs without an alert', async (t) => {
  const start = { kind: 'call' as const, initiatorId: 'U1', channelId: 'C1', startedAt: '2026-01-01T00:00:00.000Z', ended: false };
  t.same(fcmMessage(start, 30), { data: { initiator_id: 'U1', channel_id: 'C1', started_at: '2026-01-01T00:00:00.000Z', ended: 'false' }, android: { priority: 'HIGH', ttl: '30s' } });
  t.equal(fcmMessage({ ...start, startedAt: '', ended: true }, 30).data.ended, 'true');
  t.same(apnsPayload(start), { aps: { 'mutable-content': 1 }, initiator_id: 'U1', channelId: 'C1', startedAt: '2026-01-01T00:00:00.000Z', ended: false });
});
