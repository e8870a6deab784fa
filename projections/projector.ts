/**
 * The projector role of a process: owns some partitions (by lease), runs a PartitionRunner for each in
 * the current generation, and heals itself:
 * - Redis flushed or restarted empty (the generation key or a checkpoint vanished) → a fresh generation is
 *   started and rebuilt from position 0, client events suppressed until caught up;
 * - a rebuild swapped the generation → the runners move to the new generation's checkpoints;
 * - a partition whose owner died (lease expired) is taken over by another projector process.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { connectionForKey, createRedis, isCluster, type RedisClient } from '../src/redis.ts';
import type { Logger } from 'pino';
import type { EventStore } from '../src/eventstore/port.ts';
import { controlKeys, genKeys, generationPrefix, readModelIdentity } from '../src/readmodel/keys.ts';
import { deleteKeys } from './rebuild.ts';
import { PartitionRunner } from './runner.ts';
import type { Projection } from './types.ts';

/** Options of the projector role. */
export interface ProjectorOptions {
  store: EventStore;
  redisUrl: string;
  prefix: string;
  partitions: number;
  /** Partitions this process prefers; unset = any. Orphaned partitions are taken over either way. */
  preferred?: number[];
  projections: readonly Projection[];
  log: Logger;
  /** Lease time-to-live (ms, default 10 000); renewed every third of it. */
  leaseMs?: number;
  /** Health-check period (ms, default 1 000). */
  checkIntervalMs?: number;
  /** Take over partitions not listed in `preferred` when their lease is free (default true). */
  takeOver?: boolean;
  /** Redis client name of the partition connections (CLIENT SETNAME), for operators and tests. */
  connectionName?: string;
}

const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/**
 * The current generation, checked against the store's identity in one step: a generation whose checkpoints
 * belong to another store (after `events migrate` and a URL switch, or a store recreated from scratch), or
 * whose keys are of another layout (`READ_MODEL_LAYOUT`, part of the identity), is replaced by a new one, which the projectors rebuild from the start of this store. A generation recorded
 * before identities existed adopts the store it is first checked against.
 * Returns [generation, created (0/1), the replaced generation or ''].
 */
const GENERATION_FOR_STORE = `
local g = redis.call('get', KEYS[1])
local old = ''
if g then
  local s = redis.call('hget', KEYS[3], g)
  if not s then
    redis.call('hset', KEYS[3], g, ARGV[1])
    return {g, 0, ''}
  end
  if s == ARGV[1] then return {g, 0, ''} end
  old = g
  redis.call('hdel', KEYS[3], g)
end
local n = redis.call('incr', KEYS[2])
redis.call('set', KEYS[1], n)
redis.call('hset', KEYS[3], tostring(n), ARGV[1])
return {tostring(n), 1, old}
`;

/**
 * Returns the current generation, creating one (and marking it as needing a rebuild) when Redis has none,
 * or — given the store's identity — when the current one belongs to another store.
 */
export async function currentGeneration(redis: RedisClient, prefix: string, storeIdentity?: string): Promise<{ gen: number; created: boolean; replaced?: number }> {
  const ctl = controlKeys(prefix);
  if (storeIdentity !== undefined) {
    const [g, created, old] = (await redis.eval(GENERATION_FOR_STORE, 3, ctl.generation, ctl.generationSeq, ctl.generationStores, storeIdentity)) as [string, number, string];
    return { gen: Number(g), created: created === 1, ...(old !== '' ? { replaced: Number(old) } : {}) };
  }
  const raw = await redis.get(ctl.generation);
  if (raw !== null) return { gen: Number(raw), created: false };
  const next = await redis.incr(ctl.generationSeq);
  const ok = await redis.set(ctl.generation, String(next), 'NX');
  if (ok) return { gen: next, created: true };
  return { gen: Number(await redis.get(ctl.generation)), created: false };
}

interface Owned {
  runner: PartitionRunner;
  redis: Redis;
  generation: number;
}

/** The projector role. */
export class Projector {
  private readonly o: ProjectorOptions;
  private readonly token = randomUUID();
  private readonly ctl: ReturnType<typeof controlKeys>;
  private admin!: RedisClient;
  private readonly owned = new Map<number, Owned>();
  private readonly freeSeen = new Map<number, number>();
  private generation = 0;
  private storeId: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  private ticking = false;

  constructor(o: ProjectorOptions) {
    this.o = o;
    this.ctl = controlKeys(o.prefix);
  }

  /** Partitions this process runs now. */
  get partitions(): number[] {
    return [...this.owned.keys()].sort((a, b) => a - b);
  }

