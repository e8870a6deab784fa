// Across engines: `events migrate` between SQLite, Postgres and KurrentDB (the gRPC stand-in) in every
// direction, through the CLI; migrate refusing to skip a conflicting revision; falling back when the
// outcome of a multi-stream append is unknown; `events tail` and `rebuild` after a dropped subscription;
// the projector starting a new generation when its checkpoints belong to another store; no Redis connection
// left behind while the store is down.
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import t from 'tap';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import { openPostgresEventStore } from '../src/eventstore/postgres.ts';
import { openKurrentEventStore } from '../src/eventstore/kurrent.ts';
import type { EventStore, NewEvent, RecordedEvent, SubscribeOptions } from '../src/eventstore/port.ts';
import { MigrationConflictError, migrate, tailEvents } from '../src/cli/eventsLib.ts';
import { createLogger } from '../src/log.ts';
import { Projector } from '../projections/projector.ts';
import { rebuild } from '../projections/rebuild.ts';
import { PROJECTIONS } from '../projections/index.ts';
import type { Projection } from '../projections/types.ts';
import { controlKeys, generationPrefix, partitionKeys, READ_MODEL_LAYOUT, readModelIdentity } from '../src/readmodel/keys.ts';
import { startKurrentDouble } from './helpers/kurrentDouble.ts';
import { testDatabase } from './helpers/postgres.ts';
import { runCli } from './helpers/cli.ts';
import { deletePrefix, tempDir, TEST_REDIS_URL, uniquePrefix } from './helpers/service.ts';
import { until, WAIT_MS } from './helpers/wait.ts';

const log = createLogger('silent');

async function all(store: EventStore): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  for await (const e of store.readAll()) out.push(e);
  return out;
}
const shape = (l: RecordedEvent[]) => l.map((e) => [e.id, e.stream, e.revision, e.type, e.data, e.metadata]);
const meta = (i: number) => ({ actor: i % 2 ? 'u' : null, requestId: `r${i}`, at: new Date(i * 1000).toISOString(), scope: `s${i % 3}`, ...(i % 5 ? {} : { reason: 'because' }) });
const ev = (i: number, type = 'Tested'): NewEvent => ({ id: randomUUID(), type, data: { i, nested: [i, { x: 'y' }] }, metadata: meta(i) });

async function seed(store: EventStore, n: number): Promise<void> {
  for (let i = 0; i < n; i += 3) {
    // Mixed single and multi-stream appends.
    if (i % 2) await store.appendMany([
      { stream: `st-${i % 7}`, events: [ev(i)], expected: 'any' },
      { stream: `other-${i % 5}`, events: [ev(i + 1), ev(i + 2)], expected: 'any' },
    ]);
    else await store.append(`st-${i % 7}`, [ev(i), ev(i + 1), ev(i + 2)], 'any');
  }
}

t.test('events migrate: SQLite → Postgres (CLI) → KurrentDB → Postgres → SQLite (CLI) keeps everything', async (t) => {
  const dir = tempDir(t);
  const pgA = await testDatabase(t, 'migrate_a');
  const pgB = await testDatabase(t, 'migrate_b');
  const double = await startKurrentDouble();
  t.teardown(() => double.stop());
  const src = new SqliteEventStore(path.join(dir, 'src.sqlite'));
  await seed(src, 240);
  const original = await all(src);
  await src.close();
  const env = { DATA_DIR: dir, REDIS_PREFIX: uniquePrefix() };
  const cli = async (from: string, to: string) => {
    const r = await runCli(env, ['migrate', '--from', from, '--to', to]);
    t.equal(r.code, 0, `${from} → ${to}: ${r.err.trim().split('\n').pop()}`);
    t.match(r.out, new RegExp(`copied ${original.length} events`));
  };
  await cli(`sqlite:${path.join(dir, 'src.sqlite')}`, pgA);
  // The middle hops in-process (the CLI is the same function): Postgres → KurrentDB → Postgres.
  const a = await openPostgresEventStore(pgA);
  const k = await openKurrentEventStore(double.url);
  const b = await openPostgresEventStore(pgB);
  t.teardown(async () => {
    for (const s of [a, k, b]) await s.close();
  });
  t.equal((await migrate(a, k, { checkpointDir: dir, targetId: 'k', batch: 50 })).copied, original.length);
  t.equal((await migrate(k, b, { checkpointDir: dir, targetId: 'b', batch: 50 })).copied, original.length);
  t.strictSame(shape(await all(k)), shape(original), 'the KurrentDB copy');
  t.strictSame(shape(await all(b)), shape(original), 'the second Postgres copy');
  await cli(pgB, `sqlite:${path.join(dir, 'back.sqlite')}`);
  const back = new SqliteEventStore(path.join(dir, 'back.sqlite'));
  t.teardown(() => back.close());
  t.strictSame(shape(await all(back)), shape(original), 'order, ids, streams, revisions, data and metadata survive every hop');
  // A second run over a target without the checkpoint file finds everything in place by id.
  const again = await migrate(a, b, { checkpointDir: path.join(dir, 'fresh'), targetId: 'b' });
  t.strictSame(again, { copied: 0, skipped: original.length });
});

