/**
 * The shards of a generation (src/readmodel/keys.ts `SHARDS`, docs/ARCHITECTURE.md "Redis Cluster"): with split
 * commits (what a cluster does) a batch commits its partition's home slot (checkpoint and spread record), then
 * the main slot and each shard it wrote, each with its own checkpoint. A crash between those commits is finished
 * from the home slot's redo log by the next runner, and two runners racing are settled per slot by the WATCHed
 * checkpoints: every event is applied exactly once in every slot.
 * These run on one Redis with `splitCommits` forced; test/redis.cluster.reshard.test.ts runs the split commits on a real cluster.
 */
import path from 'node:path';
import t from 'tap';
import { Redis } from 'ioredis';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import type { NewEvent } from '../src/eventstore/port.ts';
import { createLogger } from '../src/log.ts';
import { PartitionRunner } from '../projections/runner.ts';
import type { Projection } from '../projections/types.ts';
import { controlKeys, MAIN_SLOT, partitionKeys, readModelKey, SHARDS, shardOf, shardOfKey, shardTag, slotCheckpointKey, slotOfTag } from '../src/readmodel/keys.ts';
import { deletePrefix, tempDir, TEST_REDIS_URL, uniquePrefix, type Teardownable } from './helpers/service.ts';
import { until } from './helpers/wait.ts';
import { ReadModels } from '../src/readmodel/reader.ts';

const log = createLogger('silent');

const INCR = `return redis.call('INCR', KEYS[1])`;

/**
 * Counts per "channel" in its spread key (`lastmsg:<ch>`, a shard) and in total in a main-slot key, each by
 * read-modify-write: an event applied twice, or skipped, shows in the counts. And each again by an INCR in Redis
 * (`lastmsg:<ch>.n`, `count.n`): a command applied twice shows there even where a SET of the same value would not.
 */
const counter: Projection = {
  name: 'counter',
  handles: ['EmailClaimed'],
  async apply(e, tx) {
    const ch = (e.data as { userId: string }).userId;
    const n = (await tx.getJson<number>(`lastmsg:${ch}`)) ?? 0;
    tx.setJson(`lastmsg:${ch}`, n + 1);
    tx.eval(INCR, [`lastmsg:${ch}.n`], []);
    const all = (await tx.getJson<number>('count')) ?? 0;
    tx.setJson('count', all + 1);
    tx.eval(INCR, ['count.n'], []);
  },
};

const CHANNELS = Array.from({ length: 40 }, (_, i) => `ch${i}`);

async function seed(t: Teardownable, total: number) {
  const dir = tempDir(t);
  const store = new SqliteEventStore(path.join(dir, 'e.sqlite'), { pollIntervalMs: 5 });
  t.teardown(() => store.close());
  const meta = { actor: null, requestId: 'r', at: new Date(0).toISOString(), scope: 'x' };
  const expected = new Map<string, number>();
  for (let i = 0; i < total; i += 50) {
    const batch: NewEvent[] = Array.from({ length: 50 }, (_, j) => {
      const ch = CHANNELS[(i + j) % CHANNELS.length]!;
      expected.set(ch, (expected.get(ch) ?? 0) + 1);
      return { id: crypto.randomUUID(), type: 'EmailClaimed', data: { userId: ch }, metadata: meta };
    });
    await store.append(`email-${i}`, batch, 'no_stream');
  }
  return { store, expected };
}

async function counts(redis: Redis, prefix: string) {
  const out = new Map<string, number>();
  const incrs = new Map<string, number>();
  for (const ch of CHANNELS) {
    out.set(ch, JSON.parse((await redis.get(readModelKey(prefix, 1, `lastmsg:${ch}`))) ?? '0') as number);
    incrs.set(ch, Number((await redis.get(readModelKey(prefix, 1, `lastmsg:${ch}.n`))) ?? '0'));
  }
  return {
    perChannel: out,
    perChannelIncr: incrs,
    total: JSON.parse((await redis.get(readModelKey(prefix, 1, 'count'))) ?? '0') as number,
    totalIncr: Number((await redis.get(readModelKey(prefix, 1, 'count.n'))) ?? '0'),
  };
}

