// PostgresEventStore: the event store contract, global order under concurrent writers (from several
// processes' worth of pools) while a catch-up reader runs, migrations, NOTIFY wake-ups, durability settings.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import t from 'tap';
import { appendLockKey, DEFAULT_TIMEOUTS, MIGRATIONS, openPostgresEventStore, type PostgresEventStore } from '../src/eventstore/postgres.ts';
import { isStorageUnavailable } from '../src/storageErrors.ts';
import { loadConfig } from '../src/config.ts';
import { openEventStore } from '../src/eventstore/open.ts';
import { WrongExpectedRevisionError, type NewEvent, type RecordedEvent } from '../src/eventstore/port.ts';
import { InvalidAppendError } from '../src/eventstore/validate.ts';
import { eventStoreContract } from './eventstore.contract.ts';
import { testDatabase } from './helpers/postgres.ts';
import { until, WAIT_MS } from './helpers/wait.ts';

const meta = { actor: null, requestId: 'r', at: new Date(0).toISOString(), scope: 's' };
const ev = (n: number, type = 'Tested'): NewEvent => ({ id: randomUUID(), type, data: { n }, metadata: meta });

t.test('contract', async (t) => {
  const url = await testDatabase(t, 'contract');
  let n = 0;
  await eventStoreContract(t, 'postgres', async () => {
    // A fresh schema per subtest, so the empty-store checks run too.
    const store = await openPostgresEventStore(`${url}?schema=c${n++}`, { pollIntervalMs: 20 });
    return { store, cleanup: async () => store.close() };
  });
});

t.test('global order: 50 concurrent writers on 5 pools while a catch-up reader runs: no gaps, no duplicates', async (t) => {
  const url = await testDatabase(t, 'order');
  // Five stores stand for five processes: their transactions really are concurrent on the server.
  const stores = await Promise.all(Array.from({ length: 5 }, () => openPostgresEventStore(url, { pollIntervalMs: 10 })));
  const reader = await openPostgresEventStore(url, { pollIntervalMs: 5 });
  t.teardown(async () => {
    for (const s of [...stores, reader]) await s.close();
  });
  const seen: RecordedEvent[] = [];
  // A reader that keeps re-reading "after the last position I saw" as fast as it can, during the writes.
  let stop = false;
  const polling = (async () => {
    let after: bigint | undefined;
    while (!stop) {
      const page = await reader.readPage(after, 200);
      seen.push(...page);
      if (page.length) after = page[page.length - 1]!.position;
    }
  })();
  const sub: RecordedEvent[] = [];
  const subscription = reader.subscribe({ onEvents: (e) => void sub.push(...e), batchSize: 37 });
  const perWriter = 40;
  await Promise.all(
    Array.from({ length: 50 }, async (_, w) => {
      const store = stores[w % stores.length]!;
      for (let i = 0; i < perWriter; i++) {
        if (i % 3 === 0) {
          await store.appendMany([
            { stream: `w${w}-a`, events: [ev(i)], expected: 'any' },
            { stream: `w${w}-b`, events: [ev(i), ev(i)], expected: 'any' },
          ]);
        } else await store.append(`w${w}-a`, [ev(i)], 'any');
        // Failed appends (conflicts) in between must not leave holes either.
        await store.append(`w${w}-a`, [ev(i)], 'no_stream').catch((e: unknown) => {
          if (!(e instanceof WrongExpectedRevisionError)) throw e;
        });
      }
    }),
  );
  const final: RecordedEvent[] = [];
  for await (const e of reader.readAll()) final.push(e);
  await until('subscription caught up', () => sub.length >= final.length, WAIT_MS, 10);
  stop = true;
  await polling;
  const tail = await reader.readPage(seen.length ? seen[seen.length - 1]!.position : undefined, 100_000);
  seen.push(...tail);
  await subscription.close();

  const expected = 50 * (perWriter + Math.ceil(perWriter / 3) * 2);
  t.equal(final.length, expected, 'every acknowledged event is in the log');
  t.ok(final.every((e, i) => e.position === BigInt(i + 1)), 'final positions are 1..n without holes');
  const ids = (l: RecordedEvent[]) => l.map((e) => e.id);
  t.equal(new Set(ids(seen)).size, seen.length, 'the catch-up reader saw no duplicates');
  t.strictSame(ids(seen), ids(final), 'the catch-up reader saw every event, in the final order (no gaps)');
  t.strictSame(ids(sub), ids(final), 'the subscription delivered every event once, in the final order');
});