t.test('migrate aborts when the target holds another event at a revision (no silent skip)', async (t) => {
  const dir = tempDir(t);
  const source = new SqliteEventStore(path.join(dir, 's.sqlite'));
  const target = await openPostgresEventStore(await testDatabase(t, 'conflict'));
  t.teardown(async () => {
    await source.close();
    await target.close();
  });
  await source.append('a-1', [ev(1), ev(2), ev(3)], 'no_stream');
  await source.append('b-1', [ev(4)], 'no_stream');
  // The target already has a-1 with the same first event but a different second one.
  const [first] = await source.readStream('a-1');
  await target.append('a-1', [{ id: first!.id, type: first!.type, data: first!.data, metadata: first!.metadata }, ev(99)], 'no_stream');
  const err = await migrate(source, target, { checkpointDir: dir, targetId: 'pg', batch: 10 }).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof MigrationConflictError, 'MigrationConflictError');
  t.strictSame({ stream: (err as MigrationConflictError).stream, revision: (err as MigrationConflictError).revision }, { stream: 'a-1', revision: 1 });
  t.equal(await target.streamRevision('b-1'), -1, 'nothing after the conflict was copied');

  // The same events at those revisions (an earlier, interrupted copy) are recognised and completed.
  const target2 = await openPostgresEventStore(await testDatabase(t, 'partial'));
  t.teardown(() => target2.close());
  const srcA = await source.readStream('a-1');
  await target2.append('a-1', srcA.slice(0, 2).map((e) => ({ id: e.id, type: e.type, data: e.data, metadata: e.metadata })), 'no_stream');
  const r = await migrate(source, target2, { checkpointDir: dir, targetId: 'pg2', batch: 10 });
  t.strictSame(r, { copied: 2, skipped: 2 }, 'two found in place, the third of a-1 and b-1 copied');
  t.strictSame(shape(await all(target2)).map((x) => x[0]).sort(), shape(await all(source)).map((x) => x[0]).sort());
});

t.test('migrate falls back to per-stream appends when a multi-stream append ends in Unavailable or Unknown', async (t) => {
  const dir = tempDir(t);
  const source = new SqliteEventStore(path.join(dir, 's.sqlite'));
  await seed(source, 60);
  const inner = new SqliteEventStore(path.join(dir, 't.sqlite'));
  t.teardown(async () => {
    await source.close();
    await inner.close();
  });
  let n = 0;
  // The first group is written but its reply is lost (unavailable); the second fails as unknown.
  const target: EventStore = Object.assign(Object.create(inner) as EventStore, {
    appendMany: async (writes: Parameters<EventStore['appendMany']>[0]) => {
      n++;
      if (n === 1) {
        await inner.appendMany(writes);
        throw Object.assign(new Error('connection lost'), { type: 'unavailable' });
      }
      if (n === 2) throw Object.assign(new Error('server error'), { type: 'unknown' });
      return inner.appendMany(writes);
    },
  });
  const r = await migrate(source, target, { checkpointDir: dir, targetId: 'flaky', batch: 5 });
  t.ok(n > 2, 'multi-stream appends were attempted and failed');
  t.equal(r.copied + r.skipped, 60);
  t.strictSame(shape(await all(inner)), shape(await all(source)), 'the target equals the source: nothing lost, nothing twice');
  // Any other error still stops the migration.
  const boom: EventStore = Object.assign(Object.create(inner) as EventStore, {
    appendMany: async () => {
      throw Object.assign(new Error('access denied'), { type: 'access-denied' });
    },
  });
  const src2 = new SqliteEventStore(path.join(dir, 's2.sqlite'));
  t.teardown(() => src2.close());
  await src2.append('z-1', [ev(1)], 'no_stream');
  await t.rejects(migrate(src2, boom, { checkpointDir: dir, targetId: 'boom' }), /access denied/);
});

