/**
 * `compliance`: events/s of the compliance export (`src/compliance/export.ts`, JSONL to a discarding sink)
 * over a SQLite log of message events (each message sent, edited twice, reacted to, a quarter deleted, in
 * interleaved order so the LRU is exercised), against a plain read of the same log (`readAll`, every event
 * decoded, nothing else) in the same run. The notes give the heap growth during the export, to show that
 * memory stays flat. 1M events (`--quick`: 100k).
 */
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { writeCompliance } from '../src/compliance/export.ts';
import type { StreamWrite } from '../src/eventstore/port.ts';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import { newId } from '../src/ids.ts';
import { median, type Bench } from './lib.ts';

/** Seeds `total` events; returns the count written. */
export async function seed(store: SqliteEventStore, total: number): Promise<number> {
  const server = newId();
  const channel = newId();
  const at = new Date().toISOString();
  const meta = (actor: string) => ({ actor, requestId: 'bench', at, scope: server });
  let n = 0;
  // Batches of 250 messages: their sends, then both edits, reactions and deletions, stream by stream.
  const users = Array.from({ length: 50 }, () => newId());
  while (n < total) {
    const ids = Array.from({ length: 250 }, () => newId());
    const author = (i: number) => users[i % users.length]!;
    const sends: StreamWrite[] = ids.map((id, i) => ({
      stream: `message-${id}`,
      expected: 'no_stream',
      events: [{ id: randomUUID(), type: 'MessageSent', data: { message: { _id: id, channel, author: author(i), content: `message ${id} with some ordinary words in it` } }, metadata: meta(author(i)) }],
    }));
    await store.appendMany(sends);
    const rest: StreamWrite[] = ids.map((id, i) => ({
      stream: `message-${id}`,
      expected: 0,
      events: [
        { id: randomUUID(), type: 'MessageEdited', data: { channel, data: { content: `edited ${id}` }, edited: at }, metadata: meta(author(i)) },
        { id: randomUUID(), type: 'MessageReacted', data: { channel, userId: author(i + 1), emoji: '👍' }, metadata: meta(author(i + 1)) },
        { id: randomUUID(), type: 'MessageEdited', data: { channel, data: { content: `edited again ${id}` }, edited: at }, metadata: meta(author(i)) },
        ...(i % 4 === 0 ? [{ id: randomUUID(), type: 'MessageDeleted', data: { channel }, metadata: meta(author(i)) }] : []),
      ],
    }));
    await store.appendMany(rest);
    n += sends.length + rest.reduce((k, w) => k + w.events.length, 0);
  }
  return n;
}

/** A sink that discards what it is given. */
function sink(): Writable {
  return new Writable({ write: (_chunk, _enc, cb) => cb() });
}

const bench: Bench = {
  name: 'compliance',
  description: 'compliance export events/s vs a plain read of the log',
  async run(ctx) {
    const target = ctx.quick ? 100_000 : 1_000_000;
    const store = new SqliteEventStore(path.join(ctx.tmpDir, 'events.sqlite'));
    try {
      const total = await seed(store, target);
      ctx.log(`seeded ${total} events`);
      const plain: number[] = [];
      const exp: number[] = [];
      let heapGrowth = 0;
      let rows = 0;
      const retained: string[] = [];
      for (let r = 0; r < ctx.repeats; r++) {
        let t0 = performance.now();
        let k = 0;
        for await (const _e of store.readAll()) k++;
        plain.push(k / ((performance.now() - t0) / 1000));
        global.gc?.();
        const heap0 = process.memoryUsage().heapUsed;
        let peak = heap0;
        t0 = performance.now();
        rows = await writeCompliance(store, sink(), {}, 'jsonl', {
          onProgress: (k) => {
            peak = Math.max(peak, process.memoryUsage().heapUsed);
            // With --expose-gc: what stays live every 100k events (flat if the export keeps no per-event state).
            if (k % 100_000 === 0 && global.gc) {
              global.gc();
              retained.push(`${k / 1000}k: ${((process.memoryUsage().heapUsed - heap0) / 2 ** 20).toFixed(1)} MB`);
            }
          },
        });
        exp.push(total / ((performance.now() - t0) / 1000));
        heapGrowth = Math.max(heapGrowth, peak - heap0);
      }
      ctx.log(`export ${exp.map(Math.round).join(', ')} events/s; plain read ${plain.map(Math.round).join(', ')} events/s; ${rows} rows; peak heap growth ${(heapGrowth / 2 ** 20).toFixed(1)} MB; live heap after GC ${retained.join(', ') || 'not measured (no --expose-gc)'}`);
      const figure = median(exp);
      const ceiling = median(plain);
      return [
        {
          name: 'compliance-export',
          figure: `events/s, compliance export (JSONL) of ${total.toLocaleString('en-US')} message events`,
          median: figure,
          unit: 'events/s',
          ceiling,
          ceilingLabel: 'plain readAll of the same log',
          ratio: figure / ceiling,
          notes: `${rows.toLocaleString('en-US')} rows; peak heap growth during the export ${(heapGrowth / 2 ** 20).toFixed(1)} MB (sampled every 1000 events, garbage included; LRU of 10,000 messages); live heap growth after GC ${retained.join(', ') || 'not measured (run with --expose-gc)'}`,
        },
      ];
    } finally {
      await store.close();
    }
  },
};

export default bench;
