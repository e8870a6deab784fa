import { spawn } from 'node:child_process';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Worker } from 'node:worker_threads';
import t from 'tap';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import { WrongExpectedRevisionError, type NewEvent } from '../src/eventstore/port.ts';
import { eventStoreContract } from './eventstore.contract.ts';
import { tempDir } from './helpers/service.ts';
import { until } from './helpers/wait.ts';

const meta = { actor: null, requestId: 'r', at: new Date(0).toISOString(), scope: 's' };
const ev = (n: number): NewEvent => ({ id: crypto.randomUUID(), type: 'Tested', data: { n }, metadata: meta });

t.test('contract', async (t) => {
  await eventStoreContract(t, 'sqlite', async () => {
    const dir = tempDir(t, 'sqlite-contract');
    const store = new SqliteEventStore(path.join(dir, 'events.sqlite'), { pollIntervalMs: 10 });
    return { store, cleanup: async () => store.close() };
  });
});

t.test('group commit: concurrent appends share commits', async (t) => {
  const dir = tempDir(t);
  const store = new SqliteEventStore(path.join(dir, 'e.sqlite'));
  t.teardown(() => store.close());
  await Promise.all(Array.from({ length: 200 }, (_, i) => store.append(`s-${i}`, [ev(i)], 'no_stream')));
  const s = store.stats();
  t.equal(s.appends, 200);
  t.ok(s.commits <= 5, `200 appends issued together took ${s.commits} commits`);
  // Sequential appends each get their own commit.
  for (let i = 0; i < 5; i++) await store.append('seq', [ev(i)], 'any');
  t.equal(store.stats().commits, s.commits + 5);
});

t.test('a conflict inside a group fails only that append', async (t) => {
  const dir = tempDir(t);
  const store = new SqliteEventStore(path.join(dir, 'e.sqlite'));
  t.teardown(() => store.close());
  const results = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => store.append('one', [ev(i)], 'no_stream')));
  t.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
  t.ok(results.filter((r) => r.status === 'rejected').every((r) => (r as PromiseRejectedResult).reason instanceof WrongExpectedRevisionError));
  t.equal(store.stats().commits, 1, 'all 50 decided in one transaction');
  t.equal((await store.readStream('one')).length, 1);
});

t.test('a failed commit rejects every append of its group and writes nothing', async (t) => {
  const dir = tempDir(t);
  let fail = true;
  const store = new SqliteEventStore(path.join(dir, 'e.sqlite'), {
    beforeCommit: () => {
      if (fail) throw new Error('injected disk failure');
    },
  });
  t.teardown(() => store.close());
  const r = await Promise.allSettled([store.append('a', [ev(1)], 'no_stream'), store.append('b', [ev(2)], 'no_stream')]);
  t.same(r.map((x) => x.status), ['rejected', 'rejected']);
  t.equal(await store.headPosition(), undefined);
  fail = false;
  await store.append('a', [ev(1)], 'no_stream');
  t.equal(await store.streamRevision('a'), 0);
});

t.test('the event loop keeps running while a commit is in progress', async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'e.sqlite');
  // The writer sleeps 200 ms inside each transaction, before COMMIT (a slow fsync).
  const store = new SqliteEventStore(file, { writerDelayMs: 200 });
  t.teardown(() => store.close());
  await store.append('warm', [ev(0)], 'no_stream');
  // A probe connection that never waits: BEGIN IMMEDIATE is refused (SQLITE_BUSY) while the writer's
  // transaction is open.
  const probe = new Database(file, { timeout: 0 });
  t.teardown(() => probe.close());
  const writerHoldsTransaction = () => {
    try {
      probe.exec('BEGIN IMMEDIATE');
      probe.exec('ROLLBACK');
      return false;
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_BUSY') return true;
      throw err;
    }
  };
  let settled = false;
  let firedDuringCommit = 0;
  let readDuringCommit: number | undefined;
  const timer = setInterval(() => {
    if (settled || !writerHoldsTransaction()) return;
    firedDuringCommit++;
    // Reads on the main thread answer meanwhile, with the committed state.
    void store.streamRevision('warm').then((r) => (readDuringCommit ??= r));
  }, 5);
  t.teardown(() => clearInterval(timer));
  await store.append('warm', [ev(1)], 0).finally(() => (settled = true));
  clearInterval(timer);
  t.ok(firedDuringCommit > 0, `a timer fired while the writer held the transaction (${firedDuringCommit} times)`);
  t.equal(readDuringCommit, 0, 'a read during the commit saw the state before it');
  t.equal(await store.streamRevision('warm'), 1, 'the append is visible once it resolved');
});

t.test('a writer thread that dies mid-commit fails its group; the next append starts a new writer', async (t) => {
  const dir = tempDir(t);
  const store = new SqliteEventStore(path.join(dir, 'e.sqlite'), { writerDelayMs: 300 });
  t.teardown(() => store.close());
  await store.append('a', [ev(0)], 'no_stream');
  const writer = (store as unknown as { s: { writer?: Worker } }).s.writer!;
  const pending = store.append('a', [ev(1)], 0);
  // Killed while it sleeps inside the open transaction, before COMMIT.
  setTimeout(() => void writer.terminate(), 100);
  await t.rejects(pending, 'the append in flight fails');
  t.equal(await store.streamRevision('a'), 0, 'nothing of it was written');
  t.same(await store.append('a', [ev(1)], 0), { revision: 1, position: 2n }, 'a new writer takes the next append');
});