/**
 * A store whose first `drops` subscriptions fail: after delivering one batch (`deliver`), or at once.
 */
function droppingStore(store: EventStore, drops: number, deliver = true): EventStore & { subscriptions: number } {
  const wrapper = Object.assign(Object.create(store) as EventStore, {
    subscriptions: 0,
    subscribe(o: SubscribeOptions) {
      const k = ++wrapper.subscriptions;
      if (k > drops) return store.subscribe(o);
      if (!deliver) {
        setImmediate(() => o.onError?.(new Error(`dropped #${k}`)));
        return { close: async () => {} };
      }
      let done = false;
      return store.subscribe({
        ...o,
        batchSize: 3,
        onEvents: async (events) => {
          if (done) return;
          done = true;
          await o.onEvents(events);
          setImmediate(() => o.onError?.(new Error(`dropped #${k}`)));
        },
        onCaughtUp: () => {},
      });
    },
  });
  return wrapper;
}

t.test('events tail resubscribes after a dropped subscription, and fails clearly when it keeps dropping', async (t) => {
  const dir = tempDir(t);
  const store = new SqliteEventStore(path.join(dir, 'e.sqlite'), { pollIntervalMs: 10 });
  t.teardown(() => store.close());
  for (let i = 0; i < 10; i++) await store.append(`t-${i % 2}`, [ev(i)], 'any');
  const flaky = droppingStore(store, 2);
  const got: RecordedEvent[] = [];
  const resubs: number[] = [];
  const stop = await tailEvents(flaky, { fromStart: true }, (e) => got.push(e), { onResubscribe: (_e, n) => resubs.push(n) });
  t.teardown(stop);
  await until('all 10', () => got.length >= 10, WAIT_MS, 5);
  await store.append('t-0', [ev(10)], 'any');
  await until('the live one', () => got.length >= 11, WAIT_MS, 5);
  t.strictSame(got.map((e) => e.position), (await all(store)).map((e) => e.position), 'every event once, in order');
  t.strictSame(resubs, [1, 1], 'two drops, each after progress');

  const hopeless = droppingStore(store, Infinity, false);
  let fatal: Error | undefined;
  const stop2 = await tailEvents(hopeless, { fromStart: true }, () => {}, { maxResubscribes: 3, onFatal: (e) => (fatal = e) });
  t.teardown(stop2);
  await until('gave up', () => fatal !== undefined, WAIT_MS, 5);
  t.match(fatal?.message, /dropped 4 times in a row/);
});

