/**
 * `search`: POST /channels/:id/search (req/s, p50/p99 at 50 connections) in channels of 1k, 100k and 1M
 * messages, next to the history route's page of the same channel in the same run (the ceiling: a search
 * answers with the same messages from the same read model, plus the index lookup). The channels are
 * bench/seeded.ts's (1.1M MessageSent events; every message says "Seeded message number <k>, of a typical
 * length for a chat line."), read models built by `npm run rebuild`; the search index is built from zero by
 * the service's own indexer when it starts (that build is the search-index-build figure, next to a plain
 * read of the whole log). Requests cycle through four kinds of query:
 * - a rare word (one message's number; default sort Relevance);
 * - a word in every message of the channel, Latest (walks the matches newest first, stops at the page);
 * - the same word, Relevance (ranks the newest RELEVANCE_WINDOW matches);
 * - a phrase `"number <k>"`, Oldest.
 * Then the latency of single searches of six shapes in the 1M channel (rare word, common word Latest and
 * Relevance, phrase, a Japanese phrase in every tenth message, the pinned list), each against the raw SQLite
 * query of that shape on the same file.
 * The 1M figure must stay within a small factor of the 1k one: the channel is never scanned.
 * RATE_LIMITS=off: the channels bucket would otherwise be measured.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { fmtMs, latencies, median, repeat, type Bench, type BenchContext, type BenchResult } from './lib.ts';
import { assertClean, call, measure, startServer, waitServing, type Measured } from './http.ts';
import { CHANNEL_SIZES as SIZES, rebuiltHistory, type RebuiltHistory, type SeededHistory } from './seeded.ts';
import { matchExpression } from '../src/search/text.ts';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import { SearchIndex } from '../src/search/index.ts';

/** Requests of one searcher in channel `i`. */
function searcher(h: SeededHistory, i: number): () => { path: string; headers: Record<string, string>; body: string } {
  let n = 0;
  const count = SIZES[i]!.count;
  return () => {
    n++;
    const k = (n * 7919) % count;
    const kind = n % 4;
    const body =
      kind === 0 ? { query: String(k) } : kind === 1 ? { query: 'typical', sort: 'Latest' } : kind === 2 ? { query: 'typical' } : { query: `"number ${k}"`, sort: 'Oldest' };
    return {
      path: `/channels/${h.channels[i]}/search`,
      headers: { 'X-Session-Token': h.owner.token, 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...body, limit: 50 }),
    };
  };
}

/** The ceiling: the history route's newest page of 50 in the same channel. */
function historyReader(h: SeededHistory, i: number): () => { path: string; headers: Record<string, string> } {
  return () => ({ path: `/channels/${h.channels[i]}/messages?limit=50`, headers: { 'X-Session-Token': h.owner.token } });
}

/** Pinned messages in the 1M channel for the pinned shape (spread over its whole length). */
const PINS = 100;

/**
 * Latency of single searches (one client, one request at a time) of several shapes in the 1M channel, each
 * next to the raw SQLite query of the same shape on the same index file, in this process (the ceiling: FTS5
 * alone, without HTTP, session and permission checks, read-your-writes, the Relevance ranking or reading the
 * messages from Redis).
 */
