import { spawn } from 'node:child_process';
import path from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import { moduleSpecifier, scriptNodeArgs } from '../src/built.ts';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import { openEventStore } from '../src/eventstore/open.ts';
import { loadConfig } from '../src/config.ts';
import { WrongExpectedRevisionError, type NewEvent } from '../src/eventstore/port.ts';
import { InvalidAppendError } from '../src/eventstore/validate.ts';
import { eventStoreContract } from './eventstore.contract.ts';
import { tempDir } from './helpers/service.ts';

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

/** Resolves after `n` turns of the event loop (each turn runs the store's setImmediate flushes). */
const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

t.test('group commit waits for announced appends, and only for them', async (t) => {
  const dir = tempDir(t);
  // A hold of a minute: any test below that waited for the deadline instead of its rule would time out.
  const store = new SqliteEventStore(path.join(dir, 'e.sqlite'), { commitDelayMs: 60_000 });
  t.teardown(() => store.close());

  // Nothing announced: a lone append commits in the next turn.
  let lone = false;
  const first = store.append('lone', [ev(0)], 'no_stream').then(() => (lone = true));
  await turns(3);
  t.ok(lone, 'a lone append is not held');
  await first;
  const c0 = store.stats().commits;

  // Two commands deciding: the group of the first waits until the second has appended too.
  const a = store.expectAppend();
  const b = store.expectAppend();
  let firstDone = false;
  const p1 = store.append('held-1', [ev(1)], 'no_stream').then(() => (firstDone = true));
  a();
  await turns(5);
  t.notOk(firstDone, 'held while another append is announced');
  t.equal(store.stats().commits, c0, 'nothing committed yet');
  const p2 = store.append('held-2', [ev(2)], 'no_stream');
  b();
  await Promise.all([p1, p2]);
  t.equal(store.stats().commits, c0 + 1, 'both appends went in one commit');

  // An announcement given up (the command failed before appending) releases the group as well.
  const c = store.expectAppend();
  const d = store.expectAppend();
  const p3 = store.append('held-3', [ev(3)], 'no_stream');
  c();
  d();
  d();
  await p3;
  t.equal(store.stats().commits, c0 + 2, 'released once nothing is announced any more');

  // Releasing twice counts once: a later announcement still holds.
  const e = store.expectAppend();
  let p4Done = false;
  const p4 = store.append('held-4', [ev(4)], 'no_stream').then(() => (p4Done = true));
  await turns(5);
  t.notOk(p4Done, 'held by the new announcement, not released by the double call above');
  e();
  await p4;
});

t.test('group commit: a hold ends at the deadline', async (t) => {
  const dir = tempDir(t);
  const store = new SqliteEventStore(path.join(dir, 'e.sqlite'), { commitDelayMs: 20 });
  t.teardown(() => store.close());
  const never = store.expectAppend();
  t.teardown(never);
  const p = store.append('s', [ev(1)], 'no_stream');
  let done = false;
  void p.then(() => (done = true));
  await turns(3);
  t.notOk(done, 'held at first');
  await p;
  t.equal(store.stats().commits, 1, 'committed once the deadline passed, though the announcement never ended');
  // With a delay of 0 nothing is ever held.
  const eager = new SqliteEventStore(path.join(dir, 'f.sqlite'), { commitDelayMs: 0 });
  t.teardown(() => eager.close());
  const held = eager.expectAppend();
  t.teardown(held);
  let eagerDone = false;
  const q = eager.append('s', [ev(1)], 'no_stream').then(() => (eagerDone = true));
  await turns(3);
  t.ok(eagerDone, 'commitDelayMs 0: committed in the next turn');
  await q;
});

t.test('SQLITE_COMMIT_DELAY_MS reaches the store the service opens', async (t) => {
  for (const [value, held] of [['0', false], ['100', true]] as const) {
    const store = (await openEventStore(loadConfig({ DATA_DIR: tempDir(t), SQLITE_COMMIT_DELAY_MS: value }))) as SqliteEventStore;
    t.teardown(() => store.close());
    const announced = store.expectAppend();
    let done = false;
    const p = store.append('s', [ev(1)], 'no_stream').then(() => (done = true));
    await turns(3);
    t.equal(!done, held, `SQLITE_COMMIT_DELAY_MS=${value}: ${held ? 'held for the announced append' : 'committed at once'}`);
    announced();
    await p;
  }
});

