/**
 * A small Redis footprint per message (issue 37 §2): a 300-byte message sent into a server channel costs Redis
 * the record set and almost nothing else (≤ 700 bytes, the `footprint` bench row measures the same at 10k–20k
 * sends), no queue job is kept for a message that cannot push, the jobs of the log followers are kept by count
 * (never for an hour of traffic), and a worker process that lags another skips what the shared checkpoint says
 * is handled instead of relying on kept job ids.
 */
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { Queue, Worker } from 'bullmq';
import { createRedis } from '../src/redis.ts';
import { createLogger } from '../src/log.ts';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import type { NewEvent, RecordedEvent } from '../src/eventstore/port.ts';
import { FOLLOWER_JOBS_KEPT, followLog, decodeCheckpoint } from '../src/eventstore/rewind.ts';
import { PREVIEW_QUEUE } from '../src/previews/queue.ts';
import { PUSH_QUEUE } from '../workers/push/worker.ts';
import { bullConnection, bullPrefix } from '../workers/media/jobs.ts';
import { FOOTPRINT_CONTENT } from '../bench/footprint.ts';
import { signup } from './helpers/http.ts';
import { createServer, join } from './helpers/servers.ts';
import { deletePrefix, startTestService, TEST_REDIS_URL, tempDir, uniquePrefix } from './helpers/service.ts';
import { until } from './helpers/wait.ts';

/** Bytes per message a send into a server channel may add to Redis (issue 37). */
const BUDGET = 700;

/** MEMORY USAGE of every key under `prefix` but the live streams (capped at 10,000 entries: not a per-message cost once full). */
async function bytesUnder(redis: ReturnType<typeof createRedis>, prefix: string): Promise<{ bytes: number; keys: string[] }> {
  let bytes = 0;
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    for (const k of batch) {
      keys.push(k);
      if (k.startsWith(`${prefix}{live}:`)) continue;
      bytes += Number(await redis.memory('USAGE', k, 'SAMPLES', 0));
    }
  } while (cursor !== '0');
  return { bytes, keys };
}

/** Runs `fn(i)` for i < n, `width` at a time. */
async function inFlight(n: number, width: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) await fn(next++);
  }));
}

t.test('a 300-byte send into a server channel adds ≤ 700 bytes to Redis on the default topology, and no job', async (t) => {
  const svc = await startTestService(t, { RATE_LIMITS: 'off' });
  const redis = createRedis(TEST_REDIS_URL);
  t.teardown(() => redis.disconnect());
  const owner = await signup(svc);
  const member = await signup(svc);
  const server = await createServer(owner);
  await join(owner, server.general, member);
  const channels = [server.general];
  channels.push((await owner.api.post(`/servers/${server.id}/channels`, { name: 'second' })).body._id);
  t.equal(Buffer.byteLength(FOOTPRINT_CONTENT), 300);
  const users = [owner, member];
  const send = (n: number) =>
    inFlight(n, 8, async (i) => {
      const r = await users[i % 2]!.api.post(`/channels/${channels[i % channels.length]}/messages`, { content: FOOTPRINT_CONTENT });
      if (r.status !== 200) throw new Error(`send: ${r.status} ${JSON.stringify(r.body)}`);
    });
  // The push and previews followers have passed every send (their checkpoints reached the log's head).
  const settled = async () => {
    const head = (await svc.store.headPosition())!;
    await until('the followers reached the head', async () => {
      const cps = await redis.mget(`${svc.prefix}push:cp`, `${svc.prefix}previews:cp`);
      return cps.every((c) => c !== null && decodeCheckpoint(c).position >= head);
    });
  };
  // Past the first 128 of each channel, so every history is in its steady encoding (a skiplist) before measuring.
  await send(300);
  await settled();
  const before = await bytesUnder(redis, svc.prefix);
  const n = 600;
  await send(n);
  await settled();
  const after = await bytesUnder(redis, svc.prefix);
  const perMessage = (after.bytes - before.bytes) / n;
  t.ok(perMessage <= BUDGET, `${perMessage.toFixed(0)} bytes per message (budget ${BUDGET})`);
  t.ok(perMessage >= 300, `the record set is there (${perMessage.toFixed(0)} bytes per message)`);
  t.ok(after.keys.length - before.keys.length < n / 10, `no key per message (${after.keys.length - before.keys.length} keys more after ${n} sends)`);

  const connection = bullConnection(TEST_REDIS_URL);
  const prefix = bullPrefix(svc.prefix, TEST_REDIS_URL);
  for (const name of [PUSH_QUEUE, PREVIEW_QUEUE]) {
    const q = new Queue(name, { connection, prefix });
    const counts = await q.getJobCounts();
    await q.close();
    t.equal(Object.values(counts).reduce((a, b) => a + b, 0), 0, `no ${name} job for 900 messages that cannot push and have no link`);
  }

  // A message that could push (it mentions someone) does get its job, kept by count.
  const mention = await owner.api.post(`/channels/${server.general}/messages`, { content: `<@${member.userId}> hello` });
  t.equal(mention.status, 200);
  const q = new Queue(PUSH_QUEUE, { connection, prefix });
  t.teardown(() => q.close());
  const job = await until('the mention\'s push job', async () => (await q.getJob(`m-${mention.body._id}`)) ?? undefined);
  t.same(job.opts.removeOnComplete, { count: 1000 }, 'a push job is kept by count, not by age');
  t.same(job.opts.removeOnFail, FOLLOWER_JOBS_KEPT.removeOnFail);
});

