/**
 * Web Push (issue 20, Stoat's pushd): subscriptions per session (bounds, keys, the SSRF guard at subscribe and
 * send time), the VAPID key in `GET /` (configured, or generated once and kept in DATA_DIR), and the worker's
 * deliveries to a push service on loopback that decrypts each payload as a browser would: a DM pushes, a
 * mention pushes while the user is offline and not while online, the synced `notifications` setting mutes,
 * 404/410 removes the subscription, 5xx is retried, logout ends the subscription, the per-user budget holds,
 * a rebuild equals live and sends nothing again, and a worker killed mid-send loses nothing.
 */
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import t from 'tap';
import type tap from 'tap';
import { runAdmin } from '../src/cli/accountsAdmin.ts';
import { ConfigError, loadConfig } from '../src/config.ts';
import type { AccountState } from '../src/domain/account/state.ts';
import { ulidTime } from '../src/ids.ts';
import { outboundPolicy, OutboundRefused } from '../src/outbound/policy.ts';
import { rm } from '../src/readmodel/keys.ts';
import { bullConnection, bullPrefix } from '../workers/media/jobs.ts';
import { postPush, PUSH_QUEUE } from '../workers/push/worker.ts';
import { client, signup, type TestUser } from './helpers/http.ts';
import { startRoleProcess } from './helpers/processes.ts';
import { startPushEndpoint, type PushEndpoint, type TestSubscription } from './helpers/pushEndpoint.ts';
import { createServer, dumpCurrent, dumpRebuild, join } from './helpers/servers.ts';
import { startTestService, testConfig, TEST_REDIS_URL, type TestService } from './helpers/service.ts';
import { startService, type Service } from '../src/service.ts';
import { createLogger } from '../src/log.ts';
import { until } from './helpers/wait.ts';
import { connectReady } from './helpers/ws.ts';

const ALLOW_LOOPBACK = { OUTBOUND_ALLOW_PRIVATE: '127.0.0.0/8', RATE_LIMITS: 'off', PUSH_RETRY_DELAY_MS: '20' };

async function befriend(a: TestUser, b: TestUser): Promise<void> {
  await a.api.put(`/users/${b.userId}/friend`);
  const r = await b.api.put(`/users/${a.userId}/friend`);
  if (r.body.relationship !== 'Friend') throw new Error(`befriend: ${r.text}`);
}

async function dmOf(a: TestUser, b: TestUser): Promise<string> {
  const r = await a.api.get(`/users/${b.userId}/dm`);
  if (r.status !== 200) throw new Error(`dm ${r.status} ${r.text}`);
  return r.body._id as string;
}

async function send(u: TestUser, channel: string, content: string): Promise<string> {
  const r = await u.api.post(`/channels/${channel}/messages`, { content });
  if (r.status !== 200) throw new Error(`send ${r.status} ${r.text}`);
  return r.body._id as string;
}

function pushQueue(t: { teardown(f: () => unknown): void }, s: TestService): Queue {
  const q = new Queue(PUSH_QUEUE, { connection: bullConnection(s.config.redisUrl), prefix: bullPrefix(s.prefix) });
  t.teardown(() => q.close());
  return q;
}

/** The return value of a finished push job (the fan-out's number of sends queued, or a send's outcome). */
async function jobResult(q: Queue, id: string): Promise<unknown> {
  return (
    await until(`push job ${id}`, async () => {
      const job = await Job.fromId(q, id);
      if (!job) return undefined;
      const state = await job.getState();
      if (state === 'failed') throw new Error(`job ${id} failed: ${job.failedReason}`);
      // Read again once completed: the job fetched before its state was read may predate its return value.
      return state === 'completed' ? { v: (await Job.fromId(q, id))!.returnvalue } : undefined;
    })
  ).v;
}

/**
 * Asserts that the log follower added no `message` job for `id`: once the job of `later` (a message sent after
 * it that does push) exists, the follower has passed `id`, in log order.
 */