async function shapeLatencies(ctx: BenchContext, api: string, h: RebuiltHistory, file: string): Promise<BenchResult[]> {
  const i = SIZES.findIndex((s) => s.label === '1m');
  const channel = h.channels[i]!;
  const count = SIZES[i]!.count;
  const sample = h.samples[i]!;
  for (let p = 0; p < PINS; p++) await call(`${api}/channels/${channel}/messages/${sample[Math.floor((p * sample.length) / PINS)]}/pin`, 'POST', h.owner.token, undefined, 204);
  const k = (n: number) => (n * 7919 + 13) % count;
  type Shape = { name: string; label: string; body: (n: number) => Record<string, unknown>; raw: (n: number) => [string, unknown[]] };
  const fts = (query: string, order: 'ASC' | 'DESC'): [string, unknown[]] => [`SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rowid ${order} LIMIT 50`, [matchExpression(query, channel)]];
  const shapes: Shape[] = [
    { name: 'rare', label: "a rare word (one message's number), Relevance", body: (n) => ({ query: String(k(n)) }), raw: (n) => fts(String(k(n)), 'DESC') },
    { name: 'common-latest', label: 'a word in 90 % of the messages, Latest', body: () => ({ query: 'typical', sort: 'Latest' }), raw: () => fts('typical', 'DESC') },
    { name: 'common-relevance', label: 'a word in 90 % of the messages, Relevance', body: () => ({ query: 'typical' }), raw: () => fts('typical', 'DESC') },
    { name: 'phrase', label: 'a phrase "number <k>", Oldest', body: (n) => ({ query: `"number ${k(n)}"`, sort: 'Oldest' }), raw: (n) => fts(`"number ${k(n)}"`, 'ASC') },
    { name: 'japanese', label: 'a Japanese phrase 東京 (in 10 % of the messages), Latest', body: () => ({ query: '東京', sort: 'Latest' }), raw: () => fts('東京', 'DESC') },
    {
      name: 'pinned',
      label: `the pinned list (${PINS} pins), Latest`,
      body: () => ({ pinned: true, sort: 'Latest' }),
      raw: () => ['SELECT message_id FROM doc WHERE channel = ? AND pinned = 1 ORDER BY message_id DESC LIMIT 50', [channel]],
    },
  ];
  const db = new Database(file, { readonly: true });
  const n = ctx.quick ? 200 : 500;
  const out: BenchResult[] = [];
  try {
    for (const s of shapes) {
      const first = await call(`${api}/channels/${channel}/search`, 'POST', h.owner.token, { ...s.body(0), limit: 50 });
      if (first.length === 0) throw new Error(`search shape ${s.name} found nothing`);
      const runs = await repeat(ctx.repeats, async () => ({
        http: await latencies(n, (j) => call(`${api}/channels/${channel}/search`, 'POST', h.owner.token, { ...s.body(j), limit: 50 })),
        raw: await latencies(n, (j) => {
          const [sql, args] = s.raw(j);
          return db.prepare(sql).all(...args);
        }),
      }));
      const p50 = median(runs.map((r) => r.http.p50));
      const p99 = median(runs.map((r) => r.http.p99));
      const raw50 = median(runs.map((r) => r.raw.p50));
      const raw99 = median(runs.map((r) => r.raw.p99));
      ctx.log(`search 1m ${s.name}: p50/p99 ${runs.map((r) => `${fmtMs(r.http.p50)}/${fmtMs(r.http.p99)}`).join(', ')}; raw ${runs.map((r) => `${fmtMs(r.raw.p50)}/${fmtMs(r.raw.p99)}`).join(', ')}`);
      out.push({
        name: `search-1m-${s.name}`,
        figure: `latency of one search, 1M messages: ${s.label}`,
        median: p50,
        unit: 'ms',
        p50,
        p99,
        ceiling: raw50,
        ceilingLabel: `the raw SQLite query on the same index file, p50/p99 ${fmtMs(raw50)}/${fmtMs(raw99)}`,
        ratio: raw50 / p50,
        ...(s.name === 'rare'
          ? { notes: `one client, one request at a time (${n} per run), 50 results; ceiling = the FTS5 MATCH (or the pinned index) alone in the bench process, so the ratio is the share of a search's time that is the index lookup` }
          : {}),
      });
    }
  } finally {
    db.close();
  }
  return out;
}