t.test('shard keys: the name shows the shard, the shards cover the channels', async (t) => {
  t.equal(shardOfKey('channel:01ABC:history'), shardOf('01ABC'));
  t.equal(shardOfKey('lastmsg:01ABC'), shardOf('01ABC'));
  t.equal(shardOfKey('channel:01ABC'), shardOf('01ABC'), 'a server channel is in its shard');
  t.equal(shardOfKey('channel:01ABC:files'), shardOf('01ABC'), "a channel's files are in its shard");
  t.equal(shardOfKey('channel:01ABC:webhooks'), shardOf('01ABC'), "and its webhooks");
  t.equal(shardOfKey('pchannel:01ABC'), shardOf('01ABC'), 'a private channel is in its shard');
  t.equal(shardOfKey('instance:staff'), -1, 'instance-wide singletons stay in the main slot');
  t.match(readModelKey('p:', 3, 'lastmsg:01ABC'), new RegExp(`^p:\\{g3\\.${shardOf('01ABC')}\\.\\d+\\}:lastmsg:01ABC$`));
  // Redis Cluster's key slots (CLUSTER KEYSLOT): CRC16 mod 16384.
  t.same(['somekey', 'foo', 'hello', '123456789'].map(slotOfTag), [11058, 12182, 866, 0x31c3 & 16383]);
  // Each shard's tag falls in its own 1/64 of the slots: masters with equal slot ranges hold equal numbers of shards.
  for (const gen of [1, 2, 77]) {
    const buckets = Array.from({ length: SHARDS }, (_, s) => Math.floor(slotOfTag(shardTag(gen, s)) / (16384 / SHARDS)));
    t.same(buckets, Array.from({ length: SHARDS }, (_, s) => s), `generation ${gen}: shard s in the s-th range of slots`);
  }
  t.equal(readModelKey('p:', 3, 'holds'), 'p:{g3}:holds');
  t.equal(readModelKey('p:', 3, 'server:1'), `p:{${shardTag(3, shardOf('1'))}}:server:1`);
  t.ok(new Set(CHANNELS.map(shardOf)).size >= 20, `40 channels fall into ${new Set(CHANNELS.map(shardOf)).size} of ${SHARDS} shards`);
});

t.test('split commits: a crash after the main slot committed, with some shards committed and some not, applies nothing twice', async (t) => {
  const total = 600;
  const { store, expected } = await seed(t, total);
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const check = new Redis(TEST_REDIS_URL);
  t.teardown(() => check.disconnect());
  // Odd shards commit on a connection of their own, which the fault closes after the third main commit:
  // the even shards of that batch commit, the odd ones fail, and the runner stops.
  const main = new Redis(TEST_REDIS_URL);
  const odd = new Redis(TEST_REDIS_URL);
  odd.on('error', () => {});
  t.teardown(() => [main, odd].forEach((c) => c.disconnect()));
  const shardRedis = Array.from({ length: SHARDS }, (_, s) => (s % 2 === 1 ? odd : main));
  let mains = 0;
  const stops: string[] = [];
  const first = new PartitionRunner({
    store,
    redis: main,
    prefix,
    generation: 1,
    partition: 0,
    partitions: 1,
    projections: [counter],
    log,
    rebuilding: false,
    batchSize: 23,
    splitCommits: true,
    shardRedis,
    afterMainExec: () => {
      if (++mains === 3) odd.disconnect();
    },
    onStop: (r) => stops.push(r),
  });
  await first.start();
  await until('the first runner stopped on the fault', () => stops.length > 0);
  await first.stop();
  t.same(stops, ['error'], 'the runner stopped with an error');
  const home = partitionKeys(prefix, 1, 1, 0);
  const spreadKey = home.spread;
  const record = JSON.parse((await check.get(spreadKey))!) as { f: string | null; t: string; v: number[] };
  t.ok(record.v.some((s) => s % 2 === 1), `the spread record names the odd shards still to commit (${record.v.join(',')})`);
  const cp = await check.get(home.checkpoint);
  t.equal(cp, record.t, 'the home slot has the batch');
  t.equal(await check.get(slotCheckpointKey(prefix, 1, 1, 0, MAIN_SLOT)), record.t, 'and so has the main slot (its own checkpoint)');
  t.ok(record.v.includes(MAIN_SLOT), 'the record names the main slot the batch wrote');
  const before = await counts(check, prefix);
  t.equal(before.total, 3 * 23, 'three batches counted in the main slot');
  const inShards = [...before.perChannel.values()].reduce((a, n) => a + n, 0);
  t.ok(inShards < before.total, `the shards lack part of the third batch (${inShards} of ${before.total})`);

  // Read-your-writes: while the record is there, readers take the partition to be at its start, not at the
  // checkpoint (a write of the third batch is not yet readable in every shard).
  await check.set(controlKeys(prefix).generation, '1');
  const sub = new Redis(TEST_REDIS_URL);
  t.teardown(() => sub.disconnect());
  const readModels = new ReadModels({ redis: check, subscriber: sub, prefix, partitions: 1, log, waitMs: 1500 });
  await readModels.start();
  t.teardown(() => readModels.close());
  await readModels.waitFor('x', BigInt(record.f!));
  t.pass('a write up to the record\'s start is readable');
  const waited = await readModels.waitFor('x', BigInt(record.t)).then(() => 'resolved', (err: { status?: number }) => err.status);
  t.equal(waited, 503, 'a write of the batch still in flight waits (503 at the deadline)');

  const redo = await check.hgetall(home.redo);
  t.same(Object.keys(redo).map(Number).sort((a, b) => a - b), record.v, "the redo log holds the batch's commands for every slot the record names");
  // A new runner (new connections) applies the logged commands to the slots that lack them, then goes on.
  const main2 = new Redis(TEST_REDIS_URL);
  const odd2 = new Redis(TEST_REDIS_URL);
  t.teardown(() => [main2, odd2].forEach((c) => c.disconnect()));
  const second = new PartitionRunner({
    store,
    redis: main2,
    prefix,
    generation: 1,
    partition: 0,
    partitions: 1,
    projections: [counter],
    log,
    rebuilding: false,
    batchSize: 17,
    splitCommits: true,
    shardRedis: Array.from({ length: SHARDS }, (_, s) => (s % 2 === 1 ? odd2 : main2)),
  });
  await second.start();
  const head = (await store.headPosition())!.toString();
  await until('the second runner at the head', async () => (await check.get(home.checkpoint)) === head && (await check.exists(spreadKey)) === 0);
  await second.stop();
  const after = await counts(check, prefix);
  t.equal(after.total, total, 'the main slot counted every event once');
  t.same(Object.fromEntries(after.perChannel), Object.fromEntries(expected), 'every shard counted each of its events once');
  t.equal(after.totalIncr, total, 'and applied each INCR of the main slot once');
  t.same(Object.fromEntries(after.perChannelIncr), Object.fromEntries(expected), 'and each INCR of a shard once');
});