t.test('rebuild resubscribes a partition whose subscription drops, and fails (not hangs) when it keeps dropping', async (t) => {
  const dir = tempDir(t);
  const store = new SqliteEventStore(path.join(dir, 'e.sqlite'), { pollIntervalMs: 10 });
  t.teardown(() => store.close());
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const counter: Projection = {
    name: 'counter',
    handles: ['EmailClaimed'],
    async apply(e, tx) {
      const c = (await tx.getJson<{ n: number; ids: string[] }>('count')) ?? { n: 0, ids: [] };
      tx.setJson('count', { n: c.n + 1, ids: [...c.ids, e.id] });
    },
  };
  const m = { actor: null, requestId: 'r', at: new Date(0).toISOString(), scope: 'x' };
  for (let i = 0; i < 20; i++) await store.append(`email-${i}`, [{ id: randomUUID(), type: 'EmailClaimed', data: { userId: `u${i}` }, metadata: m }], 'no_stream');
  const flaky = droppingStore(store, 3);
  const r = await rebuild({ store: flaky, redisUrl: TEST_REDIS_URL, prefix, partitions: 1, projections: [counter], log });
  const redis = new Redis(TEST_REDIS_URL);
  t.teardown(() => redis.disconnect());
  const count = JSON.parse((await redis.get(generationPrefix(prefix, r.generation) + 'count'))!) as { n: number; ids: string[] };
  t.equal(flaky.subscriptions, 4, 'three drops, three resubscriptions');
  t.equal(count.n, 20, 'every event applied once');
  t.equal(new Set(count.ids).size, 20);
  await t.rejects(
    rebuild({ store: droppingStore(store, Infinity, false), redisUrl: TEST_REDIS_URL, prefix, partitions: 1, projections: [counter], log, maxResubscribes: 2 }),
    /rebuild: partition 0 stopped \(dropped #\d+\) after 2 resubscriptions/,
  );
});

t.test('the projector starts a new generation when the checkpoints belong to another store', async (t) => {
  const dir = tempDir(t);
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const redis = new Redis(TEST_REDIS_URL);
  t.teardown(() => redis.disconnect());
  const ctl = controlKeys(prefix);
  const users = PROJECTIONS;
  void users;
  const m = { actor: null, requestId: 'r', at: new Date(0).toISOString(), scope: 'x' };
  const counter: Projection = {
    name: 'counter',
    handles: ['EmailClaimed'],
    async apply(e, tx) {
      const c = (await tx.getJson<{ ids: string[] }>('count')) ?? { ids: [] };
      tx.setJson('count', { ids: [...c.ids, (e.data as { userId: string }).userId] });
    },
  };
  const fill = async (store: EventStore, tag: string, n: number) => {
    for (let i = 0; i < n; i++) await store.append(`email-${tag}${i}`, [{ id: randomUUID(), type: 'EmailClaimed', data: { userId: `${tag}${i}` }, metadata: m }], 'no_stream');
  };
  const run = async (store: EventStore) => {
    const p = new Projector({ store, redisUrl: TEST_REDIS_URL, prefix, partitions: 1, projections: [counter], log, checkIntervalMs: 50 });
    await p.start();
    await until('caught up', async () => (await store.headPosition())?.toString() === (await redis.get(partitionKeys(prefix, Number(await redis.get(ctl.generation)), 1, 0).checkpoint)), WAIT_MS, 20);
    await p.stop();
    const gen = Number(await redis.get(ctl.generation));
    return { gen, ids: (JSON.parse((await redis.get(generationPrefix(prefix, gen) + 'count'))!) as { ids: string[] }).ids };
  };
  // Store A: 5 events. Store B: a different history with more events (its positions run past A's).
  const a = new SqliteEventStore(path.join(dir, 'a.sqlite'), { pollIntervalMs: 10 });
  const b = await openPostgresEventStore(await testDatabase(t, 'identity'), { pollIntervalMs: 10 });
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  await fill(a, 'a', 5);
  await fill(b, 'b', 8);
  const first = await run(a);
  t.strictSame(first.ids, ['a0', 'a1', 'a2', 'a3', 'a4']);
  t.equal(await redis.hget(controlKeys(prefix).generationStores, String(first.gen)), readModelIdentity(await a.identity()), 'the generation records its store and layout');
  t.match(readModelIdentity(await a.identity()), new RegExp(` layout:${READ_MODEL_LAYOUT}$`));
  // The URL now points at B: the old checkpoint (position 5) would skip B's first five events.
  const second = await run(b);
  t.not(second.gen, first.gen, 'a new generation');
  t.strictSame(second.ids, ['b0', 'b1', 'b2', 'b3', 'b4', 'b5', 'b6', 'b7'], "B's read models hold exactly B's history");
  await until('old generation deleted', async () => (await redis.exists(generationPrefix(prefix, first.gen) + 'count')) === 0, WAIT_MS, 20);
  // Back on the same store: no rebuild.
  const third = await run(b);
  t.equal(third.gen, second.gen, 'same store, same generation');
  // The same store, read models of an earlier layout (as a release before this one recorded them): rebuilt. Laid
  // out as layout 5 kept them: the checkpoint in the generation's main slot, no home slot.
  await redis.hset(ctl.generationStores, String(third.gen), `${await b.identity()} layout:${READ_MODEL_LAYOUT - 1}`);
  await redis.set(generationPrefix(prefix, third.gen) + 'count', JSON.stringify({ ids: ['stale'] }));
  const home = partitionKeys(prefix, third.gen, 1, 0);
  await redis.set(generationPrefix(prefix, third.gen) + 'cp:1:0', (await redis.get(home.checkpoint))!);
  await redis.del(home.checkpoint, home.checkpointEvent, home.caughtUp);
  const fourth = await run(b);
  t.not(fourth.gen, third.gen, 'another layout, a new generation');
  t.strictSame(fourth.ids, ['b0', 'b1', 'b2', 'b3', 'b4', 'b5', 'b6', 'b7'], 'rebuilt from the log in the current layout');
  await until('the old layout deleted', async () => (await redis.exists(generationPrefix(prefix, third.gen) + 'count')) === 0, WAIT_MS, 20);
});

t.test('while the store is down the projector opens no Redis connection per retry', async (t) => {
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const double = await startKurrentDouble();
  const store = await openKurrentEventStore(double.url);
  t.teardown(() => store.close());
  await double.stop(); // KurrentDB goes away; the identity is already known.
  const redis = new Redis(TEST_REDIS_URL);
  t.teardown(() => redis.disconnect());
  const name = `${prefix.replace(/[^A-Za-z0-9]/g, '')}part`;
  const p = new Projector({ store, redisUrl: TEST_REDIS_URL, prefix, partitions: 2, projections: PROJECTIONS, log, checkIntervalMs: 30, connectionName: name });
  await p.start();
  t.teardown(() => p.stop());
  await new Promise((r) => setTimeout(r, 1500));
  const list = (await redis.client('LIST')) as string;
  const mine = list.split('\n').filter((l) => l.includes(` name=${name} `));
  t.equal(mine.length, 0, 'no partition connection left open');
  t.equal(p.partitions.length, 0, 'and no partition running');
});

t.test('a projector stopped while a partition is starting leaves no connection and no timer behind', async (t) => {
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const store = new SqliteEventStore(path.join(tempDir(t), 'events.sqlite'));
  t.teardown(() => store.close());
  // The store answers the partition's first question only once `stop` has been called.
  let release!: () => void;
  const stopped = new Promise<void>((r) => (release = r));
  let asked = 0;
  const slow: EventStore = Object.assign(Object.create(store) as EventStore, {
    headPosition: async () => {
      asked++;
      await stopped;
      return store.headPosition();
    },
  });
  const redis = new Redis(TEST_REDIS_URL);
  t.teardown(() => redis.disconnect());
  const name = `${prefix.replace(/[^A-Za-z0-9]/g, '')}stop`;
  const p = new Projector({ store: slow, redisUrl: TEST_REDIS_URL, prefix, partitions: 1, projections: PROJECTIONS, log, checkIntervalMs: 30, connectionName: name });
  const starting = p.start();
  await until('the partition is starting', async () => asked > 0, WAIT_MS, 10);
  const stopping = p.stop();
  release();
  await stopping;
  await starting.catch(() => undefined);
  // A closed connection leaves Redis's client list once the server has read the close: wait for that
  // (bounded; a connection left open fails it) instead of reading the list once after 200 ms.
  const open = async () => ((await redis.client('LIST')) as string).split('\n').filter((l) => l.includes(` name=${name} `)).length;
  await until('the partition connection closed', async () => (await open()) === 0).catch(() => undefined);
  t.equal(await open(), 0, 'no partition connection left open');
  t.same(p.partitions, [], 'and no partition running');
  // Its check and lease timers were never set: left running, they would keep the process alive.
  const internals = p as unknown as { timer?: NodeJS.Timeout; leaseTimer?: NodeJS.Timeout };
  t.same([internals.timer, internals.leaseTimer], [undefined, undefined], 'no timer left behind');
});