  /** The partitions this process runs now, with their committed position (for the lag metrics). */
  runnerStates(): Array<{ partition: number; position: bigint | undefined; rebuilding: boolean }> {
    return [...this.owned].map(([partition, o]) => ({ partition, position: o.runner.position, rebuilding: o.runner.isRebuilding }));
  }

  /** Starts claiming partitions and projecting. */
  async start(): Promise<void> {
    this.admin = createRedis(this.o.redisUrl, { maxRetriesPerRequest: null, lazyConnect: false });
    this.admin.on('error', () => {});
    this.admin.defineCommand('leaseRenew', { numberOfKeys: 1, lua: RENEW });
    this.admin.defineCommand('leaseRelease', { numberOfKeys: 1, lua: RELEASE });
    await this.tick();
    // Stopped during that first check: no timers (they would keep the process alive with nothing to do).
    if (this.stopping) return;
    const leaseMs = this.o.leaseMs ?? 10_000;
    this.timer = setInterval(() => void this.tick(), this.o.checkIntervalMs ?? 1000);
    this.leaseTimer = setInterval(() => void this.renewLeases(), Math.max(200, Math.floor(leaseMs / 3)));
  }

  /** Resolves once every owned partition has caught up with the log once. */
  async caughtUp(): Promise<void> {
    await Promise.all([...this.owned.values()].map((o) => o.runner.caughtUpPromise));
  }

  private async tick(): Promise<void> {
    if (this.ticking || this.stopping) return;
    this.ticking = true;
    try {
      // The store first: while it is down nothing below runs (and no connection is opened).
      this.storeId ??= readModelIdentity(await this.o.store.identity());
      const { gen, created, replaced } = await currentGeneration(this.admin, this.o.prefix, this.storeId);
      if (gen !== this.generation) {
        this.o.log.info({ from: this.generation, to: gen, created }, 'projector switching generation');
        await this.stopAll(false);
        this.generation = gen;
      }
      if (replaced !== undefined) {
        this.o.log.warn({ replaced, generation: gen, store: this.storeId }, 'the read models belonged to another event store or layout: rebuilding from this one');
        // Its checkpoints are positions in another store: nothing reads that generation any more.
        void deleteKeys(this.admin, generationPrefix(this.o.prefix, replaced)).catch(() => undefined);
      }
      await this.announcePreferences();
      await this.handBack();
      await this.claim();
    } catch (err) {
      this.o.log.warn({ err }, 'projector health check failed');
    } finally {
      this.ticking = false;
    }
  }

  /** Tells stand-ins which partitions this process prefers (a key with the lease's lifetime). */
  private async announcePreferences(): Promise<void> {
    if (!this.o.preferred) return;
    const leaseMs = this.o.leaseMs ?? 10_000;
    for (const i of this.o.preferred) await this.admin.set(this.ctl.want(this.o.partitions, i), this.token, 'PX', leaseMs);
  }

  /** Gives back partitions taken over from a dead owner once a process that prefers them is alive. */
  private async handBack(): Promise<void> {
    for (const [i, o] of [...this.owned]) {
      // A process that names this partition keeps it; anyone else (a stand-in, or a process without
      // preferences) gives it to the process that names it.
      if (this.o.preferred?.includes(i)) continue;
      const wanter = await this.admin.get(this.ctl.want(this.o.partitions, i));
      if (wanter === null || wanter === this.token) continue;
      this.o.log.info({ partition: i }, 'handing a taken-over partition back to the process that prefers it');
      this.owned.delete(i);
      await o.runner.stop();
      o.redis.disconnect();
      await (this.admin as unknown as { leaseRelease: (k: string, t: string) => Promise<number> })
        .leaseRelease(this.ctl.lease(this.o.partitions, i), this.token)
        .catch(() => 0);
    }
  }

  private wanted(i: number): boolean {
    return !this.o.preferred || this.o.preferred.includes(i);
  }

  private async claim(): Promise<void> {
    const leaseMs = this.o.leaseMs ?? 10_000;
    for (let i = 0; i < this.o.partitions; i++) {
      if (this.owned.has(i) || this.stopping) continue;
      const key = this.ctl.lease(this.o.partitions, i);
      if (!this.wanted(i)) {
        if (this.o.takeOver === false) continue;
        // Someone else's partition: take it only when its lease has been free for two checks in a row.
        const holder = await this.admin.get(key);
        if (holder !== null) {
          this.freeSeen.delete(i);
          continue;
        }
        const seen = (this.freeSeen.get(i) ?? 0) + 1;
        this.freeSeen.set(i, seen);
        if (seen < 2) continue;
      }
      const ok = await this.admin.set(key, this.token, 'PX', leaseMs, 'NX');
      // Still ours (kept across a generation switch)?
      if (ok !== 'OK' && (await this.admin.get(key)) !== this.token) continue;
      this.freeSeen.delete(i);
      await this.startPartition(i);
    }
  }

