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
 * The 1M figure must stay within a small factor of the 1k one: the channel is never scanned.
 * RATE_LIMITS=off: the channels bucket would otherwise be measured.
 */
import path from 'node:path';
import { median, repeat, type Bench, type BenchResult } from './lib.ts';
import { assertClean, call, measure, startServer, waitServing, type Measured } from './http.ts';
import { CHANNEL_SIZES as SIZES, rebuiltHistory, type SeededHistory } from './seeded.ts';
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
      ctx.log(`search: ${runs.map((r) => r.sizes.map((m) => Math.round(m.rps)).join('/')).join(', ')} req/s (1k/100k/1M); history ${runs.map((r) => r.ceilings.map((m) => Math.round(m.rps)).join('/')).join(', ')}`);
      return results;
    } finally {
      await svc.stop();
    }
  },
};
export default bench;
