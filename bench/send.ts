/**
 * `send`: message sends/s and p50/p99 at 50 connections through the real API (session lookup, access,
 * decide, append to SQLite with group commit, projection, read-your-writes, the created message read back),
 * next to a bare koa route and a bare node:http server answering a JSON POST of the same body in the same run. RATE_LIMITS=off (the
 * limiter is measured by `limits`), and the sends are spread over 10 users × 20 channels anyway, so neither
 * the limits nor one stream's lock is what is measured.
 */
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { median, percentile, repeat, type Bench, type BenchContext } from './lib.ts';
import { assertClean, measure, setupServer, signupUser, startServer, type BenchUser } from './http.ts';
import { deletePrefix } from '../test/helpers/service.ts';

/** A message of a typical length. */
export const SEND_BODY = JSON.stringify({ content: 'Hello from the benchmark: a chat message of a fairly typical length, with a link https://example.com.' });

function serviceEnv(ctx: BenchContext, prefix: string, roles: string): Record<string, string> {
  return { ROLES: roles, RATE_LIMITS: 'off', API_PORT: '0', HOST: '127.0.0.1', DATA_DIR: path.join(ctx.tmpDir, 'data'), REDIS_URL: ctx.redisUrl, REDIS_PREFIX: prefix };
}

/** The service as two processes on the same data: a projector process, then an API process. */
async function splitService(ctx: BenchContext, prefix: string): Promise<{ api: string; stop(): Promise<void> }> {
  const projector = await startServer('service', serviceEnv(ctx, prefix, 'projector'));
  const api = await startServer('service', serviceEnv(ctx, prefix, 'api')).catch(async (err: unknown) => {
    await projector.stop();
    throw err;
  });
  return { api: api.urls.apiUrl!, stop: async () => void (await Promise.all([api.stop(), projector.stop()])) };
}