t.test('a subscription wakes on NOTIFY from another process long before its poll', async (t) => {
  const url = await testDatabase(t, 'notify');
  const a = await openPostgresEventStore(url, { pollIntervalMs: 60_000 });
  const b = await openPostgresEventStore(url, { pollIntervalMs: 60_000 });
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  const got: RecordedEvent[] = [];
  let caughtUp = false;
  const sub = a.subscribe({ onEvents: (e) => void got.push(...e), onCaughtUp: () => (caughtUp = true) });
  t.teardown(() => sub.close());
  await until('caught up', () => caughtUp, WAIT_MS, 5);
  // With a one-minute poll, only the notification can deliver this within the wait.
  await b.append('n-1', [ev(1)], 'no_stream');
  await until('notified', () => got.length === 1, WAIT_MS, 5);
  t.equal(got[0]?.stream, 'n-1');
});

t.test('polling is the safety net when the LISTEN connection is killed', async (t) => {
  const url = await testDatabase(t, 'poll');
  const a = await openPostgresEventStore(url, { pollIntervalMs: 50 });
  const b = await openPostgresEventStore(url);
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  const got: RecordedEvent[] = [];
  const sub = a.subscribe({ onEvents: (e) => void got.push(...e) });
  t.teardown(() => sub.close());
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  t.teardown(() => admin.end());
  // Kill every LISTEN session of this database (the store's listener).
  await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`);
  await b.append('p-1', [ev(1)], 'no_stream');
  await until('polled', () => got.length === 1, WAIT_MS, 5);
  t.equal(got[0]?.stream, 'p-1', 'delivered without a notification');
});

t.test('schema: versioned migrations, identity', async (t) => {
  const url = await testDatabase(t, 'schema');
  // Two processes opening a new database at once: the migration runs once.
  const [a, b] = await Promise.all([openPostgresEventStore(url), openPostgresEventStore(url)]);
  t.equal(await a.identity(), await b.identity(), 'one identity per store');
  t.match(await a.identity(), /^postgres:[0-9a-f-]{36}$/);
  await a.close();
  await b.close();
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  t.teardown(() => admin.end());
  const v = await admin.query<{ version: number }>('SELECT version FROM stoat_migrations ORDER BY version');
  t.strictSame(v.rows.map((r) => r.version), MIGRATIONS.map((_, i) => i + 1), 'each migration applied once');
  // A database from a newer build is refused with a clear error, not written to.
  await admin.query('INSERT INTO stoat_migrations (version) VALUES ($1)', [MIGRATIONS.length + 1]);
  await t.rejects(openPostgresEventStore(url), /schema version/, 'a newer schema is refused');
  await admin.query('DELETE FROM stoat_migrations WHERE version = $1', [MIGRATIONS.length + 1]);
  const c = await openPostgresEventStore(url);
  t.teardown(() => c.close());
  t.equal(await c.identity(), (await admin.query(`SELECT value FROM store_info WHERE key = 'identity'`)).rows[0].value, 'identity kept');
});

t.test('a failed commit rejects the whole group and writes nothing; positions stay contiguous', async (t) => {
  const url = await testDatabase(t, 'fail');
  let fail = true;
  const store = await openPostgresEventStore(url, {
    beforeCommit: () => {
      if (fail) throw new Error('injected failure');
    },
  });
  t.teardown(() => store.close());
  const r = await Promise.allSettled([store.append('a', [ev(1)], 'no_stream'), store.append('b', [ev(2)], 'no_stream')]);
  t.same(r.map((x) => x.status), ['rejected', 'rejected']);
  t.equal(await store.headPosition(), undefined, 'nothing written');
  fail = false;
  const ok = await store.append('a', [ev(1)], 'no_stream');
  t.equal(ok.position, 1n, 'the next append takes position 1: no hole');
});

t.test('group commit: 200 concurrent appends share few transactions; a conflict fails only its append', async (t) => {
  const url = await testDatabase(t, 'group');
  const store: PostgresEventStore = await openPostgresEventStore(url);
  t.teardown(() => store.close());
  const results = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => store.append(i % 2 ? `g-${i}` : 'one', [ev(i)], 'no_stream')));
  t.equal(results.filter((r) => r.status === 'fulfilled').length, 101, '100 distinct streams and one winner on "one"');
  t.ok(store.stats().commits <= 10, `200 appends took ${store.stats().commits} transactions`);
});

t.test('local validation refuses what KurrentDB would refuse', async (t) => {
  const url = await testDatabase(t, 'valid');
  const store = await openPostgresEventStore(url);
  t.teardown(() => store.close());
  await t.rejects(store.append('v-1', [ev(1, 'Bad Type')], 'any'), InvalidAppendError);
  await t.rejects(store.appendMany([]), InvalidAppendError);
  await t.rejects(store.appendMany([{ stream: 'v-1', events: [], expected: 'any' }]), InvalidAppendError);
  await t.rejects(
    store.appendMany([
      { stream: 'Case-1', events: [ev(1)], expected: 'any' },
      { stream: 'case-1', events: [ev(1)], expected: 'any' },
    ]),
    InvalidAppendError,
  );
  t.equal(await store.headPosition(), undefined, 'nothing written');
  await store.append('v-1', [ev(1, 'Ok.Type:v1$-_')], 'any');
  t.equal(await store.streamRevision('v-1'), 0, 'the allowed alphabet is accepted');
});

t.test('the append lock is per schema: one schema holding it does not stop another from appending', async (t) => {
  const url = await testDatabase(t, 'lockkey');
  t.not(appendLockKey('one'), appendLockKey('two'), 'different keys');
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let holding = false;
  const a = await openPostgresEventStore(`${url}?schema=one`, {
    beforeCommit: async () => {
      holding = true;
      await held;
    },
  });
  const b = await openPostgresEventStore(`${url}?schema=two`);
  t.teardown(async () => {
    release();
    await a.close();
    await b.close();
  });
  const first = a.append('l-1', [ev(1)], 'no_stream');
  await until('schema one holds its append lock', () => holding, WAIT_MS, 5);
  // Without a lock of its own, schema two waits for schema one's transaction (here: for ever).
  const other = await Promise.race([
    b.append('l-1', [ev(2)], 'no_stream').then((r) => r.position),
    // A blocked append waits for ever: the bound only has to outlast a loaded machine's slow append.
    new Promise<string>((r) => setTimeout(() => r('blocked'), WAIT_MS).unref()),
  ]);
  t.equal(other, 1n, 'schema two appended while schema one held its lock');
  release();
  t.equal((await first).position, 1n, 'schema one commits too');
});

t.test('a payload JSON cannot hold fails its own append, not the others of its group', async (t) => {
  const url = await testDatabase(t, 'payload');
  const store = await openPostgresEventStore(url);
  t.teardown(() => store.close());
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  const bad = (data: unknown): NewEvent => ({ ...ev(0), data });
  const commits = store.stats().commits;
  const r = await Promise.allSettled([
    store.append('j-1', [ev(1)], 'no_stream'),
    store.append('j-2', [bad({ n: 1n })], 'no_stream'),
    store.appendMany([
      { stream: 'j-3', events: [ev(3)], expected: 'no_stream' },
      { stream: 'j-4', events: [bad(cycle)], expected: 'no_stream' },
    ]),
    store.append('j-5', [ev(5)], 'no_stream'),
  ]);
  t.same(r.map((x) => x.status), ['fulfilled', 'rejected', 'rejected', 'fulfilled']);
  t.ok(r[1]!.status === 'rejected' && r[1]!.reason instanceof InvalidAppendError, 'a BigInt is refused as an invalid append');
  t.ok(r[2]!.status === 'rejected' && r[2]!.reason instanceof InvalidAppendError, 'a cycle is refused as an invalid append');
  t.equal(store.stats().commits - commits, 1, 'the two good appends shared one commit');
  const all: RecordedEvent[] = [];
  for await (const e of store.readAll()) all.push(e);
  t.same(all.map((e) => e.stream), ['j-1', 'j-5'], 'only the good appends were written');
});

t.test('the server ending the session between queries: the process lives and the next append works', async (t) => {
  const url = await testDatabase(t, 'terminate');
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  t.teardown(() => admin.end());
  let kill = true;
  const store = await openPostgresEventStore(url, {
    beforeCommit: async () => {
      if (!kill) return;
      kill = false;
      // The store's session sits idle inside its transaction: end it, and wait until the server has.
      const { rows } = await admin.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction' AND pid <> pg_backend_pid()`,
      );
      t.equal(rows.length, 1, 'one session inside a transaction');
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await until('the session is gone', async () => (await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [rows[0]!.pid])).rowCount === 0, WAIT_MS, 5);
      // Give the socket's error time to reach the client before the COMMIT (it would crash the process unheard).
      await new Promise((r) => setTimeout(r, 100));
    },
  });
  t.teardown(() => store.close());
  const err = await store.append('k-1', [ev(1)], 'no_stream').then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  t.ok(err, 'the append whose session ended failed');
  t.ok(isStorageUnavailable(err), `it answers 503, not 500 (${err?.message})`);
  t.equal(await store.headPosition(), undefined, 'nothing was written');
  const ok = await store.append('k-1', [ev(2)], 'no_stream');
  t.equal(ok.position, 1n, 'the next append works, on a new session');
});