t.test('committed events are handed to caught-up subscriptions exactly as a fresh reader reads them', async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'handoff.sqlite');
  const a = new SqliteEventStore(file, { pollIntervalMs: 10 });
  // Another process appending to the same file: its positions interleave with this process's groups.
  const b = new SqliteEventStore(file, { pollIntervalMs: 10 });
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  const first: Array<Awaited<ReturnType<SqliteEventStore['readPage']>>[number]> = [];
  const second: typeof first = [];
  const subs = [
    a.subscribe({
      onEvents: (events) => {
        first.push(...events);
        // A subscriber that changes what it was given must not change what others see.
        for (const e of events) (e.data as { n: unknown }).n = 'changed';
      },
    }),
    a.subscribe({ onEvents: (events) => void second.push(...events) }),
  ];
  t.teardown(() => Promise.all(subs.map((s) => s.close())));
  const expected = new Map<string, unknown>();
  const evOf = (n: number) => {
    const e = ev(n);
    expected.set(e.id, structuredClone(e.data));
    return e;
  };
  for (let round = 0; round < 30; round++) {
    const mine = [evOf(round), evOf(round + 1000)];
    const done = Promise.all([
      a.append(`a-${round % 3}`, mine, 'any'),
      a.appendMany([{ stream: `m-${round}`, events: [evOf(round)], expected: 'no_stream' }, { stream: 'm-all', events: [evOf(round)], expected: 'any' }]),
      round % 2 ? b.append('b', [evOf(round)], 'any') : Promise.resolve(),
    ]);
    // The appender changing its objects after the append must not change what subscribers see.
    mine[0]!.data = { n: 'appender changed it' };
    await done;
    if (round % 5 === 0) await a.append(`a-${round % 3}`, [evOf(round)], 'any');
  }
  const head = (await a.headPosition())!;
  await until('both subscriptions reach the head', () => first.at(-1)?.position === head && second.at(-1)?.position === head);
  const fresh = new SqliteEventStore(file);
  t.teardown(() => fresh.close());
  const log = fresh.readPage(undefined, 10_000);
  t.equal(log.length, expected.size, 'every appended event is in the file');
  t.ok(log.every((e) => JSON.stringify(e.data) === JSON.stringify(expected.get(e.id))), 'the file holds the data as appended');
  t.strictSame(second, log, 'the second subscription got exactly the records a fresh reader reads, in order');
  t.strictSame(
    first.map((e) => e.id),
    log.map((e) => e.id),
    'the first subscription got the same events, in order',
  );
  t.ok(a.handedOff() > 0, `events were handed off without reading them back (${a.handedOff()} of ${2 * log.length})`);
  t.ok(a.handedOff() < 2 * log.length, 'events after another process\'s commit were read back');
});

t.test('two processes append to one file; positions stay in order', async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'shared.sqlite');
  const a = new SqliteEventStore(file);
  const b = new SqliteEventStore(file);
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).append('shared', [ev(i)], 'any')));
  const all: bigint[] = [];
  for await (const e of a.readAll()) all.push(e.position);
  t.equal(all.length, 100);
  t.ok(all.every((p, i) => i === 0 || p > all[i - 1]!), 'positions strictly increase');
  t.equal(await b.streamRevision('shared'), 99);
});

t.test('SIGKILL during appends: every acknowledged append survives', async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'crash.sqlite');
  const script = `
    import { SqliteEventStore } from ${JSON.stringify(path.resolve('src/eventstore/sqlite.ts'))};
    const store = new SqliteEventStore(${JSON.stringify(file)});
    const meta = { actor: null, requestId: 'r', at: '1970-01-01T00:00:00.000Z', scope: 's' };
    let n = 0;
    async function writer(w) {
      for (;;) {
        const i = n++;
        await store.append('crash-' + w, [{ id: crypto.randomUUID(), type: 'T', data: { i }, metadata: meta }], 'any');
        process.stdout.write('ack ' + w + ' ' + i + '\\n');
      }
    }
    for (let w = 0; w < 8; w++) writer(w);
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const acked = new Set<string>();
  let buf = '';
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    const lines = buf.split('\n');
    buf = lines.pop()!;
    for (const l of lines) if (l.startsWith('ack ')) acked.add(l.slice(4));
  });
  await new Promise((r) => setTimeout(r, 1500));
  while (acked.size < 200) await new Promise((r) => setTimeout(r, 50));
  child.kill('SIGKILL');
  await new Promise((r) => child.on('exit', r));
  const store = new SqliteEventStore(file);
  t.teardown(() => store.close());
  const found = new Set<string>();
  for await (const e of store.readAll()) found.add(`${e.stream.slice(6)} ${(e.data as { i: number }).i}`);
  const missing = [...acked].filter((a) => !found.has(a));
  t.equal(missing.length, 0, `all ${acked.size} acknowledged appends are in the log (${found.size} found)`);
});