const bench: Bench = {
  name: 'send',
  description: 'POST /channels/:id/messages at 50 connections vs a bare koa JSON POST of the same body',
  async run(ctx) {
    const prefix = `bench:send:${randomBytes(4).toString('hex')}:`;
    const svc = await startServer('service', serviceEnv(ctx, prefix, 'api,projector'));
    const bare = await startServer('bare');
    const node = await startServer('node');
    const floor = await startServer('floor', { REDIS_URL: ctx.redisUrl, REDIS_PREFIX: `${prefix}floor:`, FLOOR_DIR: ctx.tmpDir });
    try {
      const api = svc.urls.apiUrl!;
      const users: BenchUser[] = [];
      for (let i = 0; i < 10; i++) users.push(await signupUser(api));
      const { channels } = await setupServer(api, users[0]!, 20, users.slice(1));
      let i = 0;
      const next = () => {
        const u = users[i % users.length]!;
        const c = channels[Math.floor(i / users.length) % channels.length]!;
        i++;
        return { path: `/channels/${c}/messages`, headers: { 'X-Session-Token': u.token, 'Content-Type': 'application/json' }, body: SEND_BODY };
      };
      const duration = ctx.quick ? 4 : 8;
      // Warm both up (JIT, connections, SQLite pages) before measuring.
      await measure({ url: api, method: 'POST', next, duration: 2 });
      await measure({ url: bare.urls.url!, method: 'POST', next, duration: 1 });
      await measure({ url: node.urls.url!, method: 'POST', next, duration: 1 });
      await measure({ url: floor.urls.url!, method: 'POST', next, duration: 1 });
      const runs = await repeat(ctx.repeats, async () => ({
        real: assertClean('send', await measure({ url: api, method: 'POST', next, duration })),
        ceiling: assertClean('bare POST', await measure({ url: bare.urls.url!, method: 'POST', next, duration })),
        node: assertClean('node:http POST', await measure({ url: node.urls.url!, method: 'POST', next, duration })),
        floor: assertClean('floor POST', await measure({ url: floor.urls.url!, method: 'POST', next, duration })),
      }));
      // The same load on two processes: an API process and a projector process (which also runs the search
      // indexer) on the same event store and Redis — the first step of scaling out.
      await svc.stop();
      const split = await splitService(ctx, prefix);
      let splitRuns;
      try {
        await measure({ url: split.api, method: 'POST', next, duration: 2 });
        splitRuns = await repeat(ctx.repeats, async () => assertClean('send (split)', await measure({ url: split.api, method: 'POST', next, duration })));
      } finally {
        await split.stop();
      }
      const rps = median(runs.map((r) => r.real.rps));
      const splitRps = median(splitRuns.map((r) => r.rps));
      const ceiling = median(runs.map((r) => r.ceiling.rps));
      const nodeCeiling = median(runs.map((r) => r.node.rps));
      const floorCeiling = median(runs.map((r) => r.floor.rps));
      ctx.log(
        `send: ${runs.map((r) => Math.round(r.real.rps)).join(', ')} req/s; bare koa: ${runs.map((r) => Math.round(r.ceiling.rps)).join(', ')}; node:http: ${runs.map((r) => Math.round(r.node.rps)).join(', ')}; floor: ${runs.map((r) => Math.round(r.floor.rps)).join(', ')}; ${i} requests in all`,
      );
      return [
        {
          name: 'send',
          figure: 'message sends/s, 50 connections',
          median: rps,
          unit: 'req/s',
          p50: median(runs.map((r) => r.real.p50)),
          p99: median(runs.map((r) => r.real.p99)),
          ceiling,
          ceilingLabel: `bare koa JSON POST (p50/p99 ${percentile(runs.map((r) => r.ceiling.p50), 50)}/${percentile(runs.map((r) => r.ceiling.p99), 50)} ms)`,
          ratio: rps / ceiling,
          notes: 'RATE_LIMITS=off; 10 users × 20 channels; every send appends with fsync (group commit) and answers after its projection (read-your-writes)',
        },
        {
          name: 'send-split',
          figure: 'message sends/s, 50 connections, API and projector in two processes',
          median: splitRps,
          unit: 'req/s',
          p50: median(splitRuns.map((r) => r.p50)),
          p99: median(splitRuns.map((r) => r.p99)),
          ceiling,
          ceilingLabel: 'bare koa JSON POST (the send row\'s ceiling)',
          ratio: splitRps / ceiling,
          notes: 'ROLES=api in one process, ROLES=projector (with the search indexer thread) in another, same SQLite file and Redis; the projector learns of commits through Redis pub/sub',
        },
        {
          name: 'send-vs-node',
          figure: 'message sends/s, 50 connections, vs bare node:http',
          median: rps,
          unit: 'req/s',
          p50: median(runs.map((r) => r.real.p50)),
          p99: median(runs.map((r) => r.real.p99)),
          ceiling: nodeCeiling,
          ceilingLabel: `bare node:http JSON POST (p50/p99 ${percentile(runs.map((r) => r.node.p50), 50)}/${percentile(runs.map((r) => r.node.p99), 50)} ms)`,
          ratio: rps / nodeCeiling,
        },
        {
          name: 'send-vs-floor',
          figure: 'message sends/s, 50 connections, vs the floor of a durable, projected send',
          median: rps,
          unit: 'req/s',
          p50: median(runs.map((r) => r.real.p50)),
          p99: median(runs.map((r) => r.real.p99)),
          ceiling: floorCeiling,
          ceilingLabel: `bare koa + SQLite group commit (fsync) + the projection's Redis MULTI (p50/p99 ${percentile(runs.map((r) => r.floor.p50), 50)}/${percentile(runs.map((r) => r.floor.p99), 50)} ms)`,
          ratio: rps / floorCeiling,
          notes: 'the floor does only what the guarantees cost (durable append, projected before the answer); the rest of a send is session, access, decide, limits, idempotency and the middleware',
        },
        {
          name: 'floor-vs-koa',
          figure: 'the floor itself, against bare koa',
          median: floorCeiling,
          unit: 'req/s',
          p50: median(runs.map((r) => r.floor.p50)),
          p99: median(runs.map((r) => r.floor.p99)),
          ceiling,
          ceilingLabel: 'bare koa JSON POST (the send row\'s ceiling)',
          ratio: floorCeiling / ceiling,
          notes: 'how far below bare koa a send can get at most on this machine, with an fsync per group and the Redis writes',
        },
      ];
    } finally {
      await Promise.all([svc.stop(), bare.stop(), node.stop(), floor.stop()]);
      await deletePrefix(ctx.redisUrl, prefix);
    }
  },
};
export default bench;