/** Counts every event in one main-slot key only: a batch of it writes the main slot and no shard. */
const mainCounter: Projection = {
  name: 'mainCounter',
  handles: ['EmailClaimed'],
  async apply(_e, tx) {
    const all = (await tx.getJson<number>('count')) ?? 0;
    tx.setJson('count', all + 1);
  },
};

t.test('split commits: a crash after the home slot committed, before the main slot did, applies the main slot\'s writes once', async (t) => {
  const total = 300;
  const { store } = await seed(t, total);
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const check = new Redis(TEST_REDIS_URL);
  t.teardown(() => check.disconnect());
  // The main slot commits on a connection of its own, which the fault closes after the third home commit.
  const homeConn = new Redis(TEST_REDIS_URL);
  const mainConn = new Redis(TEST_REDIS_URL);
  mainConn.on('error', () => {});
  t.teardown(() => [homeConn, mainConn].forEach((c) => c.disconnect()));
  let homes = 0;
  const stops: string[] = [];
  const first = new PartitionRunner({
    store,
    redis: homeConn,
    prefix,
    generation: 1,
    partition: 0,
    partitions: 1,
    projections: [mainCounter],
    log,
    rebuilding: false,
    batchSize: 23,
    splitCommits: true,
    mainRedis: mainConn,
    afterHomeExec: () => {
      if (++homes === 3) mainConn.disconnect();
    },
    onStop: (r) => stops.push(r),
  });
  await first.start();
  await until('the first runner stopped on the fault', () => stops.length > 0);
  await first.stop();
  t.same(stops, ['error'], 'the runner stopped with an error');
  const home = partitionKeys(prefix, 1, 1, 0);
  const record = JSON.parse((await check.get(home.spread))!) as { f: string | null; t: string; v: number[] };
  t.same(record.v, [MAIN_SLOT], 'the spread record names the main slot, the only slot the batch wrote');
  t.equal(await check.get(home.checkpoint), record.t, 'the home slot has the third batch');
  t.equal(await check.get(slotCheckpointKey(prefix, 1, 1, 0, MAIN_SLOT)), record.f, 'the main slot has the second');
  t.equal(JSON.parse((await check.get(readModelKey(prefix, 1, 'count')))!), 2 * 23, 'two batches counted in the main slot');

  const conn2 = new Redis(TEST_REDIS_URL);
  const main2 = new Redis(TEST_REDIS_URL);
  t.teardown(() => [conn2, main2].forEach((c) => c.disconnect()));
  const second = new PartitionRunner({
    store,
    redis: conn2,
    prefix,
    generation: 1,
    partition: 0,
    partitions: 1,
    projections: [mainCounter],
    log,
    rebuilding: false,
    batchSize: 17,
    splitCommits: true,
    mainRedis: main2,
  });
  await second.start();
  const head = (await store.headPosition())!.toString();
  await until('the second runner at the head', async () => (await check.get(home.checkpoint)) === head && (await check.exists(home.spread)) === 0);
  await second.stop();
  t.equal(JSON.parse((await check.get(readModelKey(prefix, 1, 'count')))!), total, 'the main slot counted every event once');
  t.equal(await check.get(slotCheckpointKey(prefix, 1, 1, 0, MAIN_SLOT)), head, "the main slot's checkpoint at the head");
});

