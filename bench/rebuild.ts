/**
 * `rebuild`: events/s of `npm run rebuild` (the whole log replayed from position 0 into a fresh generation of
 * read models, then swapped in) over bench/seeded.ts's log at about 100k events (the copy taken after the
 * channels of 1k and 100k) and 1.1M events. Each is next to a raw replay of the same log in the same run: the
 * events read from SQLite in pages of 2000 and JSON-decoded (what the store's subscription does), and every
 * message written with one HSET and one ZADD, one MULTI per page, on one connection. That is the I/O a replay
 * cannot avoid (the same reads, about the same writes) without the projector's own work (upcasting, the
 * projections and their read-through overlay, the WATCHed checkpoint, the cache), so the ratio is the part of
 * the rebuild's time that is I/O it has to do. The notes also give the SQLite read alone. The 1.1M rebuild is
 * the one that builds the read models `history` and `memory` read, so it runs once; the 100k one repeats.
 */
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import { median, repeat, type Bench } from './lib.ts';
import { rebuiltHistory, runRebuild } from './seeded.ts';
import { deletePrefix } from '../test/helpers/service.ts';

/** Events per page: the rebuild's subscription batch (projections/rebuild.ts). */
const PAGE = 2000;

/** Events/s of reading and decoding the whole log, nothing else. */
async function readOnly(dataDir: string): Promise<number> {
  const store = new SqliteEventStore(path.join(dataDir, 'events.sqlite'));
  try {
    const t0 = performance.now();
    let n = 0;
    let after: bigint | undefined;
    for (let page = store.readPage(after, PAGE); page.length > 0; page = store.readPage(after, PAGE)) {
      n += page.length;
      after = page[page.length - 1]!.position;
    }
    return n / ((performance.now() - t0) / 1000);
  } finally {
    await store.close();
  }
}

/** Events/s of the raw replay: the log read and decoded, every message written with one ZADD of its record, one MULTI per page. */
async function rawReplay(dataDir: string, redisUrl: string): Promise<number> {
  const prefix = `bench:rebuild-raw:${randomBytes(4).toString('hex')}:`;
  const store = new SqliteEventStore(path.join(dataDir, 'events.sqlite'));
  const redis = new Redis(redisUrl);
  try {
    const t0 = performance.now();
    let n = 0;
    let after: bigint | undefined;
    for (let page = store.readPage(after, PAGE); page.length > 0; page = store.readPage(after, PAGE)) {
      const m = redis.multi();
      for (const e of page) {
        if (e.type !== 'MessageSent') continue;
        const message = (e.data as { message: { _id: string; channel: string } }).message;
        m.zadd(`${prefix}channel:${message.channel}:history`, 0, JSON.stringify({ ...message, revision: e.revision }));
      }
      after = page[page.length - 1]!.position;
      m.set(`${prefix}cp`, after.toString());
      await m.exec();
      n += page.length;
    }
    return n / ((performance.now() - t0) / 1000);
  } finally {
    redis.disconnect();
    await store.close();
    await deletePrefix(redisUrl, prefix);
  }
}

const bench: Bench = {
  name: 'rebuild',
  description: '`npm run rebuild` events/s over logs of about 100k and 1.1M events vs a raw replay (SQLite read + decode, one ZADD of the record per message) of the same log',
  async run(ctx) {
    const h = await rebuiltHistory(ctx);
    // Right after the 1.1M rebuild (in a whole run it has just been made for this benchmark): the machine's load drifts.
    const bigRaw = await rawReplay(h.dataDir, ctx.redisUrl);
    const bigRead = await readOnly(h.dataDir);
    const small = await repeat(ctx.repeats, async () => {
      const prefix = `bench:rebuild:${randomBytes(4).toString('hex')}:`;
      try {
        const real = await runRebuild(h.smallDataDir, ctx.redisUrl, prefix);
        if (real.events !== h.smallEvents) throw new Error(`the rebuild replayed ${real.events} events of ${h.smallEvents}`);
        return { real: real.rate, raw: await rawReplay(h.smallDataDir, ctx.redisUrl), read: await readOnly(h.smallDataDir) };
      } finally {
        await deletePrefix(ctx.redisUrl, prefix);
      }
    });
    const n = (x: number) => Math.round(x).toLocaleString('en-US');
    ctx.log(`100k: rebuild ${small.map((r) => n(r.real)).join(', ')}; raw replay ${small.map((r) => n(r.raw)).join(', ')}; read alone ${small.map((r) => n(r.read)).join(', ')} events/s`);
    ctx.log(`1.1M: rebuild ${n(h.rebuild.rate)}; raw replay ${n(bigRaw)}; read alone ${n(bigRead)} events/s`);
    const ceilingLabel = 'raw replay of the same log: read + decode, ZADD of each record, MULTI per page';
    const real = median(small.map((r) => r.real));
    const raw = median(small.map((r) => r.raw));
    return [
      {
        name: 'rebuild-100k',
        figure: `events/s, npm run rebuild of ${n(h.smallEvents)} events`,
        median: real,
        unit: 'events/s',
        ceiling: raw,
        ceilingLabel,
        ratio: real / raw,
        notes:
          'the rebuild as the command reports it (replay into a fresh prefix and the swap; not its counting pass for the progress bar), ' +
          'in a process of its own as the command runs (its warm-up weighs more in 4–8 s of a 100k rebuild than in a 1.1M one). The ceiling is the I/O a replay cannot avoid, without the projector, so the ratio is the share of the ' +
          `rebuild's time that is that I/O. The SQLite read + decode alone (${n(median(small.map((r) => r.read)))} events/s) would be a loose ` +
          'ceiling: most of that I/O is the Redis writes',
      },
      {
        name: 'rebuild-1m',
        figure: `events/s, npm run rebuild of ${n(h.events)} events`,
        median: h.rebuild.rate,
        unit: 'events/s',
        ceiling: bigRaw,
        ceilingLabel,
        ratio: h.rebuild.rate / bigRaw,
        notes: `one run (it builds the read models of history and memory); SQLite read + decode alone: ${n(bigRead)} events/s`,
      },
    ];
  },
};
export default bench;