const bench: Bench = {
  name: 'search',
  description: 'POST …/search in channels of 1k, 100k and 1M messages vs the history page of the same channel; search index build from zero',
  async run(ctx) {
    const h = await rebuiltHistory(ctx);
    // A plain read of the whole log: the ceiling of the index build.
    const store = new SqliteEventStore(path.join(h.dataDir, 'events.sqlite'));
    const r0 = performance.now();
    let read = 0;
    for await (const _ of store.readAll()) read++;
    const readSeconds = (performance.now() - r0) / 1000;
    await store.close();

    // The history and memory benchmarks ran a service on this data directory before, and its indexer built
    // the index: remove it, so the build below is from zero.
    for (const f of fs.readdirSync(h.dataDir)) if (f.startsWith('search.sqlite')) fs.rmSync(path.join(h.dataDir, f), { force: true });
    const b0 = performance.now();
    const svc = await startServer('service', {
      ROLES: 'api,projector',
      RATE_LIMITS: 'off',
      API_PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: h.dataDir,
      REDIS_URL: ctx.redisUrl,
      REDIS_PREFIX: h.prefix,
      PROJECTION_WAIT_MS: '600000',
    });
    try {
      const api = svc.urls.apiUrl!;
      await waitServing(api, h.owner.token);
      // The service's indexer builds the index from zero: watch its checkpoint reach the log head (a single
      // search would wait for it too, longer than fetch's own header timeout allows).
      const index = new SearchIndex(path.join(h.dataDir, 'search.sqlite'));
      while ((index.checkpoint() ?? -1n) < BigInt(h.events)) await new Promise((r) => setTimeout(r, 200));
      const buildSeconds = (performance.now() - b0) / 1000;
      const indexed = Number(index.checkpoint());
      index.close();
      const first = await call(`${api}/channels/${h.channels[2]}/search`, 'POST', h.owner.token, { query: '1' });
      if (first.length !== 1) throw new Error(`search for message 1 found ${first.length}`);
      ctx.log(`search index built from zero by the service's indexer: ${indexed.toLocaleString('en-US')} events in ${buildSeconds.toFixed(1)} s; plain log read ${read.toLocaleString('en-US')} events in ${readSeconds.toFixed(1)} s`);
      for (let i = 0; i < SIZES.length; i++) {
        const r = await call(`${api}/channels/${h.channels[i]}/search`, 'POST', h.owner.token, { query: 'typical', sort: 'Latest', limit: 50 });
        if (r.length !== 50) throw new Error(`channel ${SIZES[i]!.label}: ${r.length} results for a word in every message`);
      }

      const shapes = await shapeLatencies(ctx, api, h, path.join(h.dataDir, 'search.sqlite'));

      const duration = ctx.quick ? 3 : 5;
      await measure({ url: api, method: 'POST', next: searcher(h, 0), duration: 2 });
      const runs = await repeat(ctx.repeats, async () => {
        const sizes: Measured[] = [];
        const ceilings: Measured[] = [];
        for (let i = 0; i < SIZES.length; i++) {
          sizes.push(assertClean(`search ${SIZES[i]!.label}`, await measure({ url: api, method: 'POST', next: searcher(h, i), duration })));
          ceilings.push(assertClean(`history ${SIZES[i]!.label}`, await measure({ url: api, method: 'GET', next: historyReader(h, i), duration })));
        }
        return { sizes, ceilings };
      });
      const results: BenchResult[] = SIZES.map((s, i) => {
        const rps = median(runs.map((r) => r.sizes[i]!.rps));
        const ceiling = median(runs.map((r) => r.ceilings[i]!.rps));
        return {
          name: `search-${s.label}`,
          figure: `searches/s (50 results), ${s.label} messages, 50 connections`,
          median: rps,
          unit: 'req/s',
          p50: median(runs.map((r) => r.sizes[i]!.p50)),
          p99: median(runs.map((r) => r.sizes[i]!.p99)),
          ceiling,
          ceilingLabel: 'history page of 50 in the same channel',
          ratio: rps / ceiling,
          ...(i === 0
            ? { notes: 'RATE_LIMITS=off; rare word (Relevance), common word (Latest), common word (Relevance over the newest 10,000 matches) and a phrase (Oldest) in turn; SQLite FTS5 index built by the service from zero' }
            : {}),
        };
      });
      const big = results[results.length - 1]!;
      const small = results[0]!;
      results.push({
        name: 'search-1m-vs-1k',
        figure: 'searches/s at 1M messages ÷ at 1k',
        median: big.median,
        unit: 'req/s',
        p50: big.p50!,
        p99: big.p99!,
        ceiling: small.median,
        ceilingLabel: `the 1k channel (p50/p99 ${small.p50}/${small.p99} ms)`,
        ratio: big.median / small.median,
        notes: 'the channel is never scanned: words and the channel are posting lists of the index',
      });
      results.push({
        name: 'search-index-build',
        figure: 'events/s, search index from zero (service indexer)',
        median: indexed / buildSeconds,
        unit: 'events/s',
        ceiling: read / readSeconds,
        ceilingLabel: 'a plain read of the whole log (readAll)',
        ratio: indexed / buildSeconds / (read / readSeconds),
        notes: 'includes the service start; one transaction per batch of 1,000 events with the checkpoint',
      });
      results.push(...shapes);
      ctx.log(`search: ${runs.map((r) => r.sizes.map((m) => Math.round(m.rps)).join('/')).join(', ')} req/s (1k/100k/1M); history ${runs.map((r) => r.ceilings.map((m) => Math.round(m.rps)).join('/')).join(', ')}`);
      return results;
    } finally {
      await svc.stop();
    }
  },
};
export default bench;
