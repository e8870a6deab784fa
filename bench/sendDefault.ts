/**
 * `send-default`: the send rate of the default start (`npm start`: ROLES api,media,projector,worker in one
 * process) against ROLES=api,projector (the `send` row's topology: no worker or media role), in ONE run, in
 * alternating rounds on the same load (the `footprint` bench's: 300-byte messages without a link or mention into
 * 20 channels of one server, 10 users, 50 connections, RATE_LIMITS=off), on a private redis-server of its own.
 *
 * The machine is shared and loaded (2 cores, other engineers' tests): a rate moves 3× between rounds. So each
 * round runs both sides back to back (the order alternating), and after each side's round the bench waits
 * until that process is quiet again (its CPU ticks stop rising: the projector, the search indexer and the
 * followers have caught up), counting that CPU to the side whose sends caused it and keeping it out of the
 * other side's round. It reports the median rate of each side, the ratio of the medians and the median of the
 * rounds' ratios (the row's ratio), and the CPU per send of each side's threads (main, the search indexer's
 * thread, the rest) and of redis-server, with the load average before and after.
 */
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { startPrivateRedis } from '../scripts/redis.mjs';
import { median, type Bench, type BenchContext, type BenchResult } from './lib.ts';
import { assertClean, measure, startServer, type ServerProcess } from './http.ts';
import { cpuSplit, env, load, threadTicks } from './footprint.ts';

/** Waits until a process's CPU ticks rise by at most 2 (20 ms) over 300 ms, or 15 s passed. */
async function quiet(pid: number): Promise<void> {
  const total = () => [...threadTicks(pid).values()].reduce((s, x) => s + x, 0);
  let last = total();
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 300));
    const now = total();
    if (now - last <= 2) return;
    last = now;
  }
}

interface Round {
  rps: number;
  p99: number;
  /** µs per send: the service's main thread, its busiest other thread (the search indexer's), the rest, redis-server. */
  main: number;
  indexer: number;
  rest: number;
  redis: number;
}

const loadavg = () => os.loadavg().map((l) => l.toFixed(1)).join(' / ');

const bench: Bench = {
  name: 'send-default',
  description: 'send rate of the default start vs ROLES=api,projector, alternating rounds in one run, with the CPU per send of each',
  async run(ctx: BenchContext): Promise<BenchResult[]> {
    const redisSrv = await startPrivateRedis({ dir: path.join(ctx.tmpDir, 'redis') });
    const redisPid = redisSrv.child.pid!;
    const stops: Array<() => Promise<void>> = [];
    const loadBefore = loadavg();
    try {
      const dprefix = `sdd:${randomBytes(3).toString('hex')}:`, aprefix = `sda:${randomBytes(3).toString('hex')}:`;
      const dflt: ServerProcess = await startServer('service', env(redisSrv.url, dprefix, path.join(ctx.tmpDir, 'default')));
      stops.push(() => dflt.stop());
      const apiOnly: ServerProcess = await startServer('service', env(redisSrv.url, aprefix, path.join(ctx.tmpDir, 'api'), 'api,projector'));
      stops.push(() => apiOnly.stop());
      const dnext = await load(dflt.urls.apiUrl!), anext = await load(apiOnly.urls.apiUrl!);
      const duration = ctx.quick ? 4 : 6;
      // Warm-up: JIT, connections, the first pages of the log.
      await measure({ url: dflt.urls.apiUrl!, method: 'POST', next: dnext, duration: 2 });
      await measure({ url: apiOnly.urls.apiUrl!, method: 'POST', next: anext, duration: 2 });
      await quiet(dflt.pid);
      await quiet(apiOnly.pid);
      const rounds = ctx.quick ? 5 : 9;
      const d: Round[] = [], a: Round[] = [];
      for (let r = 0; r < rounds; r++) {
        for (const which of r % 2 ? ['a', 'd'] : ['d', 'a']) {
          const proc = which === 'd' ? dflt : apiOnly;
          const c0 = threadTicks(proc.pid), rc0 = threadTicks(redisPid);
          const m = assertClean(`send (${which})`, await measure({ url: proc.urls.apiUrl!, method: 'POST', next: which === 'd' ? dnext : anext, duration }));
          await quiet(proc.pid);
          const s = cpuSplit(c0, threadTicks(proc.pid));
          const per = (x: number) => (x * 1e6) / m.requests;
          (which === 'd' ? d : a).push({ rps: m.rps, p99: m.p99, main: per(s.main), indexer: per(s.busiest), rest: per(s.rest), redis: per(cpuSplit(rc0, threadTicks(redisPid)).total) });
        }
      }
      const loadAfter = loadavg();
      const med = (xs: Round[], k: keyof Round) => median(xs.map((x) => x[k]));
      const dm = med(d, 'rps'), am = med(a, 'rps');
      const ratios = d.map((x, r) => x.rps / a[r]!.rps);
      const paired = median(ratios);
      const cpu = (xs: Round[]) => {
        const total = median(xs.map((x) => x.main + x.indexer + x.rest + x.redis));
        return { total, line: `${Math.round(total)} µs (main ${Math.round(med(xs, 'main'))}, search indexer thread ${Math.round(med(xs, 'indexer'))}, other threads ${Math.round(med(xs, 'rest'))}, redis-server ${Math.round(med(xs, 'redis'))})` };
      };
      const dc = cpu(d), ac = cpu(a);
      ctx.log(`default: ${d.map((x) => Math.round(x.rps)).join(', ')} sends/s; api,projector: ${a.map((x) => Math.round(x.rps)).join(', ')}; ratios ${ratios.map((x) => x.toFixed(2)).join(', ')}`);
      ctx.log(`CPU per send, default: ${dc.line}; api,projector: ${ac.line}; load average before ${loadBefore}, after ${loadAfter}`);
      return [
        {
          name: 'send-default',
          figure: 'message sends/s, 50 connections, default topology (npm start) vs ROLES=api,projector',
          median: dm,
          unit: 'req/s',
          ceiling: am,
          ceilingLabel: `ROLES=api,projector, alternating rounds (p99 ${Math.round(med(a, 'p99'))} ms; the default's ${Math.round(med(d, 'p99'))} ms)`,
          ratio: paired,
          notes: `300-byte messages without a link, RATE_LIMITS=off, 10 users × 20 channels, ${rounds} rounds of ${duration} s each, alternating, each side's round followed by a wait until its process is quiet (counted to it); default ${d.map((x) => Math.round(x.rps)).join(', ')}; api,projector ${a.map((x) => Math.round(x.rps)).join(', ')} sends/s; ratio = median of the rounds' ratios (${ratios.map((x) => x.toFixed(2)).join(', ')}); ratio of the medians ${(dm / am).toFixed(2)}. CPU per send (medians of the rounds): default ${dc.line}; api,projector ${ac.line}; the default costs ${(dc.total / ac.total).toFixed(2)}× the CPU of a send. Load average (1 / 5 / 15 min) ${loadBefore} before, ${loadAfter} after: the machine is shared`,
        },
      ];
    } finally {
      for (const s of stops.reverse()) await s().catch(() => {});
      await redisSrv.stop();
    }
  },
};
export default bench;
