/**
 * The API side of the read models: where keys live (the current generation), whether the read models can
 * serve (every partition caught up in that generation), and read-your-writes waits ("has the projector of
 * this scope passed position P?", DESIGN §1).
 */
import { isCluster, type RedisClient } from '../redis.ts';
import type { Logger } from 'pino';
import { unavailable } from '../errors.ts';
import { partitionOf } from '../partition.ts';
import { controlKeys, generationPrefix, indexesByTag, partitionKeys, shardOfKey, shardPrefix, SHARDS } from './keys.ts';
import { FactCache, fieldKey, InvalidationReader, isCacheableHash, isCacheableKey, type CachedPage, type FactCacheOptions } from './factCache.ts';

/** Absent sessions and bot tokens are not cached: anyone can ask for any number of them. */
const NO_NEGATIVE = /^(?:session|bottoken):/;

interface Waiter {
  partition: number;
  position: bigint;
  resolve: () => void;
}

/** Options of the read-model reader. */
export interface ReadModelsOptions {
  /** Connection for commands. */
  redis: RedisClient;
  /** Connection in subscriber mode (pub/sub only). */
  subscriber: RedisClient;
  prefix: string;
  partitions: number;
  log: Logger;
  /** How long a write waits for its projection before 503 (ms). */
  waitMs: number;
}

/** Read-model access for queries and commands. */
export class ReadModels {
  readonly redis: RedisClient;
  private readonly o: ReadModelsOptions;
  private readonly ctl: ReturnType<typeof controlKeys>;
  private gen: number | undefined;
  private keyPrefix = '';
  /** The prefix of each shard's keys in the current generation (src/readmodel/keys.ts `shardOfKey`). */
  private shardPrefixes: string[] = [];
  private readonly checkpoints = new Map<number, bigint>();
  private waiters: Waiter[] = [];
  private servingUntil = 0;
  private servingValue = false;
  private poller: NodeJS.Timeout | undefined;
  private closed = false;
  private cache: FactCache | undefined;
  private invReader: InvalidationReader | undefined;
  /** The fence read the requests of this turn of the event loop share (not sent yet). */
  private fenceRound: Promise<void> | undefined;

  constructor(o: ReadModelsOptions) {
    this.o = o;
    this.redis = o.redis;
    this.ctl = controlKeys(o.prefix);
  }

