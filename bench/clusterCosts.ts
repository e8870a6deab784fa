/**
 * `cluster-costs`: two costs of read models spread over a Redis Cluster (READ_MODEL_LAYOUT 6,
 * docs/ARCHITECTURE.md "Redis Cluster") that earlier runs left unmeasured, each against the same service on
 * one Redis in the same run:
 *
 * - the commit's bytes: every batch commits first in its partition's home slot, which also stores a redo log
 *   of the commands of every other slot the batch writes (projections/runner.ts `commitSplit`), deleted once
 *   they all have it. Measured: bytes the Redis processes receive per message sent (INFO stats
 *   `total_net_input_bytes`, summed over the masters), and, in a separate untimed round under MONITOR, the
 *   bytes of the redo log's HSETs next to the bytes of every command the service sent;
 * - a big member list: `GET /servers/:id/members` reads every member's profile, which on a cluster lies in 64
 *   shards over the masters, so one MGET becomes one per slot (src/readmodel/reader.ts `mget`). Measured: the
 *   request's latency with several hundred members.
 */
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis as IORedis } from 'ioredis';
import { inFlight, latencies, median, repeat, type Bench } from './lib.ts';
import { call, setupServer, signupUser, startServer, type BenchUser, type ServerProcess } from './http.ts';
import { cpuSince, startRedisPair, ticksOf, type RedisPair } from './redisPair.ts';

const CHANNELS = 20;

interface Side {
  label: string;
  svc: ServerProcess;
  api: string;
  redisPids: number[];
  redisPorts: number[];
  owner: BenchUser;
  serverId: string;
  channels: string[];
  members: number;
  sent: number;
}

async function stat(ports: number[], field: string): Promise<number> {
  let n = 0;
  for (const port of ports) {
    const r = new IORedis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1 });
    await r.connect();
    n += Number(new RegExp(`${field}:(\\d+)`).exec(await r.info('stats'))?.[1] ?? 0);
    r.disconnect();
  }
  return n;
}

