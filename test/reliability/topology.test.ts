/**
 * The scaled-out topology as separate OS processes over ONE event store and ONE Redis prefix — run once over
 * SQLite and once over PostgreSQL (a database of its own; fewer messages, to keep the suite's time): two
 * API processes, one media server, two projector processes (PROJECTOR_PARTITIONS=2, one preferred partition
 * each, PROJECTOR_LEASE_MS=1500) and two media worker processes. Six users send messages (every third
 * with an attachment uploaded to the media server just before) into four channels of two servers (one in
 * each projector partition; one channel only its owner can see), alternating between the two API
 * processes, while every user has a WebSocket on BOTH API processes.
 *
 * Midway, one projector and the worker holding an upload job are killed with SIGKILL at the same moment,
 * and the traffic goes on. Then:
 * - every write was acknowledged (the stand-in projector and the stalled-job retry kept them going), and
 *   the upload whose job the dead worker held was answered 200 and processed by the other worker;
 * - every message is visible through BOTH API processes (GET by id, and each channel's history holds
 *   exactly the acknowledged messages, none twice); every upload is used once and served by the media server;
 * - every socket received the Message event of every message in the channels its user can see, exactly
 *   once and in the log's order per channel, and none of the channel it cannot see;
 * - the surviving projector holds both partition leases, and the read models equal a rebuild from zero.
 */
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import t from 'tap';
import type * as Tap from 'tap';
import { SqliteEventStore } from '../../src/eventstore/sqlite.ts';
import { openPostgresEventStore } from '../../src/eventstore/postgres.ts';
import type { EventStore } from '../../src/eventstore/port.ts';
import { testDatabase } from '../helpers/postgres.ts';
import { partitionOf } from '../../src/partition.ts';
import { Permission as P } from '../../src/permissions/bits.ts';
import { controlKeys, generationPrefix, partitionKeys } from '../../src/readmodel/keys.ts';
import { bullConnection, bullPrefix, queueName } from '../../workers/media/jobs.ts';
import { client, signup, type Res, type TestUser } from '../helpers/http.ts';
import { get, jpeg, upload } from '../helpers/media.ts';
import { startRoleProcess, type RoleProcess } from '../helpers/processes.ts';
import { createServer, dumpGeneration, dumpRebuild, join, type TestServer } from '../helpers/servers.ts';
import { deletePrefix, tempDir, TEST_REDIS_URL, uniquePrefix } from '../helpers/service.ts';
import { until } from '../helpers/wait.ts';
import { connectReady, type WsClient } from '../helpers/ws.ts';

const PARTITIONS = 2;
const USERS = 6;
/** Messages each user sends; the kills happen once a third of all of them are acknowledged. */
const PER_USER_SQLITE = 24;

/** One engine the topology runs over. */
interface Engine {
  name: string;
  perUser: number;
  /** Extra environment for every process (EVENTSTORE_URL). */
  env(t: Tap.Test, dir: string): Promise<Record<string, string>>;
  /** The store, opened by the test itself for its checks. */
  open(dir: string, env: Record<string, string>): Promise<EventStore>;
}

const ENGINES: Engine[] = [
  {
    name: 'SQLite',
    perUser: PER_USER_SQLITE,
    env: async () => ({}),
    open: async (dir) => new SqliteEventStore(`${dir}/events.sqlite`),
  },
  {
    name: 'PostgreSQL',
    perUser: 12,
    env: async (t) => ({ EVENTSTORE_URL: await testDatabase(t, 'topology') }),
    open: (_dir, env) => openPostgresEventStore(env.EVENTSTORE_URL!),
  },
];

/** An acknowledged message. */
interface Sent {
  id: string;
  channel: string;
  content: string;
  author: string;
  attachment: string | undefined;
}