t.test('the followers\' jobs are kept by count: the 1,001st completed job removes the oldest', async (t) => {
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const connection = bullConnection(TEST_REDIS_URL);
  const q = new Queue('kept', { connection, prefix: `${prefix}bull` });
  t.teardown(() => q.close());
  const n = 1100;
  await q.addBulk(Array.from({ length: n }, (_, i) => ({ name: 'x', data: {}, opts: { ...FOLLOWER_JOBS_KEPT, jobId: `j-${i}` } })));
  const w = new Worker('kept', async () => 1, { connection, prefix: `${prefix}bull`, concurrency: 50 });
  t.teardown(() => w.close());
  await until('every job ran', async () => (await q.getJobCounts('wait', 'active', 'delayed')).wait === 0 && (await q.getJobCounts('active')).active === 0 && (await q.getCompletedCount()) >= 1000);
  await until('the completed set is capped', async () => (await q.getCompletedCount()) === 1000);
  await new Promise((r) => setTimeout(r, 200));
  t.equal(await q.getCompletedCount(), 1000, 'the newest 1,000 completed jobs are kept, no more');
});

t.test('a follower that lags another skips what the shared checkpoint says is handled', async (t) => {
  const dir = tempDir(t, 'fp-follow');
  const store = new SqliteEventStore(path.join(dir, 'e.sqlite'));
  t.teardown(() => store.close());
  const redis = createRedis(TEST_REDIS_URL);
  t.teardown(() => redis.disconnect());
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const cpKey = `${prefix}cp`;
  const log = createLogger('silent');
  const ev = (n: string): NewEvent => ({ id: randomUUID(), type: 'Noted', data: { n }, metadata: { actor: null, requestId: n, at: new Date().toISOString(), scope: 's' } });
  const names = (es: RecordedEvent[]) => es.map((e) => (e.data as { n: string }).n);

  const fast: RecordedEvent[] = [];
  const slow: RecordedEvent[] = [];
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let holding = false;
  // b alone first: it takes the first event and is stuck on it (the lagging process); a starts meanwhile.
  const offered: string[] = [];
  const b = await followLog({
    store,
    redis,
    cpKey,
    by: 'b',
    log,
    // Every event b reads is offered here first, before the shared checkpoint is consulted.
    wants: (e) => {
      offered.push((e.data as { n: string }).n);
      return true;
    },
    onEvents: async (es) => {
      slow.push(...es);
      if (!holding) {
        holding = true;
        await held;
      }
    },
  });
  t.teardown(() => b.close());
  await b.caughtUp;
  await store.append('note-1', [ev('1')], 'any');
  await until('b is stuck on the first event', async () => holding);
  const a = await followLog({ store, redis, cpKey, by: 'a', log, onEvents: async (es) => void fast.push(...es) });
  t.teardown(() => a.close());
  await store.append('note-2', [ev('2')], 'any');
  await store.append('note-3', [ev('3')], 'any');
  const head = (await store.headPosition())!;
  await until('a handled everything', async () => fast.length === 3 && decodeCheckpoint((await redis.get(cpKey))!).position === head);
  release();
  // b reads 2 and 3 after a handled them; closing waits for the batch b is in.
  await until('b read the third event', async () => offered.includes('3'));
  await b.close();
  t.same(names(fast), ['1', '2', '3']);
  t.same(names(slow), ['1'], 'the lagging follower never handled what the other had');
});