async function noMessageJob(t: Pick<typeof tap, 'equal'>, q: Queue, id: string, later: string, what: string): Promise<void> {
  await until(`push job m-${later}`, async () => (await Job.fromId(q, `m-${later}`)) !== undefined);
  t.equal(await Job.fromId(q, `m-${id}`), undefined, what);
}

/** Another process of the same service (same DATA_DIR and Redis prefix), stopped at teardown without deleting the prefix. */
async function startSibling(t: { teardown(f: () => unknown): void }, s: TestService, env: Record<string, string>): Promise<Service> {
  const config = testConfig(t, { DATA_DIR: s.dataDir, REDIS_PREFIX: s.prefix, ...env });
  const other = await startService(config, { log: createLogger('silent') });
  t.teardown(() => other.stop());
  return other;
}

const pushesOf = (ep: PushEndpoint, messageId: string) => ep.received.filter((r) => String(r.payload.url).endsWith(`/${messageId}`));

async function subscription(s: TestService, u: TestUser, sessionId = u.sessionId) {
  const account = await s.readModels.getJson<AccountState>(rm.account(u.userId));
  return account?.sessions[sessionId]?.subscription;
}

t.test('configuration: VAPID keys are set together, must match, and the subject is mailto: or https:', async (t) => {
  const pub = 'BPOlyYvVwlCWHXaRRUCbGlpd7gw5OvjnyT0zhIXqS3smwb2GcrFn4dTVzL9AE98J5AMKoiDgvFU6TSz_Ya9hRn8';
  const base = { DATA_DIR: '/tmp/x' };
  t.throws(() => loadConfig({ ...base, VAPID_PUBLIC_KEY: pub }), ConfigError, 'public without private');
  t.throws(() => loadConfig({ ...base, VAPID_PUBLIC_KEY: 'short', VAPID_PRIVATE_KEY: 'A'.repeat(43) }), ConfigError, 'not a point');
  t.throws(() => loadConfig({ ...base, VAPID_PUBLIC_KEY: pub, VAPID_PRIVATE_KEY: Buffer.alloc(32, 7).toString('base64url') }), ConfigError, 'a pair that does not match');
  t.throws(() => loadConfig({ ...base, VAPID_SUBJECT: 'http://example.com' }), ConfigError, 'http subject');
  try {
    loadConfig({ ...base, VAPID_PUBLIC_KEY: pub, VAPID_PRIVATE_KEY: Buffer.alloc(32, 7).toString('base64url') });
  } catch (err) {
    t.notMatch((err as Error).message, Buffer.alloc(32, 7).toString('base64url'), 'the private key is never repeated');
  }
  t.equal(loadConfig(base).push.subject, 'mailto:noreply@localhost', 'default subject: EMAIL_FROM');
});

t.test('configured VAPID keys are what GET / advertises and what signs', async (t) => {
  const { createECDH } = await import('node:crypto');
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const env = { ...ALLOW_LOOPBACK, VAPID_PUBLIC_KEY: ecdh.getPublicKey().toString('base64url'), VAPID_PRIVATE_KEY: ecdh.getPrivateKey().toString('base64url'), VAPID_SUBJECT: 'mailto:ops@example.test' };
  const s = await startTestService(t, env);
  t.equal((await client(s).get('/')).body.vapid, env.VAPID_PUBLIC_KEY);
  const ep = await startPushEndpoint(t);
  const [alice, bob] = await Promise.all([signup(s), signup(s)]);
  await befriend(alice, bob);
  const dm = await dmOf(alice, bob);
  const sub = ep.subscribe();
  t.equal((await bob.api.post('/push/subscribe', sub)).status, 204);
  const id = await send(alice, dm, 'signed');
  const [got] = await until('the push', () => (pushesOf(ep, id).length ? pushesOf(ep, id) : undefined));
  t.equal(got!.vapid.k, env.VAPID_PUBLIC_KEY, 'signed with the configured key');
  t.equal(got!.vapid.claims.sub, 'mailto:ops@example.test');
  t.same(ep.errors, []);
});

