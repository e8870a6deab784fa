/**
 * `footprint`: what one message costs on the default topology (`npm start`: ROLES api,media,projector,worker
 * in one process), on a private redis-server of its own so that its memory, command count and CPU are the
 * service's alone. 300-byte messages (no link, no mention) go into the channels of one server, 10 users × 20
 * channels, 50 connections. Between 10k and 20k sends (the capped streams have filled by then) it reads:
 *
 * - Redis memory: MEMORY USAGE of every key under the prefix, grouped by key family (ids replaced by `*`);
 *   the slope of the total is the `footprint` row (budget ≤ 700 bytes per message, issue 37).
 * - Redis commands per message (INFO stats), log bytes and search-index bytes per message (SQLite pages in use).
 * - CPU per send of every thread of the service process and of redis-server (/proc/<pid>/task/<tid>/stat), then
 *   the same load on the split topology (an API, a projector and a worker process) for the CPU of each role.
 *
 * Then the CPU per history page on the default topology's filled channels (`cpu-per-page`). The send rate of the
 * default topology against ROLES=api,projector on the same load is the `send-default` bench (sendDefault.ts).
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { Redis as IORedis } from 'ioredis';
import { startPrivateRedis } from '../scripts/redis.mjs';
import type { Bench, BenchContext, BenchResult } from './lib.ts';
import { assertClean, measure, setupServer, signupUser, startServer, type BenchUser, type ServerProcess } from './http.ts';

/** A 300-byte message: plain words, no link, no mention (a typical server-channel message that pushes to nobody). */
export const FOOTPRINT_CONTENT = 'A chat message of three hundred bytes, as people write them in a busy community channel: a few sentences '
  .repeat(3)
  .slice(0, 300);
const BODY = JSON.stringify({ content: FOOTPRINT_CONTENT });
const HZ = 100;
const STEP = 10_000;

/** CPU ticks of each thread of a process (`main` is the thread whose id is the pid). */
export function threadTicks(pid: number): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    let st: string;
    try {
      st = fs.readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    m.set(t === String(pid) ? 'main' : t, Number(f[11]) + Number(f[12]));
  }
  return m;
}

/** CPU seconds per thread between two readings: main, the busiest other thread (the search indexer's, where it runs), the rest. */
export function cpuSplit(a: Map<string, number>, b: Map<string, number>): { main: number; busiest: number; rest: number; total: number } {
  const d = (k: string) => ((b.get(k) ?? 0) - (a.get(k) ?? 0)) / HZ;
  const others = [...b.keys()].filter((k) => k !== 'main').map(d).sort((x, y) => y - x);
  const main = d('main');
  const busiest = others[0] ?? 0;
  const rest = others.slice(1).reduce((s, x) => s + x, 0);
  return { main, busiest, rest, total: main + busiest + rest };
}

/** Normalises a key to its family: the prefix dropped, ids and numbers replaced by `*`. */
export function keyFamily(key: string, prefix: string): string {
  return key
    .slice(prefix.length)
    .replace(/[0-9A-HJKMNP-TV-Z]{26}/g, '*')
    .replace(/\b[0-9a-f]{32,64}\b/g, '*')
    .replace(/\d+/g, '*');
}

/** Bytes of every key family under `prefix` (MEMORY USAGE, all nested values sampled). */
export async function familyBytes(redis: IORedis, prefix: string): Promise<Map<string, { bytes: number; keys: number }>> {
  const out = new Map<string, { bytes: number; keys: number }>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    const pipe = redis.pipeline();
    for (const k of keys) pipe.memory('USAGE', k, 'SAMPLES', 0);
    const sizes = (await pipe.exec()) ?? [];
    keys.forEach((k, i) => {
      const f = keyFamily(k, prefix);
      const e = out.get(f) ?? { bytes: 0, keys: 0 };
      e.bytes += Number(sizes[i]?.[1] ?? 0);
      e.keys++;
      out.set(f, e);
    });
  } while (cursor !== '0');
  return out;
}