async function until(what: string, fn: () => Promise<boolean>, timeoutMs = 300_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function startSide(label: string, env: Record<string, string>, dir: string, redisPids: number[], redisPorts: number[], members: number): Promise<Side> {
  const svc = await startServer('service', {
    ROLES: 'api,projector',
    RATE_LIMITS: 'off',
    API_PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dir,
    REDIS_PREFIX: `bench:cc:${randomBytes(4).toString('hex')}:`,
    ...env,
  });
  const api = svc.urls.apiUrl!;
  const owner = await signupUser(api);
  const { serverId, channels } = await setupServer(api, owner, CHANNELS, []);
  const invite = await call(`${api}/channels/${channels[0]}/invites`, 'POST', owner.token, {});
  await inFlight(Array.from({ length: members }), 8, async () => {
    const u = await signupUser(api);
    await call(`${api}/invites/${invite._id}`, 'POST', u.token, {});
  });
  const s: Side = { label, svc, api, redisPids, redisPorts, owner, serverId, channels, members: members + 1, sent: 0 };
  await until(`${label}: every member listed`, async () => (await listMembers(s)).members.length === s.members);
  return s;
}

function listMembers(s: Side): Promise<{ members: unknown[]; users: unknown[] }> {
  return call(`${s.api}/servers/${s.serverId}/members`, 'GET', s.owner.token);
}

/** `count` sends over the side's channels (8 in flight), then waits until each channel's last one is projected. */
async function sendAll(s: Side, count: number): Promise<void> {
  const last = new Map<string, string>();
  await inFlight(Array.from({ length: count }, (_, i) => s.channels[i % s.channels.length]!), 8, async (ch) => {
    const m = await call(`${s.api}/channels/${ch}/messages`, 'POST', s.owner.token, { content: `cluster-costs ${++s.sent}: a chat line of a typical length, said in passing.` });
    if ((last.get(ch) ?? '') < m._id) last.set(ch, m._id);
  });
  await until(`${s.label}: sends projected`, async () => {
    for (const [ch, id] of last) {
      const page = (await call(`${s.api}/channels/${ch}/messages?limit=1`, 'GET', s.owner.token)) as Array<{ _id: string }>;
      if (page[0]?._id !== id) return false;
    }
    return true;
  });
}

/** Bytes received by the side's Redis per message and CPU per message (µs), over `count` sends. */
async function commitRound(s: Side, count: number): Promise<{ bytes: number; redisUs: number; svcUs: number }> {
  await new Promise((r) => setTimeout(r, 500));
  const b0 = await stat(s.redisPorts, 'total_net_input_bytes');
  const r0 = ticksOf(s.redisPids);
  const v0 = ticksOf([s.svc.pid]);
  await sendAll(s, count);
  const b1 = await stat(s.redisPorts, 'total_net_input_bytes');
  return { bytes: (b1 - b0) / count, redisUs: (cpuSince(s.redisPids, r0) * 1e6) / count, svcUs: (cpuSince([s.svc.pid], v0) * 1e6) / count };
}

/** Under MONITOR on every master: bytes of the redo log's HSETs and of every command the service sent. */
async function monitorRound(s: Side, count: number): Promise<{ redo: number; all: number; redoShare: number; batches: number }> {
  const monitors: IORedis[] = [];
  let redo = 0;
  let all = 0;
  let batches = 0;
  for (const port of s.redisPorts) {
    const r = new IORedis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
    const m = await r.monitor();
    r.disconnect();
    m.on('monitor', (_time: string, args: string[]) => {
      const bytes = args.reduce((n, a) => n + Buffer.byteLength(a), 0);
      if (args[0]?.toLowerCase() === 'info' || args[0]?.toLowerCase() === 'monitor') return;
      all += bytes;
      if (args[0]?.toLowerCase() === 'hset' && /redo:/.test(args[1] ?? '')) {
        redo += bytes;
        batches++;
      }
    });
    monitors.push(m);
  }
  try {
    await sendAll(s, count);
    await new Promise((r) => setTimeout(r, 300));
  } finally {
    for (const m of monitors) m.disconnect();
  }
  return { redo: redo / count, all: all / count, redoShare: all === 0 ? 0 : redo / all, batches };
}

const bench: Bench = {
  name: 'cluster-costs',
  description: "the home slot's redo log (bytes per message) and a big member list (per-slot MGETs) on a 3-master cluster vs one Redis",
  async run(ctx) {
    const sides: Side[] = [];
    let redis: RedisPair | undefined;
    try {
      const members = ctx.quick ? 100 : 400;
      redis = await startRedisPair(ctx.tmpDir);
      ctx.log(`setting up both sides (${members} members each)`);
      sides.push(await startSide('one Redis', redis.one.env, path.join(ctx.tmpDir, 'a'), redis.one.pids, redis.one.ports, members));
      sides.push(await startSide('3-master cluster', redis.cluster.env, path.join(ctx.tmpDir, 'b'), redis.cluster.pids, redis.cluster.ports, members));
      const [one, three] = sides as [Side, Side];

      const count = ctx.quick ? 200 : 600;
      ctx.log('set up; measuring');
      await sendAll(one, 100); // warm-up
      await sendAll(three, 100);
      const reads = ctx.quick ? 30 : 100;
      const rounds = await repeat(ctx.repeats, async (i) => {
        // Alternate which side goes first, so drift of the machine's load falls on both.
        const order = i % 2 === 0 ? [one, three] : [three, one];
        const c = new Map<Side, Awaited<ReturnType<typeof commitRound>>>();
        const l = new Map<Side, number>();
        for (const s of order) c.set(s, await commitRound(s, count));
        for (const s of order) l.set(s, (await latencies(reads, () => listMembers(s))).p50);
        ctx.log(`round ${i + 1} done`);
        return { c1: c.get(one)!, c3: c.get(three)!, l1: l.get(one)!, l3: l.get(three)! };
      });
      const mon = await monitorRound(three, ctx.quick ? 100 : 300);
      const monOne = await monitorRound(one, ctx.quick ? 100 : 300);
      const m = (f: (r: (typeof rounds)[number]) => number) => median(rounds.map(f));
      const f0 = (x: number) => Math.round(x).toLocaleString('en-US');
      ctx.log(
        `bytes/message one ${rounds.map((r) => f0(r.c1.bytes)).join(', ')}; cluster ${rounds.map((r) => f0(r.c3.bytes)).join(', ')}; ` +
          `members p50 ms one ${rounds.map((r) => r.l1.toFixed(1)).join(', ')}; cluster ${rounds.map((r) => r.l3.toFixed(1)).join(', ')}; ` +
          `Redis CPU µs/message one ${rounds.map((r) => f0(r.c1.redisUs)).join(', ')}; cluster ${rounds.map((r) => f0(r.c3.redisUs)).join(', ')}; ` +
          `MONITOR: redo ${f0(mon.redo)} of ${f0(mon.all)} B/message (${(mon.redoShare * 100).toFixed(1)} %, ${mon.batches} redo HSETs), one Redis ${f0(monOne.all)} B/message`,
      );
      return [
        {
          name: 'cluster-commit-bytes',
          figure: `bytes Redis receives per message sent, 3-master cluster (${CHANNELS} channels, 8 in flight)`,
          median: m((r) => r.c3.bytes),
          unit: 'B/msg',
          ceiling: m((r) => r.c1.bytes),
          ceilingLabel: 'the same sends on one Redis',
          ratio: m((r) => r.c1.bytes) / m((r) => r.c3.bytes),
          notes:
            `total_net_input_bytes summed over the masters, ${count} sends per round, ${ctx.repeats} alternating rounds, after projection; ` +
            `under MONITOR (a separate untimed round of ${ctx.quick ? 100 : 300} sends): the redo log's HSETs ${f0(mon.redo)} B of the service's ${f0(mon.all)} B of commands per message ` +
            `(${(mon.redoShare * 100).toFixed(1)} %, ${mon.batches} batches), one Redis ${f0(monOne.all)} B (no redo log, ${monOne.batches} redo HSETs); ` +
            `Redis CPU per message: cluster ${f0(m((r) => r.c3.redisUs))} µs (3 masters) vs ${f0(m((r) => r.c1.redisUs))} µs; service ${f0(m((r) => r.c3.svcUs))} vs ${f0(m((r) => r.c1.svcUs))} µs`,
        },
        {
          name: 'cluster-members',
          figure: `GET /servers/:id/members with ${members + 1} members, 3-master cluster (p50)`,
          median: m((r) => r.l3),
          unit: 'ms',
          ceiling: m((r) => r.l1),
          ceilingLabel: 'the same on one Redis',
          ratio: m((r) => r.l1) / m((r) => r.l3),
          notes: `${reads} sequential requests per round, ${ctx.repeats} alternating rounds; the profiles lie in up to 64 shards over 3 masters, read with one MGET per slot in parallel (one MGET on one Redis)`,
        },
      ];
    } finally {
      for (const s of sides) await s.svc.stop();
      await redis?.stop();
    }
  },
};
export default bench;