t.test('push notifications', async (t) => {
  const s = await startTestService(t, ALLOW_LOOPBACK);
  const q = pushQueue(t, s);
  const ep = await startPushEndpoint(t);
  const [alice, bob, carol] = await Promise.all([signup(s), signup(s), signup(s)]);
  await befriend(alice, bob);
  const dm = await dmOf(alice, bob);
  const srv = await createServer(alice);
  await join(alice, srv.general, bob, carol);
  const vapid = (await client(s).get('/')).body.vapid as string;
  const bobSub = ep.subscribe();
  t.equal((await bob.api.post('/push/subscribe', bobSub)).status, 204);

  t.test('GET / advertises the generated VAPID key, kept in DATA_DIR', async (t) => {
    const point = Buffer.from(vapid, 'base64url');
    t.equal(point.length, 65);
    t.equal(point[0], 4, 'an uncompressed P-256 point');
    const again = await startSibling(t, s, { ROLES: 'api' });
    t.equal((await client(again).get('/')).body.vapid, vapid, 'another process on the same DATA_DIR: the same key');
  });

  t.test('a DM arrives as a push, decrypted with the subscription keys', async (t) => {
    const id = await send(alice, dm, 'hello bob');
    const [got] = await until('the DM push', () => (pushesOf(ep, id).length ? pushesOf(ep, id) : undefined));
    t.same(got!.payload, {
      author: alice.username,
      icon: `${s.config.publicUrl}/users/${alice.userId}/default_avatar`,
      body: 'hello bob',
      tag: dm,
      timestamp: Math.floor(ulidTime(id) / 1000),
      url: `${s.config.appUrl}/channel/${dm}/${id}`,
    }, "Stoat's PushNotification");
    t.equal(got!.path, bobSub.path);
    t.equal(got!.vapid.k, vapid, 'VAPID-signed with the advertised key');
    t.equal(got!.vapid.claims.aud, ep.url, 'audience: the push service origin');
    t.ok(got!.vapid.claims.exp > Date.now() / 1000);
    t.equal(got!.headers['content-encoding'], 'aes128gcm');
    t.equal(got!.headers.urgency, 'high');
    t.ok(Number(got!.headers.ttl) > 0);
    t.same(ep.errors, [], 'every request decrypted and verified');
    t.equal(await jobResult(q, `m-${id}`), 1, 'one send (bob); the author is never notified');
  });

  t.test('a long message is cut to fit a push payload', async (t) => {
    const id = await send(alice, dm, 'é'.repeat(2000));
    const [got] = await until('the push', () => (pushesOf(ep, id).length ? pushesOf(ep, id) : undefined));
    t.ok(Buffer.byteLength(got!.payload.body) <= 1500, `${Buffer.byteLength(got!.payload.body)} bytes`);
    t.ok(String(got!.payload.body).endsWith('…'));
  });

  t.test('a mention pushes while the user is offline, not while online; no mention, no push', async (t) => {
    const id1 = await send(alice, srv.general, `hi <@${bob.userId}>`);
    await until('the mention push', () => pushesOf(ep, id1).length > 0);
    t.equal(pushesOf(ep, id1)[0]!.payload.tag, srv.general);
    const plain = await send(alice, srv.general, 'nobody mentioned');
    const selfOnly = await send(alice, srv.general, `only me <@${alice.userId}>`);
    const marker = await send(alice, dm, 'after the plain ones');
    await noMessageJob(t, q, plain, marker, 'no mention in a server channel: no queue job at all');
    await noMessageJob(t, q, selfOnly, marker, 'only the author mentioned: no queue job either');
    t.equal(pushesOf(ep, plain).length + pushesOf(ep, selfOnly).length, 0);
    const ws = await connectReady(s, bob.token);
    await until('bob online', async () => (await s.readModels.online([bob.userId])).has(bob.userId));
    const id2 = await send(alice, srv.general, `again <@${bob.userId}>`);
    t.equal(await jobResult(q, `m-${id2}`), 0, 'online on a socket: no push');
    const dmOnline = await send(alice, dm, 'while online');
    t.equal(await jobResult(q, `m-${dmOnline}`), 0, 'a DM while online: no push either (Stoat filters online users)');
    ws.close();
    await until('bob offline', async () => !(await s.readModels.online([bob.userId])).has(bob.userId));
    const id3 = await send(alice, srv.general, `and now <@${bob.userId}>`);
    await until('the push once offline', () => pushesOf(ep, id3).length > 0);
    t.equal(pushesOf(ep, id2).length + pushesOf(ep, dmOnline).length, 0);
  });

  t.test('the synced notifications setting mutes servers, channels and DMs', async (t) => {
    const setNotifications = async (v: unknown) => t.equal((await bob.api.post('/sync/settings/set', { notifications: JSON.stringify(v) })).status, 204);
    await setNotifications({ server: { [srv.id]: 'muted' } });
    const m1 = await send(alice, srv.general, `<@${bob.userId}> muted server`);
    t.equal(await jobResult(q, `m-${m1}`), 0, 'server muted: no push');
    await setNotifications({ server: { [srv.id]: 'muted' }, channel: { [srv.general]: 'mention' } });
    const m2 = await send(alice, srv.general, `<@${bob.userId}> channel overrides`);
    t.equal(await jobResult(q, `m-${m2}`), 1, 'the channel state overrides the server');
    await setNotifications({ channel: { [srv.general]: 'none' } });
    const m3 = await send(alice, srv.general, `<@${bob.userId}> none`);
    t.equal(await jobResult(q, `m-${m3}`), 0, 'channel none: no push');
    await setNotifications({ channel: { [dm]: 'mention' } });
    const d1 = await send(alice, dm, 'dm without mention');
    t.equal(await jobResult(q, `m-${d1}`), 0, 'DM on mention only: a plain DM does not push');
    const d2 = await send(alice, dm, `dm with <@${bob.userId}>`);
    t.equal(await jobResult(q, `m-${d2}`), 1, 'DM on mention only: a mention does');
    await setNotifications({ channel: { [dm]: 'muted' } });
    const d3 = await send(alice, dm, `muted <@${bob.userId}>`);
    t.equal(await jobResult(q, `m-${d3}`), 0, 'DM muted');
    await setNotifications('not json at all {');
    const d4 = await send(alice, dm, 'malformed settings fall back to the defaults');
    t.equal(await jobResult(q, `m-${d4}`), 1);
    await until('pushes of m2, d2, d4', () => [m2, d2, d4].every((id) => pushesOf(ep, id).length > 0));
    t.equal([m1, m3, d1, d3].reduce((n, id) => n + pushesOf(ep, id).length, 0), 0);
  });

  t.test('SuppressNotifications (flag 2) pushes nothing', async (t) => {
    const r = await alice.api.post(`/channels/${dm}/messages`, { content: 'quiet', flags: 2 });
    t.equal(r.status, 200, r.text);
    const loud = await alice.api.post(`/channels/${srv.general}/messages`, { content: `<@${bob.userId}> quiet too?`, flags: 2 });
    t.equal(loud.status, 200, loud.text);
    const marker = await send(alice, dm, 'after the quiet ones');
    await noMessageJob(t, q, r.body._id, marker, 'a suppressed DM: no queue job');
    await noMessageJob(t, q, loud.body._id, marker, 'a suppressed mention: no queue job');
  });

  t.test('bad input: clear errors, nothing appended', async (t) => {
    const head = await s.store.headPosition();
    const good = ep.subscribe();
    const bad = async (what: string, body: unknown, status = 400, type = 'FailedValidation') => {
      const r = await carol.api.post('/push/subscribe', body);
      t.equal(r.status, status, `${what}: ${r.text}`);
      t.equal(r.body?.type, type, what);
    };
    await bad('endpoint over 2048 characters', { ...good, endpoint: `${ep.url}/${'a'.repeat(2048 - ep.url.length)}` });
    await bad('not a URL', { ...good, endpoint: 'not a url' });
    await bad('ftp scheme', { ...good, endpoint: 'ftp://127.0.0.1/x' });
    await bad('credentials in the URL', { ...good, endpoint: `http://u:p@127.0.0.1:${new URL(ep.url).port}/x` });
    await bad('link-local metadata address', { ...good, endpoint: 'http://169.254.169.254/latest' });
    await bad('a private range not allowed', { ...good, endpoint: 'https://10.1.2.3/push' });
    await bad('unknown key', { ...good, extra: 1 });
    await bad('missing auth', { endpoint: good.endpoint, p256dh: good.p256dh });
    await bad('p256dh not a point', { ...good, p256dh: Buffer.alloc(65, 4).toString('base64url') });
    await bad('p256dh of 33 bytes', { ...good, p256dh: Buffer.alloc(33, 2).toString('base64url') });
    await bad('p256dh over 128 characters', { ...good, p256dh: 'A'.repeat(129) });
    await bad('auth of 15 bytes', { ...good, auth: Buffer.alloc(15, 1).toString('base64url') });
    await bad('auth not base64url', { ...good, auth: '!!!!' });
    await bad('auth over 64 characters', { ...good, auth: 'A'.repeat(65) });
    await bad('array body', [good]);
    const anon = await client(s).post('/push/subscribe', good);
    t.same([anon.status, anon.body.type], [401, 'NotAuthenticated']);
    const anonOff = await client(s).post('/push/unsubscribe');
    t.same([anonOff.status, anonOff.body.type], [401, 'NotAuthenticated']);
    t.equal(await s.store.headPosition(), head, 'nothing appended');
    const exact = { ...good, endpoint: `${ep.url}/${'a'.repeat(2048 - ep.url.length - 1)}` };
    t.equal(exact.endpoint.length, 2048);
    t.equal((await carol.api.post('/push/subscribe', exact)).status, 204, '2048 characters are accepted');
    t.equal((await carol.api.post('/push/subscribe', exact)).status, 204, 'subscribing again is idempotent');
    t.equal((await carol.api.post('/push/unsubscribe')).status, 204);
    t.equal((await carol.api.post('/push/unsubscribe')).status, 204, 'unsubscribing without a subscription');
    t.notOk(await subscription(s, carol));
  });

  t.test('5xx is retried with backoff; 410 removes the subscription', async (t) => {
    ep.answer(bobSub.path, 500, 503);
    const id = await send(alice, dm, 'retried');
    t.equal(await jobResult(q, `s-${id}-${bob.sessionId}`), 'sent');
    const tries = pushesOf(ep, id);
    t.same(tries.map((r) => r.status), [500, 503, 201], 'two failures, then delivered');
    t.equal((await Job.fromId(q, `s-${id}-${bob.sessionId}`))!.attemptsMade, 3, 'three attempts made (BullMQ counts the one that succeeded)');

    ep.answer(bobSub.path, 410);
    const gone = await send(alice, dm, 'into the void');
    t.equal(await jobResult(q, `s-${gone}-${bob.sessionId}`), 'gone');
    t.notOk(await subscription(s, bob), 'the subscription was removed');
    const events = await s.store.readStream(`account-${bob.userId}`);
    t.match(events.at(-1), { type: 'PushUnsubscribed', data: { sessionId: bob.sessionId, reason: 'gone', endpoint: bobSub.endpoint } });
    const after = await send(alice, dm, 'nobody listens');
    t.equal(await jobResult(q, `m-${after}`), 0, 'no subscription, no send');

    const sub404 = ep.subscribe();
    t.equal((await bob.api.post('/push/subscribe', sub404)).status, 204);
    ep.answer(sub404.path, 404);
    const nf = await send(alice, dm, 'not found');
    t.equal(await jobResult(q, `s-${nf}-${bob.sessionId}`), 'gone', '404 too');
    t.notOk(await subscription(s, bob));
    t.equal((await bob.api.post('/push/subscribe', bobSub)).status, 204, 'subscribed again');
  });

  t.test('a logout or revocation ends the session subscription', async (t) => {
    const login = await client(s).post('/auth/session/login', { email: bob.email, password: bob.password, friendly_name: 'phone' });
    const phone = client(s, login.body.token);
    const phoneSub = ep.subscribe();
    t.equal((await phone.post('/push/subscribe', phoneSub)).status, 204);
    t.ok(await subscription(s, bob, login.body._id));
    const id = await send(alice, dm, 'two devices');
    t.equal(await jobResult(q, `m-${id}`), 2, 'one send per subscribed session');
    await until('both devices', () => pushesOf(ep, id).length === 2);
    t.equal((await phone.post('/auth/session/logout')).status, 204);
    const account = await s.readModels.getJson<AccountState>(rm.account(bob.userId));
    t.notOk(account?.sessions[login.body._id], 'the session and its subscription are gone');
    const id2 = await send(alice, dm, 'one device');
    t.equal(await jobResult(q, `m-${id2}`), 1);
    const other = await client(s).post('/auth/session/login', { email: bob.email, password: bob.password, friendly_name: 'tablet' });
    t.equal((await client(s, other.body.token).post('/push/subscribe', ep.subscribe())).status, 204);
    t.equal((await bob.api.del(`/auth/session/${other.body._id}`)).status, 204);
    const id3 = await send(alice, dm, 'revoked');
    t.equal(await jobResult(q, `m-${id3}`), 1, 'a revoked session is not pushed to');
  });

  t.test('a suspended user is not pushed to (their sessions ended)', async (t) => {
    t.equal((await carol.api.post('/push/subscribe', ep.subscribe())).status, 204);
    const before = await send(alice, srv.general, `<@${carol.userId}> still here?`);
    t.equal(await jobResult(q, `m-${before}`), 1);
    await runAdmin(['grant', alice.userId, '--role', 'admin'], { store: s.store, print: () => {} });
    await until('admin granted', async () => (await s.readModels.hgetJson('instance:staff', alice.userId)) === 'admin');
    t.equal((await alice.api.post(`/admin/users/${carol.userId}/suspend`, { reason: 'spam' })).status, 200);
    const after = await send(alice, srv.general, `<@${carol.userId}> suspended`);
    t.equal(await jobResult(q, `m-${after}`), 0);
  });

  t.test('rebuild equals live, and re-sends nothing', async (t) => {
    const redis = new Redis(TEST_REDIS_URL);
    t.teardown(() => redis.disconnect());
    const live = await dumpCurrent(redis, s.prefix);
    const acct = live[`account:${bob.userId}`] as AccountState;
    t.ok(acct.sessions[bob.sessionId]?.subscription, 'the live read model holds the subscription');
    t.same(await dumpRebuild(t, redis, { store: s.store, redisUrl: TEST_REDIS_URL, prefix: s.prefix, partitions: s.config.projectorPartitions }), live);
    const before = ep.received.length;
    const counts = await q.getJobCounts('completed', 'waiting', 'active', 'delayed');
    // A process restarting on the same Redis resumes from the push checkpoint: the history is not pushed again.
    const again = await startSibling(t, s, { ...ALLOW_LOOPBACK, ROLES: 'worker' });
    await again.pushWorker!.caughtUp;
    const id = await send(alice, dm, 'after the restart');
    await until('the new push', () => pushesOf(ep, id).length > 0);
    t.equal(ep.received.length, before + 1, 'only the new message was pushed');
    // The push service answers before the send job is recorded as completed: wait for both jobs to settle.
    const settled = async () => (await q.getJobCounts('completed')).completed! - counts.completed!;
    await until('both jobs completed', async () => (await settled()) >= 2);
    t.equal(await settled(), 2, 'one fan-out and one send: nothing of the history');
  });
  t.same(ep.errors, []);
});