t.test('closing the store commits a held group', async (t) => {
  const dir = tempDir(t);
  const store = new SqliteEventStore(path.join(dir, 'e.sqlite'), { commitDelayMs: 60_000 });
  const pending = store.expectAppend();
  const p = store.append('s', [ev(1)], 'no_stream');
  await turns(2);
  await store.close();
  t.same(await p, { revision: 0, position: 1n }, 'the held append was committed by close');
  pending();
  const again = new SqliteEventStore(path.join(dir, 'e.sqlite'));
  t.teardown(() => again.close());
  t.equal(await again.streamRevision('s'), 0, 'and is in the file');
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

t.test('a payload JSON cannot hold fails its own append, not the others of its group', async (t) => {
  const dir = tempDir(t);
  const store = new SqliteEventStore(path.join(dir, 'e.sqlite'));
  t.teardown(() => store.close());
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  const bad = (data: unknown): NewEvent => ({ ...ev(0), data });
  const r = await Promise.allSettled([
    store.append('j-1', [ev(1)], 'no_stream'),
    store.append('j-2', [bad({ n: 1n })], 'no_stream'),
    store.appendMany([
      { stream: 'j-3', events: [ev(3)], expected: 'no_stream' },
      { stream: 'j-4', events: [bad(cycle)], expected: 'no_stream' },
    ]),
    store.append('j-5', [ev(5)], 'no_stream'),
    store.append('j-6', [{ ...ev(6), data: undefined }], 'no_stream'),
  ]);
  t.same(r.map((x) => x.status), ['fulfilled', 'rejected', 'rejected', 'fulfilled', 'fulfilled']);
  t.ok(r[1]!.status === 'rejected' && r[1]!.reason instanceof InvalidAppendError, 'a BigInt is refused as an invalid append');
  t.ok(r[2]!.status === 'rejected' && r[2]!.reason instanceof InvalidAppendError, 'a cycle is refused as an invalid append');
  t.equal(store.stats().commits, 1, 'the good appends shared one commit');
  const all = [];
  for await (const e of store.readAll()) all.push(e);
  t.same(all.map((e) => [e.stream, e.data]), [['j-1', { n: 1 }], ['j-5', { n: 5 }], ['j-6', null]], 'only the good appends were written (undefined data as null, as on PostgreSQL)');
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
    import { SqliteEventStore } from ${JSON.stringify(moduleSpecifier('src/eventstore/sqlite.ts'))};
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
  const child = spawn(process.execPath, [...scriptNodeArgs(), '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
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

t.test('the in-memory tail: live readers get what this process committed, in order, with other processes\' rows between', async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'tail.sqlite');
  const a = new SqliteEventStore(file);
  const b = new SqliteEventStore(file); // a second process on the same file
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  await a.append('x', [ev(1), ev(2), ev(3)], 'no_stream');
  await b.append('y', [ev(4)], 'no_stream');
  await a.append('x', [ev(5)], 2);
  await Promise.all([a.append('z', [ev(6)], 'no_stream'), a.append('x', [ev(7)], 3)]);
  const fromFile = (await collect(b)).map((e) => ({ ...e }));
  t.same(fromFile.map((e) => (e.data as { n: number }).n), [1, 2, 3, 4, 5, 6, 7]);
  // Read through `a` a page at a time, from every starting point: the same events as the file holds.
  for (const limit of [1, 2, 3, 100]) {
    const seen: unknown[] = [];
    let after: bigint | undefined;
    for (;;) {
      const page = a.readPage(after, limit);
      if (page.length === 0) break;
      t.ok(page.length <= limit);
      seen.push(...page.map((e) => ({ ...e })));
      after = page[page.length - 1]!.position;
    }
    t.same(seen, fromFile, `pages of ${limit} through the writing process`);
  }
  // What `a` serves from memory is the row as committed: prove it is not read back by removing the file's copy.
  const last = fromFile[fromFile.length - 1]!;
  const raw = new Database(file);
  raw.prepare('DELETE FROM events WHERE position = ?').run(Number(last.position));
  raw.close();
  const again = a.readPage(last.position - 1n, 10);
  t.equal(again.length, 1, 'the newest event comes from the in-memory tail');
  t.same({ ...again[0]! }, last);
  t.same(b.readPage(last.position - 1n, 10), [], 'the other process reads the file');
  // Shared between readers, so frozen: a projection cannot change what another one reads.
  t.equal(a.readPage(last.position - 1n, 1)[0], again[0], 'one object for every reader');
  t.throws(() => {
    (again[0]!.data as { n: number }).n = 9;
  }, TypeError);
});

t.test('the in-memory tail stays bounded and a long run reads back whole', async (t) => {
  const dir = tempDir(t);
  const store = new SqliteEventStore(path.join(dir, 'long.sqlite'));
  t.teardown(() => store.close());
  for (let i = 0; i < 10; i++) await Promise.all(Array.from({ length: 500 }, (_, k) => store.append(`s-${i}-${k}`, [ev(i * 500 + k)], 'no_stream')));
  const held = (store as unknown as { recent: unknown[] }).recent.length;
  t.ok(held <= 4096 && held >= 3072, `the tail holds the newest 3,072 to 4,096 events, no more (${held})`);
  let most = 0;
  for (let i = 10; i < 20; i++) {
    await Promise.all(Array.from({ length: 300 }, (_, k) => store.append(`s-${i}-${k}`, [ev(i * 500 + k)], 'no_stream')));
    most = Math.max(most, (store as unknown as { recent: unknown[] }).recent.length);
  }
  t.ok(most <= 4096, `never more than 4,096 (${most})`);
  const got = await collect(store);
  t.equal(got.length, 8000);
  const ns = got.map((e) => (e.data as { n: number }).n);
  const expected = [...Array.from({ length: 5000 }, (_, i) => i), ...Array.from({ length: 10 }, (_, r) => Array.from({ length: 300 }, (_, k) => (r + 10) * 500 + k)).flat()];
  t.ok(got.every((e, i) => e.position === BigInt(i + 1)) && ns.every((n, i) => n === expected[i]), 'every event once, in order');
  const fresh = new SqliteEventStore(path.join(dir, 'long.sqlite'));
  t.teardown(() => fresh.close());
  t.same((await collect(fresh)).map((e) => ({ ...e })), got.map((e) => ({ ...e })), 'the same as a reader of the file alone');
});

/** Every event of the store through subscribe from the start. */
async function collect(store: SqliteEventStore) {
  const out: import('../src/eventstore/port.ts').RecordedEvent[] = [];
  await new Promise<void>((resolve, reject) => {
    const sub = store.subscribe({ batchSize: 7, onEvents: (es) => void out.push(...es), onCaughtUp: () => void sub.close().then(resolve), onError: reject });
  });
  return out;
}
