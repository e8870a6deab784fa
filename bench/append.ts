/**
 * `append`: appends/s through the SQLite event store with 1 writer and with 50 concurrent writers (group
 * commit), next to raw better-sqlite3 inserts with the same durability (WAL, synchronous=FULL) measured in
 * the same run: one row per transaction for the single writer, 50 rows per transaction for 50 writers.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import type { NewEvent } from '../src/eventstore/port.ts';
import { median, repeat, type Bench } from './lib.ts';

const meta = { actor: '01J0000000000000000000000A', requestId: 'bench', at: '2026-01-01T00:00:00.000Z', scope: '01J0000000000000000000000B' };
const event = (i: number): NewEvent => ({
  id: crypto.randomUUID(),
  type: 'MessageSent',
  data: { i, content: 'x'.repeat(200), channel: '01J0000000000000000000000C' },
  metadata: meta,
});

function rawInserts(file: string, total: number, perTx: number): number {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE t (position INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT, stream TEXT, revision INTEGER, type TEXT, data TEXT, metadata TEXT, UNIQUE(stream, revision))');
  const ins = db.prepare('INSERT INTO t (id, stream, revision, type, data, metadata) VALUES (?, ?, ?, ?, ?, ?)');
  const tx = db.transaction((from: number) => {
    for (let i = from; i < from + perTx; i++) {
      const e = event(i);
      ins.run(e.id, `s-${i % 50}`, Math.floor(i / 50), e.type, JSON.stringify(e.data), JSON.stringify(e.metadata));
    }
  });
  const t0 = performance.now();
  for (let i = 0; i < total; i += perTx) tx.immediate(i);
  const s = (performance.now() - t0) / 1000;
  db.close();
  return total / s;
}

async function storeAppends(file: string, total: number, writers: number): Promise<{ rate: number; commits: number }> {
  const store = new SqliteEventStore(file);
  const per = Math.ceil(total / writers);
  // The writer thread starts with the first append (~150 ms): a running service pays it once, not per run.
  await store.append('warm-up', [event(0)], 'no_stream');
  const warm = store.stats().commits;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let r = 0; r < per; r++) await store.append(`w-${w}`, [event(r)], r === 0 ? 'no_stream' : r - 1);
    }),
  );
  const s = (performance.now() - t0) / 1000;
  const commits = store.stats().commits - warm;
  await store.close();
  return { rate: (per * writers) / s, commits };
}

const bench: Bench = {
  name: 'append',
  description: 'event store appends/s (1 and 50 writers) vs raw SQLite inserts with the same fsync policy',
  async run(ctx) {
    const n1 = ctx.quick ? 300 : 1500;
    const n50 = ctx.quick ? 2000 : 10000;
    const one = await repeat(ctx.repeats, async (i) => (await storeAppends(path.join(ctx.tmpDir, `a1-${i}.sqlite`), n1, 1)).rate);
    const raw1 = await repeat(ctx.repeats, async (i) => rawInserts(path.join(ctx.tmpDir, `r1-${i}.sqlite`), n1, 1));
    let commits = 0;
    const fifty = await repeat(ctx.repeats, async (i) => {
      const r = await storeAppends(path.join(ctx.tmpDir, `a50-${i}.sqlite`), n50, 50);
      commits = r.commits;
      return r.rate;
    });
    const raw50 = await repeat(ctx.repeats, async (i) => rawInserts(path.join(ctx.tmpDir, `r50-${i}.sqlite`), n50, 50));
    ctx.log(`50 writers: ${n50} appends in ${commits} commits (last run)`);
    return [
      { name: 'append-1', figure: 'appends/s, 1 writer', median: median(one), unit: '/s', ceiling: median(raw1), ceilingLabel: 'raw insert, 1 row per commit', ratio: median(one) / median(raw1) },
      {
        name: 'append-50',
        figure: 'appends/s, 50 writers',
        median: median(fifty),
        unit: '/s',
        ceiling: median(raw50),
        ceilingLabel: 'raw insert, 50 rows per commit',
        ratio: median(fifty) / median(raw50),
        notes: `group commit: ${n50} appends took ${commits} commits in the last run`,
      },
    ];
  },
};
export default bench;