t.test('without OUTBOUND_ALLOW_PRIVATE, loopback endpoints are refused at subscribe and at send', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const u = await signup(s);
  const ep = await startPushEndpoint(t);
  const sub = ep.subscribe();
  const r = await u.api.post('/push/subscribe', sub);
  t.same([r.status, r.body.type], [400, 'FailedValidation'], r.text);
  t.match(r.body.error, /^endpoint: /);
  const r2 = await u.api.post('/push/subscribe', { ...sub, endpoint: 'http://localhost:9/x' });
  t.equal(r2.status, 204, 'a name is resolved when connecting, not at subscribe time');
  const details = { endpoint: 'http://localhost:9/x', method: 'POST', headers: {}, body: Buffer.from('x') };
  const agents = (await import('../src/outbound/policy.ts')).guardedAgents(outboundPolicy());
  t.teardown(() => (agents.http.destroy(), agents.https.destroy()));
  await t.rejects(postPush(details, agents, outboundPolicy(), 1000), { code: 'EOUTBOUNDREFUSED' }, 'refused at connect: localhost resolves to loopback');
  await t.rejects(postPush({ ...details, endpoint: sub.endpoint }, agents, outboundPolicy(), 1000), OutboundRefused, 'an IP literal is refused before connecting');
  t.equal(ep.received.length + ep.errors.length, 0, 'nothing reached the endpoint');
});