t.test('split commits: two runners racing on one partition apply every event exactly once in every slot', async (t) => {
  const total = 600;
  const { store, expected } = await seed(t, total);
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const conns = [new Redis(TEST_REDIS_URL), new Redis(TEST_REDIS_URL), new Redis(TEST_REDIS_URL), new Redis(TEST_REDIS_URL), new Redis(TEST_REDIS_URL)];
  t.teardown(() => conns.forEach((c) => c.disconnect()));
  const stops: string[] = [];
  const mk = (redis: Redis, shard: Redis, batchSize: number) =>
    new PartitionRunner({
      store,
      redis,
      prefix,
      generation: 1,
      partition: 0,
      partitions: 1,
      projections: [counter],
      log,
      rebuilding: false,
      batchSize,
      splitCommits: true,
      shardRedis: Array.from({ length: SHARDS }, (_, s) => (s % 3 === 0 ? redis : shard)),
      onStop: (r) => stops.push(r),
    });
  const a = mk(conns[0]!, conns[1]!, 7);
  const b = mk(conns[2]!, conns[3]!, 11);
  await Promise.all([a.start(), b.start()]);
  const check = conns[4]!;
  const { checkpoint: cpKey, spread: spreadKey } = partitionKeys(prefix, 1, 1, 0);
  const head = (await store.headPosition())!.toString();
  // Both may stop (each loses a race somewhere): a third runner then finishes from where they left.
  await until('one runner at the head, or both stopped', async () => (await check.get(cpKey)) === head || stops.length >= 2);
  await Promise.all([a.stop(), b.stop()]);
  if ((await check.get(cpKey)) !== head || (await check.exists(spreadKey)) === 1) {
    const c = new Redis(TEST_REDIS_URL);
    t.teardown(() => c.disconnect());
    const third = mk(c, c, 13);
    await third.start();
    await until('the third runner at the head', async () => (await check.get(cpKey)) === head && (await check.exists(spreadKey)) === 0);
    await third.stop();
  }
  const after = await counts(check, prefix);
  t.equal(after.total, total, 'every event counted once in the main slot');
  t.same(Object.fromEntries(after.perChannel), Object.fromEntries(expected), 'and once in its shard');
  t.equal(after.totalIncr, total, 'every INCR applied once in the main slot');
  t.same(Object.fromEntries(after.perChannelIncr), Object.fromEntries(expected), 'and once in its shard');
  t.ok(stops.includes('checkpoint-lost'), 'a loser of the race noticed and stopped');
});

t.test('a storage error while a runner starts (before it follows the log) stops it and tells its owner', async (t) => {
  // On a cluster a slot being moved answers ASK or TRYAGAIN to the runner's plain connections; a closed connection
  // stands in for that here. A runner that threw from start() instead stayed its partition's owner without
  // following the log, its lease renewed by the projector: the partition stood still for good.
  const { store } = await seed(t, 50);
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  for (const broken of ['the home slot', 'a shard'] as const) {
    const home = new Redis(TEST_REDIS_URL);
    const shard = new Redis(TEST_REDIS_URL);
    for (const c of [home, shard]) c.on('error', () => {});
    await Promise.all([home.ping(), shard.ping()]);
    (broken === 'the home slot' ? home : shard).disconnect();
    const stops: string[] = [];
    const runner = new PartitionRunner({
      store,
      redis: home,
      prefix,
      generation: 1,
      partition: 0,
      partitions: 1,
      projections: [counter],
      log,
      rebuilding: false,
      splitCommits: true,
      shardRedis: Array.from({ length: SHARDS }, () => shard),
      onStop: (r) => stops.push(r),
    });
    await t.resolves(runner.start(), `${broken}: start() settles`);
    t.same(stops, ['error'], `${broken}: the owner is told the runner stopped`);
    await runner.stop();
    home.disconnect();
    shard.disconnect();
  }
});