t.test('time limits: a writer stuck inside its transaction holding the lock stops the others only briefly', async (t) => {
  const url = await testDatabase(t, 'timeouts');
  const timeouts = { lockMs: 300, statementMs: 5_000, idleInTransactionMs: 1_000 };
  let release!: () => void;
  const stuck = new Promise<void>((r) => (release = r));
  let holding = false;
  // Stands for a paused process: it holds the append lock in an open transaction and sends nothing.
  const frozen = await openPostgresEventStore(url, {
    timeouts,
    beforeCommit: async () => {
      holding = true;
      await stuck;
    },
  });
  // The other writer takes its limits from the configuration, as the service does.
  const other = (await openEventStore(
    loadConfig({ EVENTSTORE_URL: url, PG_LOCK_TIMEOUT_MS: '300', PG_STATEMENT_TIMEOUT_MS: '5000', PG_IDLE_TX_TIMEOUT_MS: '1000' }),
  )) as PostgresEventStore;
  t.teardown(async () => {
    release();
    await frozen.close();
    await other.close();
  });
  const lost = frozen.append('f-1', [ev(1)], 'no_stream').then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  await until('the frozen writer holds the lock', () => holding, WAIT_MS, 5);
  const started = Date.now();
  const refused: Error[] = [];
  const done = await until(
    'the other writer appends again',
    async () => {
      try {
        return await other.append('f-2', [ev(2)], 'any');
      } catch (e) {
        refused.push(e as Error);
        return undefined;
      }
    },
    WAIT_MS,
    10,
  );
  t.ok(done.position >= 1n, `appended after ${Date.now() - started} ms`);
  t.ok(refused.length >= 1, 'appends that waited past the lock limit failed meanwhile');
  t.ok(refused.every((e) => isStorageUnavailable(e)), `and each failure is a 503 (${refused.map((e) => (e as { code?: string }).code ?? e.message).join(', ')})`);
  release();
  t.ok(await lost, 'the frozen writer, resumed, finds its session ended: its append failed');
  const heads: RecordedEvent[] = [];
  for await (const e of other.readAll()) heads.push(e);
  t.notOk(heads.some((e) => e.stream === 'f-1'), 'and nothing of it was written');
  await frozen.append('f-1', [ev(3)], 'no_stream');
  t.pass('the resumed writer appends again');
});