t.test('per-user budget: at most PUSH_USER_LIMIT sends pending', async (t) => {
  const s = await startTestService(t, { ...ALLOW_LOOPBACK, PUSH_USER_LIMIT: '2', PUSH_TIMEOUT_MS: '60000' });
  const q = pushQueue(t, s);
  const ep = await startPushEndpoint(t);
  const [alice, bob] = await Promise.all([signup(s), signup(s)]);
  await befriend(alice, bob);
  const dm = await dmOf(alice, bob);
  const sub = ep.subscribe();
  await bob.api.post('/push/subscribe', sub);
  const held = ep.hold(sub.path);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push(await send(alice, dm, `burst ${i}`));
  const results = [];
  for (const id of ids) results.push(await jobResult(q, `m-${id}`));
  t.same(results, [1, 1, 0], 'the limit accepts 2 and drops the third');
  held.release();
  await until('the two held pushes', () => ep.received.length === 2);
  for (const id of ids.slice(0, 2)) t.equal(await jobResult(q, `s-${id}-${bob.sessionId}`), 'sent');
  const later = await send(alice, dm, 'budget freed');
  t.equal(await jobResult(q, `m-${later}`), 1, 'delivered sends free the budget');
  await until('the later push', () => pushesOf(ep, later).length === 1);
});