const total = (m: Map<string, { bytes: number }>) => [...m.values()].reduce((s, e) => s + e.bytes, 0);

/** Bytes of an SQLite file's pages in use (after a passive WAL checkpoint), 0 when absent. */
function sqliteBytes(file: string): number {
  if (!fs.existsSync(file)) return 0;
  const db = new Database(file, { fileMustExist: true });
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const pages = db.pragma('page_count', { simple: true }) as number;
    const free = db.pragma('freelist_count', { simple: true }) as number;
    return (pages - free) * pageSize;
  } finally {
    db.close();
  }
}

async function commandsProcessed(redis: IORedis): Promise<number> {
  return Number(/total_commands_processed:(\d+)/.exec(await redis.info('stats'))![1]);
}

/**
 * A 300-byte message that leaves both jobs: a link (a preview job) and a mention of another member (a push
 * job; the member has no push subscription, so the job ends at its fan-out).
 */
function jobsBody(link: string, mentioned: string): string {
  const head = `<@${mentioned}> see ${link} `;
  return JSON.stringify({ content: head + FOOTPRINT_CONTENT.slice(0, 300 - head.length) });
}

/** The bench's users and channels on a service, and the load's next request (`link`: messages with a link and a mention). */
export async function load(api: string, link?: string): Promise<Load> {
  const users: BenchUser[] = [];
  for (let i = 0; i < 10; i++) users.push(await signupUser(api));
  const { channels } = await setupServer(api, users[0]!, 20, users.slice(1));
  let i = 0;
  const next = () => {
    const u = users[i % users.length]!;
    const c = channels[Math.floor(i / users.length) % channels.length]!;
    const body = link ? jobsBody(link, users[(i + 1) % users.length]!.userId) : BODY;
    i++;
    return { path: `/channels/${c}/messages`, headers: { 'X-Session-Token': u.token, 'Content-Type': 'application/json' }, body };
  };
  return Object.assign(next, { users, channels });
}

/** The load's next send, with its users and channels. */
export type Load = (() => { path: string; headers: Record<string, string>; body: string }) & { users: BenchUser[]; channels: string[] };

export function env(redisUrl: string, prefix: string, dataDir: string, roles?: string): Record<string, string> {
  // Loopback pages may be previewed (the jobs variant's link).
  return { ...(roles ? { ROLES: roles } : {}), RATE_LIMITS: 'off', OUTBOUND_ALLOW_PRIVATE: '127.0.0.0/8', API_PORT: '0', MEDIA_PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, REDIS_URL: redisUrl, REDIS_PREFIX: prefix };
}

/**
 * Waits until the push and previews followers have passed what the sends appended and their queues are empty
 * (checkpoints and job counts unchanged for 1.5 s: longer than a follower's idle checkpoint interval).
 */
