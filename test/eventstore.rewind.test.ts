/**
 * Checkpoints that record what they point at (issue 36 §1): `EventStore.eventIdAt` on every engine, and the
 * followers that act outside the service (push, previews, voice enforcer share `followLog`) after a log that
 * went back in time: no delivery repeated, every new event delivered, the rewind recorded once in the log.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createRedis } from '../src/redis.ts';
import { createLogger } from '../src/log.ts';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import { openPostgresEventStore } from '../src/eventstore/postgres.ts';
import { openKurrentEventStore } from '../src/eventstore/kurrent.ts';
import type { EventStore, NewEvent, RecordedEvent } from '../src/eventstore/port.ts';
import { followLog, recordRewind, REWIND_STREAM, type LogRewoundData } from '../src/eventstore/rewind.ts';
import { startKurrentDouble } from './helpers/kurrentDouble.ts';
import { testDatabase } from './helpers/postgres.ts';
import { deletePrefix, TEST_REDIS_URL, tempDir, uniquePrefix } from './helpers/service.ts';
import { until, WAIT_MS } from './helpers/wait.ts';

const log = createLogger('silent');

function ev(n: string): NewEvent {
  return { id: randomUUID(), type: 'Noted', data: { n }, metadata: { actor: null, requestId: n, at: new Date().toISOString(), scope: 's' } };
}

async function add(store: EventStore, ...names: string[]): Promise<void> {
  for (const n of names) await store.append(`note-${n}`, [ev(n)], 'any');
}

const names = (events: RecordedEvent[]) => events.map((e) => (e.stream === REWIND_STREAM ? 'rewind' : (e.data as { n: string }).n));

async function follow(t: Test, store: EventStore, redis: ReturnType<typeof createRedis>, cpKey: string, checkEveryMs = 5000) {
  const seen: RecordedEvent[] = [];
  const f = await followLog({ store, redis, cpKey, by: 'test', log, checkEveryMs, onEvents: async (events) => void seen.push(...events) });
  t.teardown(() => f.close());
  await f.caughtUp;
  return { seen, f };
}

t.test('eventIdAt: the id at an exact position, none past the head or between positions', async (t) => {
  const dir = tempDir(t, 'rw-ids');
  const sqlite = new SqliteEventStore(path.join(dir, 'e.sqlite'));
  t.teardown(() => sqlite.close());
  const pgStore = await openPostgresEventStore(await testDatabase(t, 'rwids'));
  t.teardown(() => pgStore.close());
  const double = await startKurrentDouble();
  t.teardown(() => double.stop());
  const kurrent = await openKurrentEventStore(double.url);
  t.teardown(() => kurrent.close());
  for (const [name, store] of [['sqlite', sqlite], ['postgres', pgStore], ['kurrentdb', kurrent]] as const) {
    const a = ev('a');
    const b = ev('b');
    await store.append('note-a', [a], 'any');
    const r = await store.append('note-b', [b], 'any');
    const head = await store.headPosition();
    t.equal(head, r.position, name);
    t.equal(await store.eventIdAt(r.position), b.id, `${name}: the event at the head`);
    t.equal(await store.eventIdAt(r.position + 1000n), undefined, `${name}: nothing past the head`);
    if (name === 'kurrentdb') t.equal(await store.eventIdAt(r.position - 1n), undefined, 'kurrentdb: nothing between two positions');
  }
  // KurrentDB: a truncated $all shows as a missing or different event at the checkpoint.
  const all = double.log.filter((e) => !e.type.startsWith('$') && !e.stream.startsWith('$'));
  const cp = all[all.length - 1]!;
  const kept = all[all.length - 2]!;
  double.truncate(kept.position);
  t.equal(await kurrent.eventIdAt(cp.position), undefined, 'kurrentdb: the checkpoint event is gone');
  await add(kurrent, 'c');
  t.not(await kurrent.eventIdAt(cp.position), cp.id, 'kurrentdb: a new event is not the checkpoint event');
  t.equal(await kurrent.eventIdAt(kept.position), kept.id, 'kurrentdb: the kept event is still there');
});

t.test('sqlite: a follower after a restored backup repeats nothing and misses nothing new', async (t) => {
  const dir = tempDir(t, 'rw-follow');
  const prefix = uniquePrefix();
  const redis = createRedis(TEST_REDIS_URL);
  t.teardown(async () => {
    redis.disconnect();
    await deletePrefix(TEST_REDIS_URL, prefix);
  });
  const cpKey = `${prefix}cp`;
  const file = path.join(dir, 'events.sqlite');
  let store = new SqliteEventStore(file, { pollIntervalMs: 10 });
  await add(store, 'h1', 'h2');
  let f = await follow(t, store, redis, cpKey);
  await add(store, 'd1', 'd2');
  await until('d1, d2 delivered', () => f.seen.length === 2);
  const backup = path.join(dir, 'backup.sqlite');
  await (store as unknown as { db: Database.Database }).db.backup(backup);
  await add(store, 'd3', 'd4');
  await until('d3, d4 delivered', () => f.seen.length === 4);
  t.same(names(f.seen), ['d1', 'd2', 'd3', 'd4'], 'history before the follower started is not acted on');
  await f.f.close();
  await store.close();

  for (const x of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(x, { force: true });
  fs.copyFileSync(backup, file);
  store = new SqliteEventStore(file, { pollIntervalMs: 10 });
  t.teardown(() => store.close());
  f = await follow(t, store, redis, cpKey);
  await add(store, 'n1', 'n2', 'n3');
  await until('n1..n3 delivered', () => names(f.seen).includes('n3'));
  t.same(names(f.seen), ['rewind', 'n1', 'n2', 'n3'], 'd1, d2 are not delivered again; the new events are');
  const rewinds = await store.readStream(REWIND_STREAM);
  t.equal(rewinds.length, 1, 'the rewind is recorded once');
  t.equal((rewinds[0]!.data as LogRewoundData).head, '4', 'at the head the log went back to');

  // A second start (another worker process) follows on without recording the rewind again.
  await f.f.close();
  const g = await follow(t, store, redis, cpKey);
  await add(store, 'n4');
  await until('n4 delivered', () => g.seen.length === 1);
  t.same(names(g.seen), ['n4']);
  t.equal((await store.readStream(REWIND_STREAM)).length, 1);
});

t.test('sqlite: a rewind recorded by the restore is followed from its head', async (t) => {
  const dir = tempDir(t, 'rw-restore');
  const prefix = uniquePrefix();
  const redis = createRedis(TEST_REDIS_URL);
  t.teardown(async () => {
    redis.disconnect();
    await deletePrefix(TEST_REDIS_URL, prefix);
  });
  const cpKey = `${prefix}cp`;
  const file = path.join(dir, 'events.sqlite');
  let store = new SqliteEventStore(file, { pollIntervalMs: 10 });
  let f = await follow(t, store, redis, cpKey);
  await add(store, 'd1');
  const backup = path.join(dir, 'backup.sqlite');
  await (store as unknown as { db: Database.Database }).db.backup(backup);
  await add(store, 'd2', 'd3', 'd4');
  await until('delivered', () => f.seen.length === 4);
  await f.f.close();
  await store.close();
  for (const x of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(x, { force: true });
  fs.copyFileSync(backup, file);
  store = new SqliteEventStore(file, { pollIntervalMs: 10 });
  t.teardown(() => store.close());
  await recordRewind(store, { head: String(await store.headPosition()), by: 'restore' }, -1);
  // Same length as the lost ones, so the new events take their positions (and a follower without the check skips them).
  await add(store, 'n2', 'n3');
  f = await follow(t, store, redis, cpKey);
  await add(store, 'n4');
  await until('n4 delivered', () => names(f.seen).includes('n4'));
  t.same(names(f.seen), ['rewind', 'n2', 'n3', 'n4']);
  t.equal((await store.readStream(REWIND_STREAM)).length, 1, 'the restore record is used, not a second one');
});

t.test('postgres: a running follower notices a failover that lost the last commits', async (t) => {
  const url = await testDatabase(t, 'rwfail');
  const prefix = uniquePrefix();
  const redis = createRedis(TEST_REDIS_URL);
  t.teardown(async () => {
    redis.disconnect();
    await deletePrefix(TEST_REDIS_URL, prefix);
  });
  const store = await openPostgresEventStore(url, { pollIntervalMs: 20 });
  t.teardown(() => store.close());
  await add(store, 'h1');
  const f = await follow(t, store, redis, `${prefix}cp`, 50);
  await add(store, 'd1');
  const kept = await store.headPosition();
  await add(store, 'd2', 'd3');
  await until('delivered', () => f.seen.length === 3);
  // The promoted standby lacks d2 and d3.
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query('DELETE FROM events WHERE position > $1', [String(kept)]);
  await c.end();
  await until('the rewind recorded', async () => (await store.readStream(REWIND_STREAM)).length === 1, WAIT_MS);
  await add(store, 'n2', 'n3');
  await until('n2, n3 delivered', () => names(f.seen).includes('n3'));
  t.same(names(f.seen), ['d1', 'd2', 'd3', 'rewind', 'n2', 'n3']);
  t.equal((await store.readStream(REWIND_STREAM)).length, 1);
});

t.test('a batch that throws does not end the follower: it follows again from the checkpoint at the next check', async (t) => {
  const dir = tempDir(t, 'rw-throw');
  const prefix = uniquePrefix();
  const redis = createRedis(TEST_REDIS_URL);
  t.teardown(async () => {
    await deletePrefix(TEST_REDIS_URL, prefix);
    redis.disconnect();
  });
  const store = new SqliteEventStore(path.join(dir, 'e.sqlite'));
  t.teardown(() => store.close());
  await add(store, 'a');
  const seen: string[] = [];
  let failures = 0;
  const f = await followLog({
    store,
    redis,
    cpKey: `${prefix}cp`,
    by: 'test',
    log,
    checkEveryMs: 100,
    onEvents: async (events) => {
      // The first batch holding "c" fails, as a job add fails while Redis is away.
      if (failures === 0 && names(events).includes('c')) {
        failures++;
        throw new Error('queue unavailable');
      }
      seen.push(...names(events));
    },
  });
  t.teardown(() => f.close());
  await f.caughtUp;
  await add(store, 'b');
  await until('b handled', async () => seen.includes('b'));
  await add(store, 'c');
  await add(store, 'd');
  await until('c and d handled after the failure', async () => seen.includes('c') && seen.includes('d'), WAIT_MS);
  t.equal(failures, 1, 'the batch failed once');
  t.same(seen.filter((n) => n === 'c'), ['c'], 'the failed event is handled once, after the restart');
  await add(store, 'e');
  await until('the follower keeps following', async () => seen.includes('e'));
  t.same(seen.filter((n) => n === 'b'), ['b'], 'what was handled before the failure is not handled again');
});
