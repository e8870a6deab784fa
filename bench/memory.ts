/**
 * `memory`: the memory of an API process (ROLES=api) that served 100-message pages of the 100k-message channel
 * at 50 connections, next to a fresh API process that served the same load on the 1k-message channel in the
 * same run (bench/seeded.ts's channels and read models). Peak RSS and the heap used after a full GC; the ratio
 * is the 1k figure ÷ the 100k figure, so 1.00 means the API's memory does not grow with a channel's length
 * (it reads pages from Redis and keeps no messages). The notes give the same processes idle, just started.
 */
import { median, repeat, type Bench, type BenchContext } from './lib.ts';
import { assertClean, measure, startServer, waitServing, type ServerMemory } from './http.ts';
import { CHANNEL_SIZES, pageReader, rebuiltHistory, type RebuiltHistory } from './seeded.ts';

const MB = 2 ** 20;

/** Starts an API process on the read models, reads pages of channel `i` for `duration` s; its memory idle and after. */
async function serveChannel(ctx: BenchContext, h: RebuiltHistory, i: number, duration: number): Promise<{ idle: ServerMemory; loaded: ServerMemory }> {
  const env = { ROLES: 'api', RATE_LIMITS: 'off', API_PORT: '0', HOST: '127.0.0.1', DATA_DIR: h.dataDir, REDIS_URL: ctx.redisUrl, REDIS_PREFIX: h.prefix };
  const api = await startServer('service', env, ['--expose-gc']);
  try {
    await waitServing(api.urls.apiUrl!, h.owner.token);
    const idle = await api.memory();
    assertClean(`memory ${CHANNEL_SIZES[i]!.label}`, await measure({ url: api.urls.apiUrl!, method: 'GET', next: pageReader(h, i), duration }));
    return { idle, loaded: await api.memory() };
  } finally {
    await api.stop();
  }
}

const bench: Bench = {
  name: 'memory',
  description: 'RSS and heap of an API process serving pages of a 100k-message channel vs the same at 1k',
  async run(ctx) {
    const h = await rebuiltHistory(ctx);
    const small = CHANNEL_SIZES.findIndex((s) => s.label === '1k');
    const big = CHANNEL_SIZES.findIndex((s) => s.label === '100k');
    const duration = ctx.quick ? 2 : 4;
    // Interleaved, one fresh process per measurement.
    const runs = await repeat(ctx.repeats, async () => ({
      small: await serveChannel(ctx, h, small, duration),
      big: await serveChannel(ctx, h, big, duration),
    }));
    const mb = (xs: number[]) => median(xs) / MB;
    const rss = { small: mb(runs.map((r) => r.small.loaded.maxRss)), big: mb(runs.map((r) => r.big.loaded.maxRss)) };
    const heap = { small: mb(runs.map((r) => r.small.loaded.heapUsed)), big: mb(runs.map((r) => r.big.loaded.heapUsed)) };
    const idleRss = mb(runs.flatMap((r) => [r.small.idle.maxRss, r.big.idle.maxRss]));
    const idleHeap = mb(runs.flatMap((r) => [r.small.idle.heapUsed, r.big.idle.heapUsed]));
    const f = (x: number) => x.toFixed(1);
    ctx.log(`peak RSS 1k/100k: ${runs.map((r) => `${f(r.small.loaded.maxRss / MB)}/${f(r.big.loaded.maxRss / MB)}`).join(', ')} MB; heap after GC ${runs.map((r) => `${f(r.small.loaded.heapUsed / MB)}/${f(r.big.loaded.heapUsed / MB)}`).join(', ')} MB; idle RSS ${f(idleRss)} MB, heap ${f(idleHeap)} MB`);
    const load = `after ${duration} s of 100-message pages (newest and before random messages) at 50 connections`;
    return [
      {
        name: 'memory-rss-100k',
        figure: 'API process peak RSS, 100k-message channel',
        median: rss.big,
        unit: 'MB',
        ceiling: rss.small,
        ceilingLabel: 'the same load on the 1k channel, fresh API process',
        ratio: rss.small / rss.big,
        notes: `ROLES=api on the rebuilt read models, ${load}; ratio = 1k ÷ 100k (1.00: memory does not grow with the channel); idle just after start: peak RSS ${f(idleRss)} MB, heap ${f(idleHeap)} MB`,
      },
      {
        name: 'memory-heap-100k',
        figure: 'API process heap used after GC, 100k-message channel',
        median: heap.big,
        unit: 'MB',
        ceiling: heap.small,
        ceilingLabel: 'the same load on the 1k channel, fresh API process',
        ratio: heap.small / heap.big,
        notes: 'heap used after a full GC (node --expose-gc), once the load ended',
      },
    ];
  },
};
export default bench;
