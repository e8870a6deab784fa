/**
 * `gateway-cluster`: what the gateway's reading of the client events costs on a Redis Cluster, where each API
 * process holds one blocking XREAD connection per live shard (16, `LIVE_SHARDS`) plus one for the presence
 * stream, against one Redis, where it holds one XREAD over every partition's stream (docs/ARCHITECTURE.md
 * "Redis Cluster", `{live.<j>.<k>}`). The same service (`ROLES=api,projector`) runs twice in the same run: on a
 * private 3-master cluster and on a private single redis-server, each with 20 users, one server channel and 100
 * authenticated sockets past Ready. Measured for each, in alternating rounds:
 *
 * - idle: CPU of the service process and of its Redis processes over 10 s with nothing sent (the blocking
 *   readers' own cost: an XREAD that times out is re-issued);
 * - delivery: messages/s from the first of 200 sends (HTTP, 8 in flight) to the last frame on the 100th socket,
 *   with the service's and Redis's CPU per message;
 * - connections: the Redis clients the service holds (INFO clients on every node, the bench's own connection
 *   not counted).
 */
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis as IORedis } from 'ioredis';
import { inFlight, median, repeat, type Bench } from './lib.ts';
import { call, setupServer, signupUser, startServer, type BenchUser, type ServerProcess } from './http.ts';
import { allCounted, closeSockets, gatewayUrl, openSockets, type BenchSocket } from './gateway.ts';
import { cpuSince, startRedisPair, ticksOf, type RedisPair } from './redisPair.ts';

const USERS = 20;
const SOCKETS = 100;
const MARKER = 'gateway-cluster-bench';
const IDLE_MS = 10_000;

/** One side of the comparison: a service, its Redis processes and its sockets. */
interface Side {
  label: string;
  svc: ServerProcess;
  redisPids: number[];
  redisPorts: number[];
  sockets: BenchSocket[];
  owner: BenchUser;
  channel: string;
  sent: number;
}

/** Connected clients on each node, minus the connection asking. */
async function clients(ports: number[]): Promise<number> {
  let n = 0;
  for (const port of ports) {
    const r = new IORedis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1 });
    await r.connect();
    const info = await r.info('clients');
    n += Number(/connected_clients:(\d+)/.exec(info)?.[1] ?? 0) - 1;
    r.disconnect();
  }
  return n;
}

async function startSide(label: string, env: Record<string, string>, dir: string, redisPids: number[], redisPorts: number[]): Promise<Side> {
  const svc = await startServer('service', {
    ROLES: 'api,projector',
    RATE_LIMITS: 'off',
    API_PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dir,
    REDIS_PREFIX: `bench:gwc:${randomBytes(4).toString('hex')}:`,
    GATEWAY_MAX_SOCKETS_PER_USER: String(SOCKETS),
    GATEWAY_MAX_SOCKETS_PER_ADDRESS: String(4 * SOCKETS),
    ...env,
  });
  const api = svc.urls.apiUrl!;
  const users: BenchUser[] = [];
  for (let i = 0; i < USERS; i += 10) users.push(...(await Promise.all(Array.from({ length: 10 }, () => signupUser(api)))));
  const owner = users[0]!;
  const { channels } = await setupServer(api, owner, 1, users.slice(1));
  const sockets = await openSockets(SOCKETS, (i) => gatewayUrl(api, users[i % USERS]!.token), '"type":"Ready"', MARKER);
  return { label, svc, redisPids, redisPorts, sockets, owner, channel: channels[0]!, sent: 0 };
}

/** Sends `count` messages and waits for every socket to count them: messages/s and CPU per message (µs). */
async function deliver(s: Side, count: number): Promise<{ rate: number; svcUs: number; redisUs: number }> {
  for (const x of s.sockets) x.counted = 0;
  const svc0 = ticksOf([s.svc.pid]);
  const r0 = ticksOf(s.redisPids);
  const t0 = performance.now();
  await inFlight(Array.from({ length: count }), 8, () =>
    call(`${s.svc.urls.apiUrl}/channels/${s.channel}/messages`, 'POST', s.owner.token, { content: `${MARKER} ${++s.sent}: a chat line of a typical length.` }),
  );
  const done = await allCounted(s.sockets, count);
  return {
    rate: count / ((done - t0) / 1000),
    svcUs: (cpuSince([s.svc.pid], svc0) * 1e6) / count,
    redisUs: (cpuSince(s.redisPids, r0) * 1e6) / count,
  };
}

/** CPU milliseconds per second of the service and of its Redis processes while nothing is sent. */
async function idle(s: Side): Promise<{ svcMs: number; redisMs: number }> {
  await new Promise((r) => setTimeout(r, 2000)); // the last round's work (projection, acks) settles
  const svc0 = ticksOf([s.svc.pid]);
  const r0 = ticksOf(s.redisPids);
  await new Promise((r) => setTimeout(r, IDLE_MS));
  return { svcMs: (cpuSince([s.svc.pid], svc0) * 1000) / (IDLE_MS / 1000), redisMs: (cpuSince(s.redisPids, r0) * 1000) / (IDLE_MS / 1000) };
}