  private async startPartition(i: number): Promise<void> {
    // The partition's connection never outlives its socket: a MULTI/EXEC resent after a reconnect (or sent
    // from the offline queue) to a Redis that restarted empty would run without its WATCH and write a
    // checkpoint over missing read models — the projector would then call an empty Redis caught up. So no
    // reconnection and no queueing: once the socket is gone every command fails, the runner stops, and the
    // next check starts the partition over on a new connection.
    // On a cluster: a plain connection to the master of the generation's slot (a failover ends it too).
    const gen = this.generation;
    const cpKey = generationPrefix(this.o.prefix, gen) + genKeys.checkpoint(this.o.partitions, i);
    // Ask the store before connecting: a store that is down must not leave a Redis connection behind.
    const head = await this.o.store.headPosition();
    const redis = await connectionForKey(this.o.redisUrl, this.admin, cpKey, {
      maxRetriesPerRequest: null,
      enableOfflineQueue: false,
      noResend: true,
      noReconnect: true,
      ...(this.o.connectionName ? { connectionName: this.o.connectionName } : {}),
    });
    redis.on('error', () => {});
    let cp: string | null;
    try {
      await redis.connect();
      cp = await redis.get(cpKey);
    } catch (err) {
      redis.disconnect();
      throw err;
    }
    // Stopped while this partition was starting: `stop` has already stopped what it owned, so this connection
    // would be left open (and keep the process alive).
    if (this.stopping) {
      redis.disconnect();
      return;
    }
    const runner = new PartitionRunner({
      store: this.o.store,
      redis,
      prefix: this.o.prefix,
      generation: gen,
      partition: i,
      partitions: this.o.partitions,
      projections: this.o.projections,
      log: this.o.log,
      rebuilding: cp === null && head !== undefined,
      ...(isCluster(this.admin) ? { eventsRedis: this.admin } : {}),
      onStop: (reason) => void this.onRunnerStop(i, runner, reason),
    });
    this.owned.set(i, { runner, redis, generation: gen });
    await runner.start();
  }

  private async onRunnerStop(i: number, runner: PartitionRunner, reason: string): Promise<void> {
    const o = this.owned.get(i);
    if (!o || o.runner !== runner) return;
    this.owned.delete(i);
    o.redis.disconnect();
    await (this.admin as unknown as { leaseRelease: (k: string, t: string) => Promise<number> })
      .leaseRelease(this.ctl.lease(this.o.partitions, i), this.token)
      .catch(() => 0);
    this.o.log.warn({ partition: i, reason }, 'projector partition stopped; the health check decides what next');
    // A vanished generation key means Redis lost its data: the next tick starts a fresh generation.
    setTimeout(() => void this.tick(), 50).unref();
  }

  private async renewLeases(): Promise<void> {
    const leaseMs = this.o.leaseMs ?? 10_000;
    for (const [i, o] of this.owned) {
      try {
        const ok = await (this.admin as unknown as { leaseRenew: (k: string, t: string, ms: number) => Promise<number> })
          .leaseRenew(this.ctl.lease(this.o.partitions, i), this.token, leaseMs);
        if (ok === 0 && !this.stopping) {
          // Lost the lease (expired while we were stalled, or Redis lost it): stop; claim() may retake it.
          this.o.log.warn({ partition: i }, 'projector lease lost');
          this.owned.delete(i);
          await o.runner.stop();
          o.redis.disconnect();
        }
      } catch {
        /* Redis unavailable: keep trying */
      }
    }
  }

  private async stopAll(release: boolean): Promise<void> {
    const all = [...this.owned.entries()];
    this.owned.clear();
    await Promise.all(
      all.map(async ([i, o]) => {
        await o.runner.stop();
        o.redis.disconnect();
        if (release) {
          await (this.admin as unknown as { leaseRelease: (k: string, t: string) => Promise<number> })
            .leaseRelease(this.ctl.lease(this.o.partitions, i), this.token)
            .catch(() => 0);
        }
      }),
    );
  }

  /** Stops every partition and releases the leases. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    await this.stopAll(true);
    this.admin?.disconnect();
  }
}