for (const engine of ENGINES) {
t.test(`${engine.name}: two API, one media, two projector and two worker processes; a projector and a worker SIGKILLed under traffic`, async (t) => {
  const PER_USER = engine.perUser;
  const dir = tempDir(t, 'stoat-topology');
  const engineEnv = await engine.env(t, dir);
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const redis = new Redis(TEST_REDIS_URL);
  t.teardown(() => redis.disconnect());
  const ctl = controlKeys(prefix);
  const common = {
    HOST: '127.0.0.1',
    API_PORT: '0',
    MEDIA_PORT: '0',
    DATA_DIR: dir,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: prefix,
    PROJECTOR_PARTITIONS: String(PARTITIONS),
    PROJECTOR_LEASE_MS: '1500',
    // A write into the dead projector's partition waits for the stand-in (a few seconds), not for this.
    PROJECTION_WAIT_MS: '20000',
    RATE_LIMITS: 'off',
    LOG_LEVEL: 'info',
    ...engineEnv,
  };

  // Projectors first, one preferred partition each; wait until each holds its own and both caught up.
  const projectors = await Promise.all([0, 1].map((i) => startRoleProcess(t, { ...common, ROLES: 'projector', PROJECTOR_PARTITION: String(i) })));
  const leases = () => Promise.all([0, 1].map((i) => redis.get(ctl.lease(PARTITIONS, i))));
  const steady = await until('each projector to hold its own partition', async () => {
    const [l0, l1] = await leases();
    return l0 && l1 && l0 !== l1 ? [l0, l1] : undefined;
  }, 60_000);
  const gen = await until('a read-model generation', () => redis.get(ctl.generation), 60_000);
  const gp = generationPrefix(prefix, Number(gen));
  await until('both partitions caught up', async () =>
    (await Promise.all([0, 1].map((i) => redis.get(partitionKeys(prefix, Number(gen), PARTITIONS, i).caughtUp)))).every((v) => v !== null),
    60_000,
  );

  // Every job sleeps a second first: time enough to find a worker holding one and kill it before it is done.
  const worker = { ...common, ROLES: 'worker', MEDIA_JOB_LOCK_MS: '3000', MEDIA_TEST_DELAY_MS: '1000', MEDIA_CONCURRENCY_DEFAULT: '2' };
  const [apiA, apiB, media, ...workers] = await Promise.all([
    startRoleProcess(t, { ...common, ROLES: 'api' }),
    startRoleProcess(t, { ...common, ROLES: 'api' }),
    startRoleProcess(t, { ...common, ROLES: 'media', UPLOAD_DEADLINE_MS: '60000' }),
    startRoleProcess(t, worker),
    startRoleProcess(t, worker),
  ]);
  const A = { apiUrl: apiA.apiUrl! };
  const B = { apiUrl: apiB.apiUrl! };
  const M = { mediaUrl: media.mediaUrl! };
  t.not(A.apiUrl, B.apiUrl, 'two API processes on their own ports');

  // Six users (signed up alternately through both APIs), two servers in different partitions.
  const users: TestUser[] = [];
  for (let i = 0; i < USERS; i++) users.push(await signup(i % 2 ? B : A));
  const [owner1, owner2] = users as [TestUser, TestUser];
  const s1 = await createServer(owner1, 'one');
  let s2: TestServer;
  for (let n = 0; ; n++) {
    s2 = await createServer(owner2, `two-${n}`);
    if (partitionOf(s2.id, PARTITIONS) !== partitionOf(s1.id, PARTITIONS)) break;
    if (n > 30) throw new Error('no server id in the other partition');
  }
  await join(owner1, s1.general, ...users.filter((u) => u !== owner1));
  await join(owner2, s2.general, ...users.filter((u) => u !== owner2));
  const second = await owner1.api.post(`/servers/${s1.id}/channels`, { name: 'second' });
  const secret = await owner1.api.post(`/servers/${s1.id}/channels`, { name: 'secret' });
  t.same([second.status, secret.status], [200, 200], 'two more channels');
  const hidden = await owner1.api.put(`/channels/${secret.body._id}/permissions/default`, { permissions: { allow: 0, deny: Number(P.ViewChannel) } });
  t.equal(hidden.status, 200, 'the secret channel is hidden from everyone but the owner');
  const open = [s1.general, second.body._id as string, s2.general];
  const secretId = secret.body._id as string;
  /** The channels a user can see (and send to). */
  const visible = (u: TestUser) => (u === owner1 ? [...open, secretId] : open);

  // Every user has a socket on each API process.
  const sockets: Array<{ user: TestUser; via: string; ws: WsClient }> = [];
  for (const u of users) for (const [via, api] of [['A', A], ['B', B]] as const) sockets.push({ user: u, via, ws: await connectReady(api, u.token) });
  t.teardown(() => sockets.forEach((s) => s.ws.close()));

  const image = await jpeg(64, 48);
  const uploadOne = (u: TestUser) => upload(M, u.token, 'attachments', image, { filename: 'photo.jpg', contentType: 'image/jpeg' });
  const sent: Sent[] = [];
  const uploaded: string[] = [];
  const refused: string[] = [];
  const record = (what: string, r: Res | null) => refused.push(`${what}: ${r ? `${r.status} ${r.text}` : 'no answer'}`);

  // Each user sends in turn to each channel it can see, alternating API processes; it stops at its first
  // refused write (the test fails then anyway).
  const senders = users.map(async (u, i) => {
    const via = [client(A, u.token), client(B, u.token)];
    const channels = visible(u);
    for (let k = 0; k < PER_USER; k++) {
      const channel = channels[(i + k) % channels.length]!;
      const content = `u${i}-m${k}`;
      let attachment: string | undefined;
      if (k % 3 === 1) {
        const up = await uploadOne(u).catch(() => null);
        if (up?.status !== 200) return record(`upload by u${i}`, up);
        attachment = up.body.id as string;
        uploaded.push(attachment);
      }
      const body = attachment ? { content, attachments: [attachment] } : { content };
      const r = await via[(i + k) % 2]!.post(`/channels/${channel}/messages`, body).catch(() => null);
      if (r?.status !== 200) return record(`send ${content}`, r);
      sent.push({ id: r.body._id, channel, content, author: u.userId, attachment });
    }
  });

  // Midway: SIGKILL the projector of partition 1 and a worker while it holds an upload job.
  const attachments = new Queue(queueName('attachments'), { connection: bullConnection(TEST_REDIS_URL), prefix: bullPrefix(prefix) });
  t.teardown(() => attachments.close());
  await until('a third of the messages', () => sent.length >= (USERS * PER_USER) / 3 || refused.length > 0, 180_000);
  const inFlight = [uploadOne(owner1), uploadOne(owner1)];
  const names = new Map(workers.map((w) => [w.workerName, w]));
  // The worker holding a job is frozen (SIGSTOP) and the job checked to be still active before the kill: on a
  // loaded machine a worker could finish its job between the test seeing it held and the SIGKILL. A worker that
  // did is let go, and the next held job is taken.
  let held: Job | undefined;
  let victim: (typeof workers)[number] | undefined;
  while (!held) {
    const job = await until('a worker process to hold an upload job', async () =>
      (await attachments.getJobs(['active'])).find((j) => j.processedBy && names.has(j.processedBy)),
      60_000,
    );
    const w = names.get(job.processedBy!)!;
    process.kill(w.pid, 'SIGSTOP');
    if ((await job.getState()) === 'active') [held, victim] = [job, w];
    else process.kill(w.pid, 'SIGCONT');
  }
  victim = victim!;
  const survivor = workers.find((w) => w !== victim)!;
  const killedAt = sent.length;
  await Promise.all([victim.stop('SIGKILL'), projectors[1]!.stop('SIGKILL')]);
  t.pass(`SIGKILLed projector 1 and worker ${victim.pid} (holding job ${held.id}) after ${killedAt} messages`);

  await Promise.all(senders);
  const extra = await Promise.all(inFlight);
  t.same(refused, [], 'every write was acknowledged, also while the stand-ins took over');
  t.same(extra.map((r) => r.status), [200, 200], 'the uploads in flight at the kill were answered 200');
  const extraIds = extra.filter((r) => r.status === 200).map((r) => r.body.id as string);
  uploaded.push(...extraIds);
  t.ok(uploaded.includes(held.id!), "the killed worker's job was answered");
  const retried = await Job.fromId(attachments, held.id!);
  // BullMQ hands a job over its stall limit to the next worker only to fail it there: check how it ended too.
  t.equal(retried?.processedBy, survivor.workerName, "the killed worker's job went to the other worker");
  t.same({ failed: retried?.failedReason ?? null, outcome: retried?.returnvalue?.status }, { failed: null, outcome: 'uploaded' }, 'which stored the upload');
  // The two extra uploads are used too (one message), so every acknowledged upload ends up used.
  if (extraIds.length) {
    const last = await client(A, owner1.token).post(`/channels/${s1.general}/messages`, { content: 'late', attachments: extraIds });
    t.equal(last.status, 200, 'the uploads in flight at the kill can be used');
    if (last.status === 200) sent.push({ id: last.body._id, channel: s1.general, content: 'late', author: owner1.userId, attachment: undefined });
  }
  t.ok(sent.length > killedAt + USERS, `${sent.length - killedAt} messages acknowledged after the kill`);
  const deadServer = [s1, s2].find((s) => partitionOf(s.id, PARTITIONS) === 1)!;
  const deadChannels = deadServer === s1 ? [...visible(owner1)].filter((c) => c !== s2.general) : [s2.general];
  t.ok(sent.slice(killedAt).some((m) => deadChannels.includes(m.channel)), "some of them went to the dead projector's partition");

  // The surviving projector took partition 1 over.
  const [l0, l1] = await leases();
  t.equal(l0, steady[0], 'projector 0 kept its partition');
  t.equal(l1, l0, 'and holds the dead projector\'s partition too');

  // Every acknowledged message through BOTH API processes.
  const viaOwner = [client(A, owner1.token), client(B, owner1.token)];
  let wrong = 0;
  for (const m of sent) {
    for (const api of viaOwner) {
      const r = await api.get(`/channels/${m.channel}/messages/${m.id}`);
      const files = (r.body?.attachments ?? []).map((f: { _id: string }) => f._id);
      const want = m.content === 'late' ? extraIds : m.attachment ? [m.attachment] : [];
      if (r.status !== 200 || r.body.content !== m.content || r.body.author !== m.author || JSON.stringify(files) !== JSON.stringify(want)) {
        wrong++;
        t.fail(`${m.content} through ${api === viaOwner[0] ? 'A' : 'B'}: ${r.status} ${r.text}`);
      }
    }
  }
  t.equal(wrong, 0, `each of the ${sent.length} messages is visible through both API processes`);
  for (const [name, api] of [['A', viaOwner[0]!], ['B', viaOwner[1]!]] as const) {
    for (const channel of [...open, secretId]) {
      const ids: string[] = [];
      for (let before: string | undefined; ; ) {
        const page = await api.get(`/channels/${channel}/messages?limit=100${before ? `&before=${before}` : ''}`);
        if (page.status !== 200) throw new Error(`history ${page.status} ${page.text}`);
        if (page.body.length === 0) break;
        ids.push(...page.body.map((x: { _id: string }) => x._id));
        before = page.body[page.body.length - 1]._id;
      }
      const want = sent.filter((m) => m.channel === channel).map((m) => m.id);
      t.equal(new Set(ids).size, ids.length, `history of ${channel} through ${name}: no message twice`);
      t.same([...ids].sort(), [...want].sort(), `history of ${channel} through ${name}: exactly the acknowledged messages`);
    }
  }

  // Every acknowledged upload: used once, served by the media server (original and preview).
  const store = await engine.open(dir, engineEnv);
  t.teardown(() => store.close());
  let served = 0;
  for (const id of uploaded) {
    const types = (await store.readStream(`file-${id}`)).map((e) => e.type);
    const original = await get(`${M.mediaUrl}/attachments/${id}/original`);
    const preview = await get(`${M.mediaUrl}/attachments/${id}`);
    if (JSON.stringify(types) === '["FileUploaded","FileAttached"]' && original.status === 200 && original.bytes.length > 0 && preview.status === 200) served++;
    else t.fail(`upload ${id}: events ${types.join(',')}, original ${original.status}, preview ${preview.status}`);
  }
  t.equal(served, uploaded.length, `each of the ${uploaded.length} uploads was processed once, used once and is served`);

  // Sockets: every Message of every channel the user sees, once, in the log's order per channel.
  const logOrder = new Map<string, string[]>();
  for await (const e of store.readAll()) {
    if (e.type !== 'MessageSent') continue;
    const { _id, channel } = (e.data as { message: { _id: string; channel: string } }).message;
    logOrder.set(channel, [...(logOrder.get(channel) ?? []), _id]);
  }
  t.same(
    [...logOrder.values()].flat().sort(),
    sent.map((m) => m.id).sort(),
    'the log holds exactly the acknowledged messages',
  );
  const received = (s: (typeof sockets)[number], channel: string) => s.ws.events.filter((e) => e.type === 'Message' && e.channel === channel).map((e) => e._id as string);
  const complete = (s: (typeof sockets)[number]) => visible(s.user).every((c) => received(s, c).length >= (logOrder.get(c) ?? []).length);
  // One deadline for all of them; what is missing then shows below.
  await until('every socket to receive every message', () => sockets.every(complete), 60_000).catch(() => undefined);
  for (const s of sockets) {
    const who = `${s.user === owner1 ? 'owner' : s.user.userId}'s socket on ${s.via}`;
    for (const c of visible(s.user)) t.same(received(s, c), logOrder.get(c) ?? [], `${who}: channel ${c} complete, once each, in order`);
    if (s.user !== owner1) t.same(received(s, secretId), [], `${who}: nothing of the channel it cannot see`);
  }

  // The read models equal a rebuild from zero once both partitions passed the log head.
  const head = (await store.headPosition())!;
  await until('both partitions to reach the log head', async () =>
    (await Promise.all([0, 1].map((i) => redis.get(partitionKeys(prefix, Number(gen), PARTITIONS, i).checkpoint)))).every((v) => v !== null && BigInt(v) >= head),
    60_000,
  );
  t.equal(await redis.get(ctl.generation), gen, 'still the same generation (no rebuild happened)');
  const live = await dumpGeneration(redis, gp);
  const rebuilt = await dumpRebuild(t, redis, { store, redisUrl: TEST_REDIS_URL, prefix, partitions: PARTITIONS, dataDir: dir, eventStoreUrl: engineEnv.EVENTSTORE_URL });
  t.same(Object.keys(live), Object.keys(rebuilt), 'same read-model keys as a rebuild from zero');
  const differing = Object.keys(live).filter((k) => JSON.stringify(live[k]) !== JSON.stringify(rebuilt[k]));
  const pick = (o: Record<string, unknown>) => Object.fromEntries(differing.map((k) => [k, o[k]]));
  t.same(pick(live), pick(rebuilt), 'same values: no event applied twice or skipped across the takeover');
});
}