t.test('a worker killed mid-send loses nothing: another worker delivers', async (t) => {
  const s = await startTestService(t, { ...ALLOW_LOOPBACK, ROLES: 'api,media,projector' });
  const q = pushQueue(t, s);
  const ep = await startPushEndpoint(t);
  const [alice, bob] = await Promise.all([signup(s), signup(s)]);
  await befriend(alice, bob);
  const dm = await dmOf(alice, bob);
  const sub: TestSubscription = ep.subscribe();
  await bob.api.post('/push/subscribe', sub);
  const env = { ROLES: 'worker', REDIS_URL: s.config.redisUrl, REDIS_PREFIX: s.prefix, DATA_DIR: s.dataDir, LOG_LEVEL: 'info', PUSH_TIMEOUT_MS: '1000', PUSH_RETRY_DELAY_MS: '20', OUTBOUND_ALLOW_PRIVATE: '127.0.0.0/8' };
  const a = await startRoleProcess(t, env);
  const held = ep.hold(sub.path);
  const id = await send(alice, dm, 'survives a crash');
  const jobId = `s-${id}-${bob.sessionId}`;
  await until('the send to be in delivery', async () => (await (await Job.fromId(q, jobId))?.getState()) === 'active');
  await a.stop('SIGKILL');
  held.release();
  const before = ep.received.length;
  await startRoleProcess(t, env);
  t.equal(await jobResult(q, jobId), 'sent', 'the other worker took the job over');
  t.ok(ep.received.length > before, 'and delivered it');
  t.ok(pushesOf(ep, id).every((r) => r.payload.body === 'survives a crash'));
  t.same(ep.errors, []);
});
