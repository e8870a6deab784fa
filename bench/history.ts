/**
 * `history`: GET /channels/:id/messages?limit=100 (req/s, p50/p99 at 50 connections) in channels of 1k,
 * 100k and 1M messages, next to a bare koa GET of the same pre-serialised 100-message page in the same run.
 * Requests alternate between the newest page and a page `before` a random message of the channel, so
 * reads deep in the history are measured too. The channels are bench/seeded.ts's: 1.1M MessageSent events
 * appended straight into the event store, read models built by `npm run rebuild`. The 1M figure must stay
 * within 20 % of the 1k figure: a page costs O(log n + page).
 * RATE_LIMITS=off: one reader on one channel would otherwise be measuring the channels bucket (15 / 10 s).
 */
import { median, repeat, type Bench, type BenchResult } from './lib.ts';
import { assertClean, call, measure, startServer, waitServing, type Measured } from './http.ts';
import { CHANNEL_SIZES as SIZES, pageReader, rebuiltHistory } from './seeded.ts';

const bench: Bench = {
  name: 'history',
  description: 'GET …/messages?limit=100 in channels of 1k, 100k and 1M messages vs a bare koa GET of the same page',
  async run(ctx) {
    const h = await rebuiltHistory(ctx);
    const channels = h.channels;
    const owner = h.owner;
    const svc = await startServer('service', {
      // Reads only: the read models are built (by the rebuild), and no projector or search indexer shares the
      // process's CPU (an idle projector costs nothing; an indexer would build the search index meanwhile).
      ROLES: 'api',
      RATE_LIMITS: 'off',
      API_PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: h.dataDir,
      REDIS_URL: ctx.redisUrl,
      REDIS_PREFIX: h.prefix,
    });
    const bare = await startServer('bare');
    const node = await startServer('node');
    try {
      const api = svc.urls.apiUrl!;
      await waitServing(api, owner.token);
      for (let i = 0; i < SIZES.length; i++) {
        const newest = await call(`${api}/channels/${channels[i]}/messages?limit=1`, 'GET', owner.token);
        if (newest.length !== 1) throw new Error(`channel ${SIZES[i]!.label} is empty after the rebuild`);
      }
      const page = await call(`${api}/channels/${channels[0]}/messages?limit=100`, 'GET', owner.token);
      if (page.length !== 100) throw new Error(`a page has ${page.length} messages`);
      await call(`${bare.urls.url}/page`, 'PUT', undefined, page, 204);
      await call(`${node.urls.url}/page`, 'PUT', undefined, page, 204);

      const duration = ctx.quick ? 3 : 5;
      await measure({ url: api, method: 'GET', next: pageReader(h, 0), duration: 2 });
      await measure({ url: bare.urls.url!, method: 'GET', next: pageReader(h, 0), duration: 1 });
      // Interleaved, so drift in the machine's load hits every size alike.
      const runs = await repeat(ctx.repeats, async () => {
        const sizes: Measured[] = [];
        for (let i = 0; i < SIZES.length; i++) sizes.push(assertClean(`history ${SIZES[i]!.label}`, await measure({ url: api, method: 'GET', next: pageReader(h, i), duration })));
        const ceiling = assertClean('bare GET', await measure({ url: bare.urls.url!, method: 'GET', next: pageReader(h, 0), duration }));
        const nodeCeiling = assertClean('node:http GET', await measure({ url: node.urls.url!, method: 'GET', next: pageReader(h, 0), duration }));
        return { sizes, ceiling, nodeCeiling };
      });
      const ceiling = median(runs.map((r) => r.ceiling.rps));
      const results: BenchResult[] = SIZES.map((s, i) => {
        const rps = median(runs.map((r) => r.sizes[i]!.rps));
        return {
          name: `history-${s.label}`,
          figure: `100-message pages/s, ${s.label} messages, 50 connections`,
          median: rps,
          unit: 'req/s',
          p50: median(runs.map((r) => r.sizes[i]!.p50)),
          p99: median(runs.map((r) => r.sizes[i]!.p99)),
          ceiling,
          ceilingLabel: 'bare koa GET of the same page',
          ratio: rps / ceiling,
          ...(i === 0
            ? { notes: `ROLES=api, RATE_LIMITS=off; newest page and pages before random messages alternate; ${h.messages.toLocaleString('en-US')} messages seeded into the event store, read models built by \`npm run rebuild\` (rebuild-1m)` }
            : {}),
        };
      });
      const big = results[results.length - 1]!;
      const small = results[0]!;
      results.push({
        name: 'history-1m-vs-1k',
        figure: 'pages/s at 1M messages ÷ at 1k',
        median: big.median,
        unit: 'req/s',
        p50: big.p50!,
        p99: big.p99!,
        ceiling: small.median,
        ceilingLabel: `the 1k channel (p50/p99 ${small.p50}/${small.p99} ms)`,
        ratio: big.median / small.median,
        notes: 'must stay ≥ 0.80 (within 20 %): a page costs O(log n + page), not O(channel size)',
      });
      const nodeCeiling = median(runs.map((r) => r.nodeCeiling.rps));
      results.push({
        name: 'history-1k-vs-node',
        figure: '100-message pages/s, 1k messages, vs bare node:http',
        median: small.median,
        unit: 'req/s',
        p50: small.p50!,
        p99: small.p99!,
        ceiling: nodeCeiling,
        ceilingLabel: `bare node:http GET of the same page (p50/p99 ${median(runs.map((r) => r.nodeCeiling.p50))}/${median(runs.map((r) => r.nodeCeiling.p99))} ms)`,
        ratio: small.median / nodeCeiling,
      });
      ctx.log(`history: ${runs.map((r) => r.sizes.map((m) => Math.round(m.rps)).join('/')).join(', ')} req/s (1k/100k/1M); bare koa ${runs.map((r) => Math.round(r.ceiling.rps)).join(', ')}; node:http ${runs.map((r) => Math.round(r.nodeCeiling.rps)).join(', ')}`);
      return results;
    } finally {
      await Promise.all([svc.stop(), bare.stop(), node.stop()]);
    }
  },
};
export default bench;
