/**
 * Health check of one role, for container health checks: `node --import tsx src/cli/health.ts <role>`, with
 * the service's own environment. Exits 0 printing `healthy: …`, or 1 printing `unhealthy: …` (also on a
 * bad configuration, an unknown role or no answer within 8 s), as Docker's HEALTHCHECK expects.
 *
 * - `api`, `media`: `GET /` on the local port (API_PORT / MEDIA_PORT; HOST, or 127.0.0.1 when it listens
 *   on every address) answers 200.
 * - `projector`: the deployment's projection is live: Redis has a current read-model generation, and every
 *   partition i of PROJECTOR_PARTITIONS has a lease that is still being renewed (`lease:<n>:<i>` with a TTL)
 *   and, in that generation, a checkpoint (`cp:<n>:<i>`) or its caught-up mark (`ready:<n>:<i>`; an empty
 *   log has no checkpoint). It checks the partitions, not this process: a stand-by projector holding no
 *   partition is healthy while every partition is covered.
 * - `worker`: Redis answers PING and every tag's BullMQ queue is reachable with a worker of this host
 *   connected to it (workers name themselves `<hostname>:<pid>`; the check reads CLIENT LIST, as BullMQ's
 *   `getWorkers` does).
 */
import os from 'node:os';
import { Queue } from 'bullmq';
import type { RedisOptions } from 'bullmq';
import { createRedis, isCluster, type RedisClient } from '../redis.ts';
import { ConfigError, loadConfig, ROLE_NAMES, type Config, type RoleName } from '../config.ts';
import { controlKeys, partitionKeys } from '../readmodel/keys.ts';
import { bullConnection, bullPrefix, queueName } from '../../workers/media/jobs.ts';
import { TAGS } from '../../workers/media/policy.ts';
import { quarantinedCount } from '../../projections/quarantine.ts';

/** Time the whole check may take. */
const TIMEOUT_MS = 8000;

/** Thrown with the reason a role is not healthy. */
class Unhealthy extends Error {}

/** A Redis connection that fails at once instead of retrying (a health check must answer). */
async function connect(config: Config): Promise<RedisClient> {
  const redis = createRedis(config.redisUrl, { lazyConnect: true, connectTimeout: 3000, maxRetriesPerRequest: 1, noReconnect: true });
  redis.on('error', () => {});
  try {
    await redis.connect();
  } catch (err) {
    throw new Unhealthy(`redis ${config.redisUrl} unreachable: ${(err as Error).message}`);
  }
  return redis;
}

async function httpRole(port: number, host: string, role: string): Promise<string> {
  const address = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const url = `http://${address.includes(':') ? `[${address}]` : address}:${port}/`;
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) }).catch((err: Error) => {
    throw new Unhealthy(`${role}: GET ${url} failed: ${err.message}`);
  });
  await res.body?.cancel();
  if (res.status !== 200) throw new Unhealthy(`${role}: GET ${url} answered ${res.status}`);
  return `${role}: GET ${url} answered 200`;
}

async function projector(config: Config): Promise<string> {
  const redis = await connect(config);
  try {
    const ctl = controlKeys(config.redisPrefix);
    const n = config.projectorPartitions;
    const gen = await redis.get(ctl.generation);
    if (gen === null) throw new Unhealthy(`projector: no read-model generation under ${ctl.generation}`);
    const problems: string[] = [];
    for (let i = 0; i < n; i++) {
      // Each partition's checkpoint and ready mark are in its home slot (src/readmodel/keys.ts `partitionKeys`).
      const home = partitionKeys(config.redisPrefix, Number(gen), n, i);
      const [ttl, cp, ready] = await Promise.all([redis.pttl(ctl.lease(n, i)), redis.exists(home.checkpoint), redis.exists(home.caughtUp)]);
      if (ttl <= 0) problems.push(`partition ${i}/${n} has no live lease (${ctl.lease(n, i)})`);
      else if (!cp && !ready) problems.push(`partition ${i}/${n} has not projected anything in generation ${gen}`);
    }
    if (problems.length) throw new Unhealthy(`projector: ${problems.join('; ')}`);
    // Quarantined (poison) events do not stop projecting, so they do not make the projector unhealthy, but
    // an operator must see them (`npm run events` / the quarantine hashes name each one).
    const quarantined = await quarantinedCount(redis, config.redisPrefix, n);
    const note = quarantined > 0 ? `; ${quarantined} quarantined event${quarantined === 1 ? '' : 's'} (poison: a projection threw; see the hashes ${config.redisPrefix}{g${gen}.p${n}.<i>.<k>}:quarantine:${n}:<i>)` : '; 0 quarantined events';
    return `projector: all ${n} partitions leased and projecting in generation ${gen}${note}`;
  } finally {
    redis.disconnect();
  }
}

async function worker(config: Config): Promise<string> {
  const redis = await connect(config);
  const queues: Queue[] = [];
  try {
    await redis.ping();
    const mine = new RegExp(`:w:${os.hostname().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+$`);
    const missing: string[] = [];
    for (const tag of TAGS) {
      // On a cluster: the health check's own cluster connection (BullMQ shares it; closed with it below).
      const connection = isCluster(redis) ? redis : { ...(bullConnection(config.redisUrl) as RedisOptions), connectTimeout: 3000, maxRetriesPerRequest: 1, retryStrategy: () => null };
      const queue = new Queue(queueName(tag), { connection, prefix: bullPrefix(config.redisPrefix, config.redisUrl) });
      queue.on('error', () => {});
      queues.push(queue);
      const workers = (await queue.getWorkers()) as Array<{ rawname?: string }>;
      if (!workers.some((w) => w.rawname !== undefined && mine.test(w.rawname))) missing.push(queueName(tag));
    }
    if (missing.length) throw new Unhealthy(`worker: no worker of host ${os.hostname()} on ${missing.join(', ')}`);
    return `worker: redis answers, a worker of host ${os.hostname()} is on each of the ${TAGS.length} media queues`;
  } finally {
    await Promise.all(queues.map((q) => q.close().catch(() => {})));
    redis.disconnect();
  }
}

function check(role: RoleName, config: Config): Promise<string> {
  switch (role) {
    case 'api':
      return httpRole(config.apiPort, config.host, 'api');
    case 'media':
      return httpRole(config.mediaPort, config.host, 'media');
    case 'projector':
      return projector(config);
    case 'worker':
      return worker(config);
  }
}

const role = process.argv[2];
setTimeout(() => {
  console.error(`unhealthy: ${role}: no answer within ${TIMEOUT_MS} ms`);
  process.exit(1);
}, TIMEOUT_MS);
try {
  if (!(ROLE_NAMES as readonly string[]).includes(role ?? '')) throw new Unhealthy(`usage: health.ts <${ROLE_NAMES.join('|')}> (got ${role ?? 'nothing'})`);
  console.log(`healthy: ${await check(role as RoleName, loadConfig())}`);
  process.exit(0);
} catch (err) {
  console.error(`unhealthy: ${err instanceof Unhealthy || err instanceof ConfigError ? err.message : String(err)}`);
  process.exit(1);
}
