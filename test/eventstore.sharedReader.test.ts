/**
 * One reader of the log for the followers of a process (`SharedLogReader`, src/eventstore/sharedReader.ts):
 * push, previews and the voice enforcer each keep their own checkpoint and get every event after it once, but
 * the store is subscribed to once and each batch is read once, however many follow it. A follower that joins
 * behind, fails a batch or finds the log rewound leaves the others' deliveries exact.
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
import type { EventStore, NewEvent, RecordedEvent, SubscribeOptions, Subscription } from '../src/eventstore/port.ts';
import { decodeCheckpoint, followLog, REWIND_STREAM, type Follower } from '../src/eventstore/rewind.ts';
import { SharedLogReader } from '../src/eventstore/sharedReader.ts';
import { PersonalDataStore } from '../src/personal/store.ts';
import { SqliteKeyStore } from '../src/personal/keyStore.ts';
import { newId } from '../src/ids.ts';
import { testDatabase } from './helpers/postgres.ts';
import { deletePrefix, startTestService, TEST_REDIS_URL, tempDir, uniquePrefix } from './helpers/service.ts';
import { until, WAIT_MS } from './helpers/wait.ts';

const log = createLogger('silent');

function ev(n: string): NewEvent {
  return { id: randomUUID(), type: 'Noted', data: { n }, metadata: { actor: null, requestId: n, at: new Date().toISOString(), scope: 's' } };
}

async function add(store: EventStore, ...names: string[]): Promise<void> {
  for (const n of names) await store.append(`note-${n}`, [ev(n)], 'any');
}

const names = (events: RecordedEvent[]) => events.map((e) => (e.stream === REWIND_STREAM ? 'rewind' : (e.data as { n: string }).n));

/** What the store itself was asked: subscriptions opened, batches and events it delivered. */
interface Reads {
  subscriptions: number;
  batches: number;
  events: number;
}