t.test('PG_LOCK_TIMEOUT_MS, PG_STATEMENT_TIMEOUT_MS, PG_IDLE_TX_TIMEOUT_MS: defaults and bounds', async (t) => {
  t.strictSame(loadConfig({}).pgTimeouts, DEFAULT_TIMEOUTS, 'the defaults are the store\'s');
  t.strictSame(loadConfig({ PG_LOCK_TIMEOUT_MS: '100', PG_STATEMENT_TIMEOUT_MS: '100', PG_IDLE_TX_TIMEOUT_MS: '100' }).pgTimeouts, {
    lockMs: 100,
    statementMs: 100,
    idleInTransactionMs: 100,
  });
  t.throws(() => loadConfig({ PG_LOCK_TIMEOUT_MS: '99' }), /PG_LOCK_TIMEOUT_MS/, 'below 100 ms is refused');
  t.throws(() => loadConfig({ PG_IDLE_TX_TIMEOUT_MS: '0' }), /PG_IDLE_TX_TIMEOUT_MS/, 'no limit is not an option');
  t.throws(() => loadConfig({ PG_STATEMENT_TIMEOUT_MS: '600001' }), /PG_STATEMENT_TIMEOUT_MS/, 'above 10 minutes is refused');
  t.ok(loadConfig({ PG_LOCK_TIMEOUT_MS: '15000' }), 'a lock limit equal to the statement limit is accepted');
  t.throws(() => loadConfig({ PG_LOCK_TIMEOUT_MS: '15001' }), /PG_LOCK_TIMEOUT_MS.*PG_STATEMENT_TIMEOUT_MS/, 'a lock limit above the statement limit is refused');
});