async function settle(redis: IORedis, prefix: string): Promise<void> {
  let last = '';
  let same = 0;
  for (let i = 0; i < 1200 && same < 3; i++) {
    const now = JSON.stringify([
      await redis.mget(`${prefix}push:cp`, `${prefix}previews:cp`),
      await Promise.all(['push', 'previews'].flatMap((q) => ['wait', 'active', 'delayed'].map((l) => (l === 'delayed' ? redis.zcard(`${prefix}bull:${q}:${l}`) : redis.llen(`${prefix}bull:${q}:${l}`))))),
    ]);
    same = now === last ? same + 1 : 0;
    last = now;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** A loopback page to preview (the jobs variant). */
async function pageServer(): Promise<{ url: string; close(): void }> {
  const server = http.createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html><head><title>Bench page</title><meta property="og:title" content="Bench page"></head></html>'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/page`, close: () => server.close() };
}

/** Redis bytes per message between `step` and 2 × `step` sends of the jobs variant (link + mention) on the default topology. */
async function jobsSlope(ctx: BenchContext, redis: IORedis, redisUrl: string, step: number): Promise<{ slope: number; top: string[]; records: number; queues: number }> {
  const page = await pageServer();
  const prefix = `fpj:${randomBytes(3).toString('hex')}:`;
  const svc = await startServer('service', env(redisUrl, prefix, path.join(ctx.tmpDir, 'jobs')));
  try {
    const next = await load(svc.urls.apiUrl!, page.url);
    const send = async () => assertClean('footprint jobs send', await measure({ url: svc.urls.apiUrl!, method: 'POST', next, amount: step }));
    await send();
    await settle(redis, prefix);
    const before = await familyBytes(redis, prefix);
    await send();
    await settle(redis, prefix);
    const after = await familyBytes(redis, prefix);
    const grew = (match: (f: string) => boolean) =>
      [...after.keys()].filter(match).reduce((sum, f) => sum + (after.get(f)!.bytes - (before.get(f)?.bytes ?? 0)), 0) / step;
    return {
      slope: (total(after) - total(before)) / step,
      top: byFamily(before, after, step),
      records: grew((f) => /:channel:\*:history$|:unreads:/.test(f)),
      queues: grew((f) => f.startsWith('bull:')),
    };
  } finally {
    await svc.stop();
    page.close();
  }
}

/** The families that grew (or shrank) by 2 bytes per message or more, largest first. */
function byFamily(before: Map<string, { bytes: number; keys: number }>, after: Map<string, { bytes: number; keys: number }>, step: number): string[] {
  return [...new Set([...before.keys(), ...after.keys()])]
    .map((f) => ({ f, d: (after.get(f)?.bytes ?? 0) - (before.get(f)?.bytes ?? 0), keys: after.get(f)?.keys ?? 0 }))
    .sort((a, b) => b.d - a.d)
    .filter((x) => Math.abs(x.d) >= step * 2)
    .map((x) => `${x.f} ${(x.d / step).toFixed(0)} B (${x.keys} keys)`);
}

const k = (n: number) => Math.round(n).toLocaleString('en-US');

const bench: Bench = {
  name: 'footprint',
  description: 'Redis bytes, commands, log and index bytes and CPU per 300-byte send (and per history page) on the default topology',
  async run(ctx: BenchContext): Promise<BenchResult[]> {
    const redisSrv = await startPrivateRedis({ dir: path.join(ctx.tmpDir, 'redis') });
    const redis = new IORedis(redisSrv.url);
    const redisPid = redisSrv.child.pid!;
    const stops: Array<() => Promise<void>> = [];
    try {
      // 1. The default topology: bytes, commands and CPU per message between 10k and 20k sends.
      const prefix = `fp:${randomBytes(3).toString('hex')}:`;
      const dataDir = path.join(ctx.tmpDir, 'default');
      const svc = await startServer('service', env(redisSrv.url, prefix, dataDir));
      stops.push(() => svc.stop());
      const next = await load(svc.urls.apiUrl!);
      const send = async (amount: number) => assertClean('footprint send', await measure({ url: svc.urls.apiUrl!, method: 'POST', next, amount }));
      await send(STEP);
      await settle(redis, prefix);
      const before = await familyBytes(redis, prefix);
      const log0 = sqliteBytes(path.join(dataDir, 'events.sqlite'));
      const idx0 = sqliteBytes(path.join(dataDir, 'search.sqlite'));
      const cmd0 = await commandsProcessed(redis);
      const s0 = threadTicks(svc.pid), r0 = threadTicks(redisPid);
      const sent = await send(STEP);
      await settle(redis, prefix);
      const s1 = threadTicks(svc.pid), r1 = threadTicks(redisPid);
      const cmd1 = await commandsProcessed(redis);
      const after = await familyBytes(redis, prefix);
      const log1 = sqliteBytes(path.join(dataDir, 'events.sqlite'));
      const idx1 = sqliteBytes(path.join(dataDir, 'search.sqlite'));
      const slope = (total(after) - total(before)) / STEP;
      const top = byFamily(before, after, STEP);
      ctx.log(`footprint: ${k(total(before))} B at 10k, ${k(total(after))} B at 20k: ${slope.toFixed(0)} B/message; by family: ${top.join('; ')}`);
      const cmds = (cmd1 - cmd0) / STEP;
      const logBytes = (log1 - log0) / STEP;
      const idxBytes = (idx1 - idx0) / STEP;
      const svcCpu = cpuSplit(s0, s1);
      const redisCpu = cpuSplit(r0, r1).total;
      const us = (s: number) => (s * 1e6) / STEP;
      ctx.log(`default topology, per send: service main ${us(svcCpu.main).toFixed(0)} µs, indexer thread ${us(svcCpu.busiest).toFixed(0)} µs, other threads ${us(svcCpu.rest).toFixed(0)} µs, redis ${us(redisCpu).toFixed(0)} µs; ${cmds.toFixed(1)} Redis commands; log ${logBytes.toFixed(0)} B, search index ${idxBytes.toFixed(0)} B; ${Math.round(sent.rps)} sends/s`);

      // 1c. CPU per history page (100 messages, newest page) on the channels the 20k sends filled.
      const duration = ctx.quick ? 4 : 6;
      const reader = next.users[0]!;
      let pi = 0;
      const page = () => ({ path: `/channels/${next.channels[pi++ % next.channels.length]}/messages?limit=100`, headers: { 'X-Session-Token': reader.token } });
      await measure({ url: svc.urls.apiUrl!, method: 'GET', next: page, duration: 1 });
      const p0 = threadTicks(svc.pid), pr0 = threadTicks(redisPid);
      const pages = assertClean('history pages', await measure({ url: svc.urls.apiUrl!, method: 'GET', next: page, duration }));
      const pageSvc = cpuSplit(p0, threadTicks(svc.pid)).total, pageRedis = cpuSplit(pr0, threadTicks(redisPid)).total;
      const perPage = (x: number) => (x * 1e6) / pages.requests;
      ctx.log(`history pages: ${Math.round(pages.rps)}/s; per page: service ${perPage(pageSvc).toFixed(0)} µs, redis ${perPage(pageRedis).toFixed(0)} µs`);
      await svc.stop();
      stops.pop();

      // 1b. The same with a link and a mention in every message: a preview job and a push job each.
      const jobsStep = STEP / 2;
      const jobs = await jobsSlope(ctx, redis, redisSrv.url, jobsStep);
      ctx.log(`footprint with a link and a mention: ${jobs.slope.toFixed(0)} B/message (record set ${jobs.records.toFixed(0)} B, queues ${jobs.queues.toFixed(1)} B); by family: ${jobs.top.join('; ')}`);

      // 2. The split topology on its own data: the CPU of each role.
      const sprefix = `fps:${randomBytes(3).toString('hex')}:`;
      const sdir = path.join(ctx.tmpDir, 'split');
      const procs: Record<string, ServerProcess> = {};
      for (const role of ['projector', 'worker', 'media', 'api']) {
        procs[role] = await startServer('service', env(redisSrv.url, sprefix, sdir, role));
        stops.push(() => procs[role]!.stop());
      }
      const snext = await load(procs.api!.urls.apiUrl!);
      await measure({ url: procs.api!.urls.apiUrl!, method: 'POST', next: snext, amount: 2000 });
      const t0 = Object.fromEntries(Object.entries(procs).map(([r, p]) => [r, threadTicks(p.pid)]));
      const sr0 = threadTicks(redisPid);
      assertClean('footprint split send', await measure({ url: procs.api!.urls.apiUrl!, method: 'POST', next: snext, amount: STEP }));
      await settle(redis, sprefix);
      const roleCpu = Object.fromEntries(Object.entries(procs).map(([r, p]) => [r, cpuSplit(t0[r]!, threadTicks(p.pid))]));
      const splitRedis = cpuSplit(sr0, threadTicks(redisPid)).total;
      const splitLine = `API ${us(roleCpu.api!.total).toFixed(0)} µs, projector ${us(roleCpu.projector!.main + roleCpu.projector!.rest).toFixed(0)} µs, its indexer thread ${us(roleCpu.projector!.busiest).toFixed(0)} µs, worker (push + previews followers, one shared reader of the log) ${us(roleCpu.worker!.total).toFixed(0)} µs, media ${us(roleCpu.media!.total).toFixed(0)} µs, redis ${us(splitRedis).toFixed(0)} µs`;
      ctx.log(`split topology, per send: ${splitLine}`);
      for (const p of Object.values(procs)) await p.stop();
      stops.length = 0;

      return [
        {
          name: 'footprint',
          figure: 'Redis bytes per 300-byte message, slope from 10k to 20k sends, default topology',
          median: slope,
          unit: 'B',
          ceiling: 700,
          ceilingLabel: 'the budget of issue 37',
          ratio: 700 / slope,
          notes: `all keys under the prefix (MEMORY USAGE SAMPLES 0) on a private redis-server, 10 users × 20 channels of one server, 50 connections, no link and no mention; ${k(total(before))} B at 10k, ${k(total(after))} B at 20k; by family (bytes per message): ${top.join('; ')}; per message also ${cmds.toFixed(1)} Redis commands, ${logBytes.toFixed(0)} B of event log (SQLite pages in use) and ${idxBytes.toFixed(0)} B of search index`,
        },
        {
          name: 'footprint-jobs',
          figure: 'Redis bytes per 300-byte message with a link and a mention (a preview and a push job each), default topology',
          median: jobs.slope,
          unit: 'B',
          ceiling: jobs.records,
          ceilingLabel: 'its record set alone: the channel histories (messages with their embeds) and the mention unreads',
          ratio: jobs.records / jobs.slope,
          notes: `the queues' keys grew ${jobs.queues.toFixed(1)} B per message; as footprint, slope from ${k(jobsStep)} to ${k(2 * jobsStep)} sends; the link is a loopback page (previewed), the mentioned member has no push subscription (the push job ends at its fan-out); both queues keep their newest 1,000 completed jobs (FOLLOWER_JOBS_KEPT); by family: ${jobs.top.join('; ')}`,
        },
        {
          name: 'cpu-per-send',
          figure: 'CPU per send, all processes, default topology (µs)',
          median: us(svcCpu.total + redisCpu),
          unit: 'µs',
          ceiling: us(svcCpu.total + redisCpu),
          ceilingLabel: 'itself (a breakdown, not a comparison)',
          ratio: 1,
          notes: `the same 10k sends as footprint, /proc CPU times: service main thread (API, projector, the push and previews followers on one reader) ${us(svcCpu.main).toFixed(0)} µs, search indexer thread (the busiest other thread) ${us(svcCpu.busiest).toFixed(0)} µs, other threads (GC, libuv) ${us(svcCpu.rest).toFixed(0)} µs, redis-server ${us(redisCpu).toFixed(0)} µs; the same load split in processes (ROLES api / projector / worker / media): ${splitLine}`,
        },
        {
          name: 'cpu-per-page',
          figure: 'CPU per 100-message history page, all processes, default topology (µs)',
          median: perPage(pageSvc + pageRedis),
          unit: 'µs',
          ceiling: perPage(pageSvc + pageRedis),
          ceilingLabel: 'itself (a breakdown, not a comparison)',
          ratio: 1,
          notes: `newest 100 messages of the 20 channels in turn, 50 connections, ${duration} s, ${Math.round(pages.rps)} pages/s: service ${perPage(pageSvc).toFixed(0)} µs, redis-server ${perPage(pageRedis).toFixed(0)} µs`,
        },
      ];
    } finally {
      for (const s of stops.reverse()) await s().catch(() => {});
      redis.disconnect();
      await redisSrv.stop();
    }
  },
};
export default bench;