/** The store with its subscriptions counted (every read of the log a follower makes goes through `subscribe`). */
function counted(store: EventStore): { store: EventStore; reads: Reads } {
  const reads: Reads = { subscriptions: 0, batches: 0, events: 0 };
  const subscribe = (o: SubscribeOptions): Subscription => {
    reads.subscriptions++;
    return store.subscribe({
      ...o,
      onEvents: (events) => {
        reads.batches++;
        reads.events += events.length;
        return o.onEvents(events);
      },
    });
  };
  const wrapped = new Proxy(store, {
    get(target, key) {
      if (key === 'subscribe') return subscribe;
      const v = Reflect.get(target, key, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store: wrapped, reads };
}

function redisFor(t: Test) {
  const prefix = uniquePrefix();
  const redis = createRedis(TEST_REDIS_URL);
  t.teardown(async () => {
    redis.disconnect();
    await deletePrefix(TEST_REDIS_URL, prefix);
  });
  return { redis, prefix };
}

/** A follower on `reader` (or on the store itself), its deliveries in `seen`. */
async function follower(
  t: Test,
  o: { store: EventStore; reader?: SharedLogReader; redis: ReturnType<typeof createRedis>; cpKey: string; checkEveryMs?: number; wants?: (e: RecordedEvent) => boolean; fail?: (events: RecordedEvent[]) => boolean },
): Promise<{ seen: RecordedEvent[]; f: Follower }> {
  const seen: RecordedEvent[] = [];
  const f = await followLog({
    store: o.store,
    redis: o.redis,
    cpKey: o.cpKey,
    by: 'test',
    log,
    ...(o.reader ? { reader: o.reader } : {}),
    ...(o.wants ? { wants: o.wants } : {}),
    checkEveryMs: o.checkEveryMs ?? 5000,
    onEvents: async (events) => {
      if (o.fail?.(events)) throw new Error('queue unavailable');
      seen.push(...events);
    },
  });
  t.teardown(() => f.close());
  await f.caughtUp;
  return { seen, f };
}

t.test('three followers on one reader: one subscription, each batch read once, each follower gets every event once', async (t) => {
  const dir = tempDir(t, 'shr-one');
  const sqlite = new SqliteEventStore(path.join(dir, 'e.sqlite'), { pollIntervalMs: 10 });
  t.teardown(() => sqlite.close());
  const { redis, prefix } = redisFor(t);
  await add(sqlite, 'h1', 'h2');

  const shared = counted(sqlite);
  const reader = new SharedLogReader(shared.store);
  const odd = (e: RecordedEvent) => Number((e.data as { n: string }).n.slice(1)) % 2 === 1;
  const fs3 = [
    await follower(t, { store: shared.store, reader, redis, cpKey: `${prefix}a` }),
    await follower(t, { store: shared.store, reader, redis, cpKey: `${prefix}b`, wants: odd }),
    await follower(t, { store: shared.store, reader, redis, cpKey: `${prefix}c` }),
  ];
  const sent = Array.from({ length: 300 }, (_, i) => `e${i}`);
  // In groups, so that several batches are read while the followers follow.
  for (let i = 0; i < sent.length; i += 30) await Promise.all(sent.slice(i, i + 30).map((n) => add(sqlite, n)));
  const head = (await sqlite.headPosition())!;
  await until('every follower passed the head', async () => {
    const cps = await redis.mget(`${prefix}a`, `${prefix}b`, `${prefix}c`);
    return fs3[0]!.seen.length === 300 && fs3[2]!.seen.length === 300 && cps.every((c) => c !== null && decodeCheckpoint(c).position === head);
  });
  const byPosition = (s: RecordedEvent[]) => [...s].sort((x, y) => (x.position < y.position ? -1 : 1));
  t.same(names(fs3[0]!.seen).sort(), [...sent].sort(), 'a: every event after its checkpoint, once');
  t.same(fs3[0]!.seen, byPosition(fs3[0]!.seen), 'a: in position order');
  t.same(names(fs3[1]!.seen).sort(), sent.filter((n) => Number(n.slice(1)) % 2 === 1).sort(), 'b: the events it wants, once');
  t.same(names(fs3[2]!.seen), names(fs3[0]!.seen), 'c: the same as a');

  // The rule: one read of the log for all three. Separate subscriptions would read each event three times.
  t.equal(shared.reads.subscriptions, 1, 'the store was subscribed to once');
  t.equal(shared.reads.events, 300, 'each event was read from the store once (not once per follower)');
  t.ok(shared.reads.batches >= 2, `several batches were read (${shared.reads.batches})`);
  t.same(reader.stats(), { subscriptions: 1, batches: shared.reads.batches, events: 300 }, 'the reader counts the same');

  // Followers on the store itself (no reader) read it once each: the counting above would see it.
  const own = counted(sqlite);
  const p = [
    await follower(t, { store: own.store, redis, cpKey: `${prefix}x` }),
    await follower(t, { store: own.store, redis, cpKey: `${prefix}y` }),
  ];
  await add(sqlite, 'z');
  await until('both own followers got z', () => p.every((x) => names(x.seen).includes('z')));
  t.equal(own.reads.subscriptions, 2);
  t.equal(own.reads.events, 2, 'without a reader each follower reads the event itself');
});

t.test('a follower that joins behind the reader makes it read again from there; the others get nothing twice', async (t) => {
  const dir = tempDir(t, 'shr-behind');
  const sqlite = new SqliteEventStore(path.join(dir, 'e.sqlite'), { pollIntervalMs: 10 });
  t.teardown(() => sqlite.close());
  const { redis, prefix } = redisFor(t);
  const shared = counted(sqlite);
  const reader = new SharedLogReader(shared.store);
  // b's checkpoint is at the start of the log, a's at its head: a starts the reader, b joins behind it.
  await add(sqlite, 'h1');
  const start = (await sqlite.headPosition())!;
  await redis.set(`${prefix}b`, `${start}|${await sqlite.eventIdAt(start)}|`);
  await add(sqlite, 'b1', 'b2');
  const a = await follower(t, { store: shared.store, reader, redis, cpKey: `${prefix}a` });
  await add(sqlite, 'x1');
  await until('a got x1', () => a.seen.length === 1);
  const b = await follower(t, { store: shared.store, reader, redis, cpKey: `${prefix}b` });
  await add(sqlite, 'x2', 'x3');
  await until('both got x3', () => names(a.seen).includes('x3') && names(b.seen).includes('x3'));
  t.same(names(a.seen), ['x1', 'x2', 'x3'], 'a: nothing twice, though the reader read x1 again for b');
  t.same(names(b.seen), ['b1', 'b2', 'x1', 'x2', 'x3'], 'b: everything after its checkpoint');
  t.equal(shared.reads.subscriptions, 2, 'the reader subscribed again once, from b');
  // A follower joining at the reader's position costs no new subscription.
  const c = await follower(t, { store: shared.store, reader, redis, cpKey: `${prefix}c` });
  await add(sqlite, 'x4');
  await until('c got x4', () => names(c.seen).includes('x4'));
  t.same(names(c.seen), ['x4']);
  t.equal(shared.reads.subscriptions, 2, 'no new subscription for a follower at the head');
});

t.test('a batch that throws ends only its follower, which follows again from its checkpoint; the others go on', async (t) => {
  const dir = tempDir(t, 'shr-throw');
  const sqlite = new SqliteEventStore(path.join(dir, 'e.sqlite'), { pollIntervalMs: 10 });
  t.teardown(() => sqlite.close());
  const { redis, prefix } = redisFor(t);
  const reader = new SharedLogReader(sqlite);
  let failures = 0;
  const bad = await follower(t, {
    store: sqlite,
    reader,
    redis,
    cpKey: `${prefix}bad`,
    checkEveryMs: 100,
    fail: (events) => failures === 0 && names(events).includes('c') && ++failures === 1,
  });
  const good = await follower(t, { store: sqlite, reader, redis, cpKey: `${prefix}good` });
  await add(sqlite, 'a', 'b');
  await until('b handled by both', () => names(bad.seen).includes('b') && names(good.seen).includes('b'));
  await add(sqlite, 'c');
  await add(sqlite, 'd');
  await until('c and d handled by both', () => ['c', 'd'].every((n) => names(bad.seen).includes(n) && names(good.seen).includes(n)), WAIT_MS);
  t.equal(failures, 1, 'the batch failed once');
  await add(sqlite, 'e');
  await until('both keep following', () => names(bad.seen).includes('e') && names(good.seen).includes('e'));
  t.same(names(bad.seen), ['a', 'b', 'c', 'd', 'e'], 'the failed follower: each event once, the failed one after its restart');
  t.same(names(good.seen), ['a', 'b', 'c', 'd', 'e'], 'the other follower: untouched by the failure and the re-read');
});

t.test('closing the last follower stops the reader; the next one starts it again', async (t) => {
  const dir = tempDir(t, 'shr-close');
  const sqlite = new SqliteEventStore(path.join(dir, 'e.sqlite'), { pollIntervalMs: 10 });
  t.teardown(() => sqlite.close());
  const { redis, prefix } = redisFor(t);
  const shared = counted(sqlite);
  const reader = new SharedLogReader(shared.store);
  const a = await follower(t, { store: shared.store, reader, redis, cpKey: `${prefix}a` });
  await add(sqlite, 'a1');
  await until('a1', () => a.seen.length === 1);
  await a.f.close();
  const batches = shared.reads.batches;
  await add(sqlite, 'a2');
  // The store hands a2 to nobody: the reader's subscription is closed (a bounded wait for a read that must not come).
  await new Promise((r) => setTimeout(r, 200));
  t.equal(shared.reads.batches, batches, 'no read after the last follower left');
  const b = await follower(t, { store: shared.store, reader, redis, cpKey: `${prefix}a` });
  await until('a2 after the restart', () => names(b.seen).includes('a2'));
  t.same(names(b.seen), ['a2'], 'the next follower resumes from the checkpoint: a1 is not repeated');
  t.equal(shared.reads.subscriptions, 2);
});

t.test('sqlite: followers on one reader after a restored backup repeat nothing and miss nothing new', async (t) => {
  const dir = tempDir(t, 'shr-rewind');
  const { redis, prefix } = redisFor(t);
  const file = path.join(dir, 'events.sqlite');
  let store = new SqliteEventStore(file, { pollIntervalMs: 10 });
  await add(store, 'h1');
  let reader = new SharedLogReader(store);
  let a = await follower(t, { store, reader, redis, cpKey: `${prefix}a` });
  let b = await follower(t, { store, reader, redis, cpKey: `${prefix}b` });
  await add(store, 'd1');
  const backup = path.join(dir, 'backup.sqlite');
  await (store as unknown as { db: Database.Database }).db.backup(backup);
  await add(store, 'd2', 'd3');
  await until('delivered to both', () => a.seen.length === 3 && b.seen.length === 3);
  await a.f.close();
  await b.f.close();
  await store.close();
  for (const x of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(x, { force: true });
  fs.copyFileSync(backup, file);
  store = new SqliteEventStore(file, { pollIntervalMs: 10 });
  t.teardown(() => store.close());
  reader = new SharedLogReader(store);
  a = await follower(t, { store, reader, redis, cpKey: `${prefix}a` });
  b = await follower(t, { store, reader, redis, cpKey: `${prefix}b` });
  await add(store, 'n2', 'n3', 'n4');
  await until('n4 delivered to both', () => names(a.seen).includes('n4') && names(b.seen).includes('n4'));
  t.same(names(a.seen), ['rewind', 'n2', 'n3', 'n4'], 'a: d2, d3 are not delivered again (their positions now hold n2, n3)');
  t.same(names(b.seen), ['rewind', 'n2', 'n3', 'n4'], 'b: the same');
  t.equal((await store.readStream(REWIND_STREAM)).length, 1, 'the rewind is recorded once');
});

t.test('postgres: running followers on one reader notice a failover that lost the last commits', async (t) => {
  const url = await testDatabase(t, 'shrfail');
  const { redis, prefix } = redisFor(t);
  const store = await openPostgresEventStore(url, { pollIntervalMs: 20 });
  t.teardown(() => store.close());
  await add(store, 'h1');
  const reader = new SharedLogReader(store);
  const a = await follower(t, { store, reader, redis, cpKey: `${prefix}a`, checkEveryMs: 50 });
  const b = await follower(t, { store, reader, redis, cpKey: `${prefix}b`, checkEveryMs: 50 });
  await add(store, 'd1');
  const kept = await store.headPosition();
  await add(store, 'd2', 'd3');
  await until('delivered', () => a.seen.length === 3 && b.seen.length === 3);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query('DELETE FROM events WHERE position > $1', [String(kept)]);
  await c.end();
  await until('the rewind recorded', async () => (await store.readStream(REWIND_STREAM)).length === 1, WAIT_MS);
  // Each follower notices the failover at its own check (every 50 ms here): the first records the rewind, the
  // other follows the record. New events are appended once both have resumed from the recorded head: before its
  // check a follower still holds its stale position, which new events reuse (as with a subscription of its own).
  await until('both followers resumed from the rewind', () => names(a.seen).includes('rewind') && names(b.seen).includes('rewind'), WAIT_MS);
  await add(store, 'n2', 'n3');
  await until('n2, n3 delivered to both', () => names(a.seen).includes('n3') && names(b.seen).includes('n3'));
  t.same(names(a.seen), ['d1', 'd2', 'd3', 'rewind', 'n2', 'n3']);
  t.same(names(b.seen), ['d1', 'd2', 'd3', 'rewind', 'n2', 'n3']);
  t.equal((await store.readStream(REWIND_STREAM)).length, 1, 'one record, though two followers noticed');
});

t.test('a reader of the sealed log opens only the events a follower acts on', async (t) => {
  const dir = tempDir(t, 'shr-open');
  const raw = new SqliteEventStore(path.join(dir, 'e.sqlite'), { pollIntervalMs: 10 });
  const store = new PersonalDataStore(raw, new SqliteKeyStore(path.join(dir, 'keys.sqlite'), path.join(dir, 'erasures.jsonl')));
  t.teardown(() => store.close());
  const { redis, prefix } = redisFor(t);
  let opened = 0;
  const reader = new SharedLogReader(raw, {
    open: async (events) => {
      opened += events.length;
      return store.openEvents(events);
    },
  });
  const offered: unknown[] = [];
  const seen: RecordedEvent[] = [];
  const f = await followLog({
    store,
    redis,
    cpKey: `${prefix}cp`,
    by: 'test',
    log,
    reader,
    wants: (e) => {
      offered.push((e.data as { message: { content: unknown } }).message.content);
      return (e.data as { message: { author: string } }).message.author === 'b';
    },
    onEvents: async (events) => void seen.push(...events),
  });
  t.teardown(() => f.close());
  await f.caughtUp;
  const channel = newId();
  for (const [author, content] of [['a', 'words of a'], ['b', 'words of b'], ['a', 'more of a']] as const) {
    const id = newId();
    await store.append(`message-${id}`, [{ id: randomUUID(), type: 'MessageSent', data: { message: { _id: id, channel, author, content } }, metadata: { actor: null, requestId: 'r', at: new Date().toISOString(), scope: 's' } }], 'no_stream');
  }
  await until('the three offered', () => offered.length === 3);
  await until('b delivered', () => seen.length === 1);
  t.equal(opened, 1, 'one event opened: the one wanted');
  t.equal((seen[0]!.data as { message: { content: string } }).message.content, 'words of b', 'delivered opened');
  t.notOk(offered.some((c) => typeof c === 'string'), 'wants saw the content sealed');
});

t.test('the default start: the worker role\'s followers (push, previews) share one reader', async (t) => {
  const svc = await startTestService(t, { RATE_LIMITS: 'off' });
  const reader = svc.logReader!;
  t.ok(reader, 'the worker role has a reader');
  await svc.pushWorker!.caughtUp;
  await svc.previewWorker!.caughtUp;
  const before = reader.stats();
  t.equal(before.subscriptions, 1, 'one subscription for both followers');
  await add(svc.store, 'w1', 'w2', 'w3');
  await until('the reader read them', () => reader.stats().events >= before.events + 3);
  t.equal(reader.stats().subscriptions, 1, 'still one');
});