  /** Subscribes to checkpoint and control announcements. */
  async start(): Promise<void> {
    this.o.subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.ctl.checkpointChannel) this.onCheckpoint(message);
      // `commit:<position>` (a SQLite commit, for idle subscriptions) says nothing of the generation.
      else if (channel === this.ctl.controlChannel && !message.startsWith('commit:')) void this.refreshGeneration();
    });
    await this.o.subscriber.subscribe(this.ctl.checkpointChannel, this.ctl.controlChannel);
    await this.refreshGeneration();
  }

  /**
   * Serves the cacheable facts from an in-process cache kept coherent by the projectors' invalidation
   * streams (src/readmodel/factCache.ts), read on `conn` (a connection of its own). One Redis only: on a
   * cluster the streams are not written in the checkpoint's MULTI.
   */
  async enableFactCache(conn: RedisClient, o: FactCacheOptions & { applyDelayMs?: number }): Promise<void> {
    const cache = new FactCache(o);
    cache.useGeneration(this.gen);
    const reader = new InvalidationReader({
      redis: conn,
      prefix: this.o.prefix,
      partitions: this.o.partitions,
      cache,
      log: this.o.log,
      ...(o.applyDelayMs !== undefined ? { applyDelayMs: o.applyDelayMs } : {}),
    });
    await reader.start();
    this.cache = cache;
    this.invReader = reader;
  }

  /**
   * Reads that bypass the fact cache, for code that follows the event streams (the gateway's dispatcher and
   * its facts): the read models are at or ahead of the event at hand, the fact cache may be behind it.
   */
  readonly direct = {
    getJson: <T>(logical: string) => this.getJson<T>(logical, false),
    mgetJson: <T>(logicals: string[]) => this.mgetJson<T>(logicals, false),
    hgetJson: <T>(logical: string, field: string) => this.hgetJson<T>(logical, field, false),
    hmgetJson: <T>(logical: string, fields: string[]) => this.hmgetJson<T>(logical, fields, false),
  };

  /** The fact cache, when enabled (metrics and tests). */
  get factCache(): FactCache | undefined {
    return this.cache;
  }

  /**
   * Makes the fact cache at least as fresh as every partition's checkpoint now, so a request never reads a
   * cached fact older than a write any process acknowledged before it began. Without the cache: nothing to do.
   *
   * The requests that ask during one turn of the event loop share one read of the checkpoints, sent at the
   * end of that turn (`setImmediate`): after each of them began, so it sees every write acknowledged before
   * any of them began. A request that asks once that read was sent waits for the next one.
   */
  fence(): Promise<void> {
    if (!this.cache || this.gen === undefined) return Promise.resolve();
    return (this.fenceRound ??= new Promise<void>((resolve, reject) => {
      setImmediate(() => {
        this.fenceRound = undefined;
        this.readFence().then(resolve, reject);
      });
    }));
  }

  /** One read of every partition's checkpoint, and the fact cache brought up to them. */
  private async readFence(): Promise<void> {
    const cache = this.cache;
    if (!cache || this.gen === undefined) return;
    const n = this.o.partitions;
    const keys = Array.from({ length: n }, (_, i) => this.partition(i).checkpoint);
    const values = await this.mget(keys);
    await Promise.all(values.map((v, i) => cache.reach(i, v === null || v === undefined ? 0n : BigInt(v))));
  }

  private cacheOn(): FactCache | undefined {
    const c = this.cache;
    return c && c.ready(this.o.partitions) ? c : undefined;
  }

  /** The generation read now (undefined before the projector created one). */
  get generation(): number | undefined {
    return this.gen;
  }

  /** Full keys of partition i's bookkeeping in the current generation (in its home slot, `partitionKeys`). */
  partition(i: number): ReturnType<typeof partitionKeys> {
    return partitionKeys(this.o.prefix, this.gen ?? 0, this.o.partitions, i);
  }

  /** Full Redis key of a logical read-model key in the current generation (in its shard when it is spread). */
  key(logical: string): string {
    const s = shardOfKey(logical);
    return s < 0 || this.shardPrefixes.length === 0 ? this.keyPrefix + logical : this.shardPrefixes[s]! + logical;
  }

  /**
   * MGET of full keys. On a cluster an MGET must stay in one slot: keys of several shards (last message ids
   * of a server's channels, the partitions' home slots) are read with one MGET per slot, in parallel, and put
   * back in order.
   */
  private async mget(keys: string[]): Promise<Array<string | null>> {
    if (keys.length === 0) return [];
    if (!isCluster(this.redis) || keys.length <= 1) return keys.length === 1 ? [await this.redis.get(keys[0]!)] : this.redis.mget(...keys);
    const bySlot = indexesByTag(keys);
    if (bySlot.size === 1) return this.redis.mget(...keys);
    const out: Array<string | null> = new Array(keys.length);
    await Promise.all(
      [...bySlot.values()].map(async (list) => {
        const values = await this.redis.mget(...list.map((i) => keys[i]!));
        list.forEach((i, n) => (out[i] = values[n] ?? null));
      }),
    );
    return out;
  }

  private async refreshGeneration(): Promise<void> {
    try {
      const raw = await this.o.redis.get(this.ctl.generation);
      const gen = raw === null ? undefined : Number(raw);
      if (gen !== this.gen) {
        this.gen = gen;
        this.keyPrefix = gen === undefined ? `${this.o.prefix}nogen:` : generationPrefix(this.o.prefix, gen);
        this.shardPrefixes = gen === undefined ? [] : Array.from({ length: SHARDS }, (_, s) => shardPrefix(this.o.prefix, gen, s));
        this.checkpoints.clear();
        this.servingUntil = 0;
        this.cache?.useGeneration(gen);
      }
    } catch (err) {
      this.o.log.warn({ err }, 'could not read the read-model generation');
    }
  }

  private onCheckpoint(message: string): void {
    const [g, p, pos] = message.split(':');
    const gen = Number(g);
    if (gen !== this.gen) {
      void this.refreshGeneration();
      if (gen !== this.gen) return;
    }
    const partition = Number(p);
    const position = BigInt(pos!);
    const prev = this.checkpoints.get(partition);
    if (prev === undefined || position > prev) this.checkpoints.set(partition, position);
    this.resolveWaiters();
  }

  private resolveWaiters(): void {
    if (this.waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      const cp = this.checkpoints.get(w.partition);
      if (cp !== undefined && cp >= w.position) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
    if (still.length === 0 && this.poller) {
      clearInterval(this.poller);
      this.poller = undefined;
    }
  }

  /** Reads the checkpoints of the given partitions from Redis (pub/sub is only the fast path). */
  private async pollCheckpoints(partitions: Iterable<number>): Promise<void> {
    await this.refreshGeneration();
    if (this.gen === undefined) return;
    const list = [...new Set(partitions)];
    if (list.length === 0) return;
    // A partition's spread record (on a cluster, while a batch is in its home slot but not yet in every
    // secondary slot it wrote) holds it back to the start of that batch (projections/runner.ts `commitSplit`).
    // Both are in the partition's home slot: one MGET per partition's slot, each a snapshot of the two.
    const keys = list.flatMap((i) => {
      const home = this.partition(i);
      return [home.checkpoint, home.spread];
    });
    const values = await this.mget(keys);
    list.forEach((i, n) => {
      const v = values[2 * n];
      const spread = values[2 * n + 1];
      if (v === null || v === undefined) return;
      let pos = BigInt(v);
      if (spread !== null && spread !== undefined) {
        const f = (JSON.parse(spread) as { f: string | null }).f;
        if (f === null) return;
        pos = BigInt(f);
      }
      const prev = this.checkpoints.get(i);
      if (prev === undefined || pos > prev) this.checkpoints.set(i, pos);
    });
    this.resolveWaiters();
  }

  /** Resolves when the projector of `scope` has applied everything up to `position`; 503 after the deadline. */
  waitFor(scope: string, position: bigint): Promise<void> {
    const partition = partitionOf(scope, this.o.partitions);
    const projected = this.waitForPartition(partition, position);
    const cache = this.cache;
    // Read-your-writes through the fact cache too: it must have dropped what the write changed.
    return cache ? projected.then(() => cache.reach(partition, position)) : projected;
  }

  /** Resolves when every partition has passed `position` (after an optimistic-concurrency conflict). */
  async waitForAll(position: bigint): Promise<void> {
    await Promise.all(Array.from({ length: this.o.partitions }, (_, i) => this.waitForPartition(i, position)));
  }

  private waitForPartition(partition: number, position: bigint): Promise<void> {
    const cp = this.checkpoints.get(partition);
    if (cp !== undefined && cp >= position) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(unavailable());
      }, this.o.waitMs);
      const waiter: Waiter = {
        partition,
        position,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      this.waiters.push(waiter);
      // Pub/sub is the fast path; read the checkpoint at once only when none was announced yet.
      if (cp === undefined) void this.pollCheckpoints([partition]).catch(() => {});
      if (!this.poller && !this.closed) {
        this.poller = setInterval(() => {
          void this.pollCheckpoints(this.waiters.map((w) => w.partition)).catch(() => {});
        }, 100);
      }
    });
  }

  /**
   * True when the read models can answer: a generation exists and every partition has caught up in it.
   * Cached for a quarter of a second unless `fresh` (used before answering "not found": right after
   * Redis lost its data, an empty read model must not pass for an answer).
   */
  async serving(fresh = false): Promise<boolean> {
    const now = Date.now();
    if (!fresh && now < this.servingUntil) return this.servingValue;
    await this.refreshGeneration();
    let ok = false;
    if (this.gen !== undefined) {
      const keys = Array.from({ length: this.o.partitions }, (_, i) => this.partition(i).caughtUp);
      const values = await this.mget(keys);
      ok = values.every((v) => v !== null);
    }
    this.servingValue = ok;
    this.servingUntil = now + (ok ? 250 : 50);
    return ok;
  }

  // Typed helpers over the current generation. Values are JSON.

  /** Which of the users are online now: some API process holds a WebSocket of theirs (src/gateway/presence.ts). */
  async online(userIds: readonly string[]): Promise<Set<string>> {
    if (userIds.length === 0) return new Set();
    const counts = await this.redis.hmget(this.ctl.presenceUsers, ...userIds);
    return new Set(userIds.filter((_, i) => Number(counts[i] ?? 0) > 0));
  }

  /**
   * The raw values of `ids` (cache keys), from the fact cache where it holds them and from Redis (`fetch`,
   * given the missing ids) for the rest, which are then cached.
   */
  private async cached(cache: FactCache, ids: string[], fetch: (missing: number[]) => Promise<Array<string | null>>): Promise<Array<string | null>> {
    const out: Array<string | null> = new Array(ids.length);
    const missing: number[] = [];
    ids.forEach((id, i) => {
      const hit = cache.get(id);
      if (hit === undefined) missing.push(i);
      else out[i] = hit;
    });
    if (missing.length === 0) return out;
    const tickets = missing.map((i) => cache.begin(ids[i]!));
    let raws: Array<string | null>;
    try {
      raws = await fetch(missing);
    } catch (err) {
      missing.forEach((i, n) => {
        tickets[n]!.valid = false;
        cache.finish(ids[i]!, tickets[n]!, null);
      });
      throw err;
    }
    missing.forEach((i, n) => {
      const raw = raws[n] ?? null;
      out[i] = raw;
      if (raw === null && NO_NEGATIVE.test(ids[i]!)) tickets[n]!.valid = false;
      cache.finish(ids[i]!, tickets[n]!, raw);
    });
    return out;
  }

  /**
   * A channel's newest history page through the fact cache (`fetch` reads it on a miss): dropped by every
   * write to the channel's messages, as fresh as any fact after the request's fence.
   */
  async newestPage(channelId: string, limit: number, fetch: () => Promise<CachedPage>): Promise<CachedPage> {
    const cache = this.cacheOn();
    if (!cache) return fetch();
    const hit = cache.getPage(channelId, limit);
    if (hit) return hit;
    const ticket = cache.beginPage(channelId, limit);
    let page: CachedPage;
    try {
      page = await fetch();
    } catch (err) {
      ticket.valid = false;
      cache.finishPage(channelId, limit, ticket, { json: Buffer.alloc(0), authors: [] });
      throw err;
    }
    cache.finishPage(channelId, limit, ticket, page);
    return page;
  }

  /** A JSON value, or null. */
  async getJson<T>(logical: string, useCache = true): Promise<T | null> {
    const cache = useCache ? this.cacheOn() : undefined;
    const raw =
      cache && isCacheableKey(logical)
        ? (await this.cached(cache, [logical], async () => [await this.redis.get(this.key(logical))]))[0]!
        : await this.redis.get(this.key(logical));
    return raw === null ? null : (JSON.parse(raw) as T);
  }

  /** Several JSON values in one round trip (null where missing). */
  async mgetJson<T>(logicals: string[], useCache = true): Promise<Array<T | null>> {
    if (logicals.length === 0) return [];
    const cache = useCache ? this.cacheOn() : undefined;
    const raws =
      cache && logicals.every(isCacheableKey)
        ? await this.cached(cache, logicals, (missing) => this.mget(missing.map((i) => this.key(logicals[i]!))))
        : await this.mget(logicals.map((k) => this.key(k)));
    return raws.map((r) => (r === null ? null : (JSON.parse(r) as T)));
  }

  /** A JSON value in a hash field, or null. */
  async hgetJson<T>(logical: string, field: string, useCache = true): Promise<T | null> {
    const cache = useCache ? this.cacheOn() : undefined;
    const raw =
      cache && isCacheableHash(logical)
        ? (await this.cached(cache, [fieldKey(logical, field)], async () => [await this.redis.hget(this.key(logical), field)]))[0]!
        : await this.redis.hget(this.key(logical), field);
    return raw === null ? null : (JSON.parse(raw) as T);
  }

  /** Several hash fields (null where missing). */
  async hmgetJson<T>(logical: string, fields: string[], useCache = true): Promise<Array<T | null>> {
    if (fields.length === 0) return [];
    const cache = useCache ? this.cacheOn() : undefined;
    const raws =
      cache && isCacheableHash(logical)
        ? await this.cached(
            cache,
            fields.map((f) => fieldKey(logical, f)),
            (missing) => this.redis.hmget(this.key(logical), ...missing.map((i) => fields[i]!)),
          )
        : await this.redis.hmget(this.key(logical), ...fields);
    return raws.map((r) => (r === null ? null : (JSON.parse(r) as T)));
  }

  /** Every field of a hash of JSON values. */
  async hgetallJson<T>(logical: string): Promise<Map<string, T>> {
    const raw = await this.redis.hgetall(this.key(logical));
    return new Map(Object.entries(raw).map(([k, v]) => [k, JSON.parse(v) as T]));
  }

  /**
   * Members of a sorted set ordered by member (all scores equal) between `min` and `max` (Redis lex bounds:
   * `-`, `+`, `[x` inclusive, `(x` exclusive), at most `limit` of them: from the lowest up, or with `reverse`
   * from the highest down.
   */
  async zrangeByLex(logical: string, min: string, max: string, limit: number, reverse = false): Promise<string[]> {
    const key = this.key(logical);
    return reverse ? this.redis.zrevrangebylex(key, max, min, 'LIMIT', 0, limit) : this.redis.zrangebylex(key, min, max, 'LIMIT', 0, limit);
  }

  /** Members of a sorted set with a score of at most `max`, lowest first, at most `limit` of them. */
  async zrangeByScore(logical: string, max: number, limit: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.key(logical), '-inf', max, 'LIMIT', 0, limit);
  }

  /**
   * Removes a member of a work queue a projection fills (`rm.detachedFiles`): the one write outside the
   * projections, for an entry whose work is known done (the purge found the file's record gone).
   */
  async dequeue(logical: string, member: string): Promise<void> {
    await this.redis.zrem(this.key(logical), member);
  }

  /** Members of a set. */
  async smembers(logical: string): Promise<string[]> {
    return this.redis.smembers(this.key(logical));
  }

  /** Stops timers and the fact cache's reader (the other connections belong to the caller). */
  close(): void {
    this.closed = true;
    void this.invReader?.stop();
    this.cache?.close();
    if (this.poller) clearInterval(this.poller);
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
  }
}
