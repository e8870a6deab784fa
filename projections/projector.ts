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
import { connectionForKey, connectionsForKeys, createRedis, isCluster, type RedisClient } from '../src/redis.ts';
import type { Logger } from 'pino';
import type { EventStore } from '../src/eventstore/port.ts';
import { controlKeys, generationPrefixes, liveShardCount, MAIN_SLOT, partitionKeys, readModelIdentity, SHARDS, slotCheckpointKey } from '../src/readmodel/keys.ts';
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
 * Replaces generation ARGV[1] by a new one recorded against the store ARGV[2], if it is still the current one
 * (every process that detects the same rewind replaces it once). Returns the current generation afterwards.
 */
const REPLACE_GENERATION = `
local g = redis.call('get', KEYS[1])
if g ~= ARGV[1] then return g end
local n = redis.call('incr', KEYS[2])
redis.call('set', KEYS[1], n)
redis.call('hdel', KEYS[3], g)
redis.call('hset', KEYS[3], tostring(n), ARGV[2])
return tostring(n)
`;

/**
 * Starts a new generation in place of `gen` (a rebuild from the log as it is now), unless another process
 * already did; the read models of `gen` are no longer read (the API answers 503 until the new one caught up).
 */
export async function replaceGeneration(redis: RedisClient, prefix: string, gen: number, storeIdentity: string): Promise<number | undefined> {
  const ctl = controlKeys(prefix);
  const g = (await redis.eval(REPLACE_GENERATION, 3, ctl.generation, ctl.generationSeq, ctl.generationStores, String(gen), storeIdentity)) as string | null;
  // No generation at all (Redis lost it): the next check creates one.
  return g === null ? undefined : Number(g);
}

/**
 * Whether a checkpoint still points at what it recorded: the event with that id at that position. A checkpoint
 * without a recorded id (written before ids were) is taken as it is.
 */
export async function checkpointHolds(store: EventStore, position: bigint, eventId: string | undefined | null): Promise<boolean> {
  if (eventId === undefined || eventId === null) return true;
  return (await store.eventIdAt(position)) === eventId;
}

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
        for (const p of generationPrefixes(this.o.prefix, replaced)) void deleteKeys(this.admin, p).catch(() => undefined);
      }
      await this.announcePreferences();
      await this.handBack();
      if (await this.checkRunning()) return;
      await this.claim();
    } catch (err) {
      this.o.log.warn({ err }, 'projector health check failed');
    } finally {
      this.ticking = false;
    }
  }

  /**
   * The log went back in time under running partitions (a promoted standby that lacked the last commits)? The
   * furthest checkpoint tells: it holds unless the log lost or replaced the event it points at. True when the
   * generation was replaced (the next check moves to the new one).
   */
  private async checkRunning(): Promise<boolean> {
    let furthest: { position: bigint; eventId: string } | undefined;
    for (const o of this.owned.values()) {
      const a = o.runner.anchor;
      if (a && (!furthest || a.position > furthest.position)) furthest = a;
    }
    if (!furthest || (await checkpointHolds(this.o.store, furthest.position, furthest.eventId))) return false;
    await this.rewound(furthest.position, furthest.eventId);
    return true;
  }

  /** The log no longer holds what a checkpoint of the current generation points at: start a new generation. */
  private async rewound(position: bigint, eventId: string): Promise<void> {
    const found = await this.o.store.eventIdAt(position);
    const head = await this.o.store.headPosition();
    this.o.log.error(
      { generation: this.generation, checkpoint: position.toString(), expected: eventId, found: found ?? null, head: head?.toString() ?? null },
      'the event log went back in time (a restored backup or a failed-over store): rebuilding the read models from the log as it is',
    );
    const old = this.generation;
    const next = await replaceGeneration(this.admin, this.o.prefix, old, this.storeId!);
    if (next === undefined) {
      await this.stopAll(false);
    } else if (next !== old) {
      await this.stopAll(false);
      this.generation = next;
      // Nothing reads the old generation any more; its effects of lost events must not come back.
      for (const p of generationPrefixes(this.o.prefix, old)) void deleteKeys(this.admin, p).catch(() => undefined);
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
    // On a cluster: a plain connection to the master of the partition's home slot (a failover ends it too).
    const gen = this.generation;
    const { checkpoint: cpKey, checkpointEvent: cpEventKey } = partitionKeys(this.o.prefix, gen, this.o.partitions, i);
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
    let cpEvent: string | null;
    try {
      await redis.connect();
      [cp, cpEvent] = (await redis.mget(cpKey, cpEventKey)) as [string | null, string | null];
    } catch (err) {
      redis.disconnect();
      throw err;
    }
    // Resume only where the log still holds what the checkpoint points at.
    if (cp !== null && cpEvent !== null && !this.stopping && !(await checkpointHolds(this.o.store, BigInt(cp), cpEvent).catch((err: unknown) => {
      redis.disconnect();
      throw err;
    }))) {
      redis.disconnect();
      await this.rewound(BigInt(cp), cpEvent);
      return;
    }
    // Stopped while this partition was starting: `stop` has already stopped what it owned, so this connection
    // would be left open (and keep the process alive).
    if (this.stopping) {
      redis.disconnect();
      return;
    }
    // On a cluster, each shard of the generation and its main slot commit on a plain connection to their slot's
    // master; they end with the partition's own connection.
    let shardRedis: RedisClient[] | undefined;
    let mainRedis: RedisClient | undefined;
    if (isCluster(this.admin)) {
      const keys = [...Array.from({ length: SHARDS }, (_, s) => s), MAIN_SLOT].map((s) => slotCheckpointKey(this.o.prefix, gen, this.o.partitions, i, s));
      try {
        const { conns, extra } = await connectionsForKeys(this.admin, keys, redis, {
          maxRetriesPerRequest: null,
          enableOfflineQueue: false,
          noResend: true,
          noReconnect: true,
          ...(this.o.connectionName ? { connectionName: this.o.connectionName } : {}),
        });
        shardRedis = conns.slice(0, SHARDS);
        mainRedis = conns[SHARDS];
        redis.once('end', () => extra.forEach((c) => c.disconnect()));
      } catch (err) {
        redis.disconnect();
        throw err;
      }
    }
    // Stopped while the slots' connections were opened (they close with `redis`): nothing would stop this runner.
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
      ...(isCluster(this.admin) ? { eventsRedis: this.admin, splitCommits: true, liveShards: liveShardCount(true) } : {}),
      ...(shardRedis ? { shardRedis } : {}),
      ...(mainRedis ? { mainRedis } : {}),
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