const bench: Bench = {
  name: 'gateway-cluster',
  description: "the gateway's 17 blocking readers per API process on a 3-master cluster vs one XREAD on one Redis: idle CPU, delivery rate and CPU per message, connections",
  async run(ctx) {
    const sides: Side[] = [];
    let redis: RedisPair | undefined;
    try {
      redis = await startRedisPair(ctx.tmpDir);
      const single = redis.one;
      const clusterPorts = redis.cluster.ports;
      const before = { single: await clients(single.ports), cluster: await clients(clusterPorts) };
      sides.push(await startSide('one Redis', single.env, path.join(ctx.tmpDir, 'a'), single.pids, single.ports));
      sides.push(await startSide('3-master cluster', redis.cluster.env, path.join(ctx.tmpDir, 'b'), redis.cluster.pids, clusterPorts));
      const [one, three] = sides as [Side, Side];
      const conns = { single: (await clients(single.ports)) - before.single, cluster: (await clients(clusterPorts)) - before.cluster };
      ctx.log(`Redis connections held by the service: one Redis ${conns.single}, cluster ${conns.cluster} (over 3 masters)`);

      const count = ctx.quick ? 100 : 200;
      await deliver(one, count); // warm-up
      await deliver(three, count);
      const rounds = await repeat(ctx.repeats, async (i) => {
        // Alternate which side goes first, so drift of the machine's load falls on both.
        const order = i % 2 === 0 ? [one, three] : [three, one];
        const d = new Map<Side, Awaited<ReturnType<typeof deliver>>>();
        const q = new Map<Side, Awaited<ReturnType<typeof idle>>>();
        for (const s of order) d.set(s, await deliver(s, count));
        for (const s of order) q.set(s, await idle(s));
        return { d1: d.get(one)!, d3: d.get(three)!, q1: q.get(one)!, q3: q.get(three)! };
      });
      const m = (f: (r: (typeof rounds)[number]) => number) => median(rounds.map(f));
      const f0 = (x: number) => Math.round(x).toLocaleString('en-US');
      const f1 = (x: number) => x.toFixed(1);
      ctx.log(
        `delivery msg/s one ${rounds.map((r) => f0(r.d1.rate)).join(', ')}; cluster ${rounds.map((r) => f0(r.d3.rate)).join(', ')}; ` +
          `idle service CPU ms/s one ${rounds.map((r) => f1(r.q1.svcMs)).join(', ')}; cluster ${rounds.map((r) => f1(r.q3.svcMs)).join(', ')}`,
      );
      const idleOne = m((r) => r.q1.svcMs);
      const idleThree = m((r) => r.q3.svcMs);
      return [
        {
          name: 'gateway-cluster-idle',
          figure: 'idle CPU of an API+projector process, cluster (17 blocking readers)',
          median: idleThree,
          unit: 'ms/s',
          ceiling: idleOne,
          ceilingLabel: 'the same process on one Redis (1 reader)',
          // Lower is better; a 0 ms/s side would divide by zero, so both are floored at one clock tick per 10 s.
          ratio: Math.max(idleOne, 1) / Math.max(idleThree, 1),
          notes: `${SOCKETS} sockets of ${USERS} users connected, nothing sent for ${IDLE_MS / 1000} s after a 2 s settle; Redis CPU while idle: one ${f1(m((r) => r.q1.redisMs))} ms/s, cluster ${f1(m((r) => r.q3.redisMs))} ms/s (3 masters); Redis connections held by the service: one Redis ${conns.single}, cluster ${conns.cluster}; CPU from /proc ticks (10 ms)`,
        },
        {
          name: 'gateway-cluster-delivery',
          figure: `messages/s to ${SOCKETS} sockets on one channel, 3-master cluster`,
          median: m((r) => r.d3.rate),
          unit: 'msg/s',
          ceiling: m((r) => r.d1.rate),
          ceilingLabel: 'the same on one Redis',
          ratio: m((r) => r.d3.rate) / m((r) => r.d1.rate),
          notes: `${count} sends (HTTP, 8 in flight) to the last frame on the ${SOCKETS}th socket, ${ctx.repeats} alternating rounds; CPU per message: service ${f0(m((r) => r.d3.svcUs))} µs on the cluster vs ${f0(m((r) => r.d1.svcUs))} µs on one Redis, Redis ${f0(m((r) => r.d3.redisUs))} µs (3 masters) vs ${f0(m((r) => r.d1.redisUs))} µs; the cluster side also commits each batch in several slots (projections/runner.ts commitSplit), so this is the whole cluster path, not the readers alone`,
        },
      ];
    } finally {
      await closeSockets(sides.flatMap((s) => s.sockets));
      for (const s of sides) await s.svc.stop();
      await redis?.stop();
    }
  },
};
export default bench;
