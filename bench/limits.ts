/**
 * `limits` (issue 3): what the rate limiter and the idempotency store cost per message send. One service
 * process serves the same routes twice: its normal API (limiter on, every send with its own
 * `Idempotency-Key`) and a second API app on the same dependencies with the limiter off and sends without a
 * key. Both are driven alike, interleaved, at 50 connections; sends are spread over 20 users × 50 channels
 * so no (session, channel) counter reaches its 10 per window and nothing is refused. Besides the HTTP
 * figures, the notes give the in-process cost of `limiter.hit` + `idempotency.reserve` per request.
 */
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { IdempotencyStore } from '../src/idempotency/store.ts';
import { RateLimiter } from '../src/ratelimit/limiter.ts';
import { median, repeat, type Bench } from './lib.ts';
import { assertClean, measure, setupServer, signupUser, startServer, type BenchUser } from './http.ts';
import { SEND_BODY } from './send.ts';
import { deletePrefix } from '../test/helpers/service.ts';

/** Nanoseconds per request of limiter.hit + idempotency.reserve, over `pairs` callers × channels. */
function inProcessCost(pairs: number): { withBoth: number; without: number } {
  let clock = 0;
  const limiter = new RateLimiter({ now: () => clock });
  const off = new RateLimiter({ enabled: false });
  const store = new IdempotencyStore();
  const n = 200_000;
  const run = (fn: (i: number) => void) => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) fn(i);
    return Number(process.hrtime.bigint() - t0) / n;
  };
  const withBoth = run((i) => {
    // ~1000 requests per simulated second: windows open, fill and roll over as in a real run.
    clock = Math.floor(i / 1000) * 1000;
    limiter.hit(`s:${i % pairs}`, 'messaging', `c${i % 37}`);
    store.reserve(`u${i % 20}`, `key-${i}`);
  });
  const without = run((i) => {
    off.hit(`s:${i % pairs}`, 'messaging', `c${i % 37}`);
  });
  return { withBoth, without };
}

const bench: Bench = {
  name: 'limits',
  description: 'message send with the rate limiter and Idempotency-Key vs the same route with both off, one process',
  async run(ctx) {
    const prefix = `bench:limits:${randomBytes(4).toString('hex')}:`;
    const svc = await startServer('service', {
      ROLES: 'api,projector',
      RATE_LIMITS: 'on',
      BENCH_UNLIMITED: '1',
      API_PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: path.join(ctx.tmpDir, 'data'),
      REDIS_URL: ctx.redisUrl,
      REDIS_PREFIX: prefix,
    });
    try {
      const limited = svc.urls.apiUrl!;
      const unlimited = svc.urls.unlimitedUrl!;
      // Set up through the unlimited app: account and channel creation have their own (small) budgets.
      const users: BenchUser[] = [];
      for (let i = 0; i < 20; i++) users.push(await signupUser(unlimited));
      const { channels } = await setupServer(unlimited, users[0]!, 50, users.slice(1));
      const pairs = users.length * channels.length;
      let key = 0;
      const sender = (withKey: boolean) => {
        let i = 0;
        return () => {
          const u = users[i % users.length]!;
          const c = channels[Math.floor(i / users.length) % channels.length]!;
          i++;
          const headers: Record<string, string> = { 'X-Session-Token': u.token, 'Content-Type': 'application/json' };
          if (withKey) headers['Idempotency-Key'] = `bench-${++key}`;
          return { path: `/channels/${c}/messages`, headers, body: SEND_BODY };
        };
      };
      // At most 3 sends per (session, channel) per run, and a run lasts seconds: no counter reaches 10 in a window.
      const amount = pairs * (ctx.quick ? 2 : 3);
      await measure({ url: unlimited, method: 'POST', next: sender(false), amount: 500 });
      const onNext = sender(true);
      const offNext = sender(false);
      const runs = await repeat(ctx.repeats, async () => ({
        on: assertClean('limits on', await measure({ url: limited, method: 'POST', next: onNext, amount })),
        off: assertClean('limits off', await measure({ url: unlimited, method: 'POST', next: offNext, amount })),
      }));
      const on = median(runs.map((r) => r.on.rps));
      const off = median(runs.map((r) => r.off.rps));
      const cost = inProcessCost(pairs);
      ctx.log(`limits on: ${runs.map((r) => Math.round(r.on.rps)).join(', ')} req/s; off: ${runs.map((r) => Math.round(r.off.rps)).join(', ')} req/s`);
      ctx.log(`in process: limiter.hit + idempotency.reserve ${(cost.withBoth / 1000).toFixed(2)} µs per request; a disabled limiter ${(cost.without / 1000).toFixed(2)} µs`);
      return [
        {
          name: 'limits',
          figure: 'sends/s with limiter + Idempotency-Key, 50 connections',
          median: on,
          unit: 'req/s',
          p50: median(runs.map((r) => r.on.p50)),
          p99: median(runs.map((r) => r.on.p99)),
          ceiling: off,
          ceilingLabel: `the same route, limiter off and no key (p50/p99 ${median(runs.map((r) => r.off.p50))}/${median(runs.map((r) => r.off.p99))} ms)`,
          ratio: on / off,
          notes:
            `in process: limiter.hit + idempotency.reserve ${(cost.withBoth / 1000).toFixed(2)} µs per request ` +
            `(a disabled limiter ${(cost.without / 1000).toFixed(2)} µs); ${users.length} users × ${channels.length} channels, ${amount} sends per run, none refused`,
        },
      ];
    } finally {
      await svc.stop();
      await deletePrefix(ctx.redisUrl, prefix);
    }
  },
};
export default bench;
