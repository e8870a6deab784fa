/**
 * The batch transaction handed to projections: reads go through the batch's own writes, then a
 * partition-local cache, then Redis; writes are buffered as Redis commands for the runner's MULTI.
 */
import type { RedisClient } from '../src/redis.ts';
import { fieldKey, isCacheableHash, isCacheableKey, pageKeyOf } from '../src/readmodel/factCache.ts';
import { recordHead, recordRange } from '../src/readmodel/records.ts';
import { HOME_SLOT, shardOfKey, shardPrefix } from '../src/readmodel/keys.ts';
import type { ClientEventRoute, ProjectionTx } from './types.ts';

const DELETED = Symbol('deleted');
type Slot = unknown | typeof DELETED;

interface CacheSlot {
  value: unknown;
  /** Read or written again since it was added or last spared by an eviction. */
  used: boolean;
}

/**
 * A bounded cache of JSON values owned by one partition runner (valid while it is the only writer). Eviction
 * is second chance (CLOCK) over insertion order: a tenth at a time, from the oldest, an entry used since it was
 * added (or last spared) is moved to the end once and the others go. An exact LRU moved an entry to the end on
 * every read (delete, then set again): in V8's ordered Map each move leaves a hole that the eviction's walk from
 * the front crosses again until the table is rehashed, and with a key read for every event (the channel of a
 * message, 1M messages) that walk became 40 % of a rebuild's CPU.
 */
export class ValueCache {
  private readonly map = new Map<string, CacheSlot>();
  constructor(private readonly capacity = 20_000) {}
  /** undefined = not cached; null = cached as absent. */
  get(key: string): unknown {
    const slot = this.map.get(key);
    if (slot === undefined) return undefined;
    slot.used = true;
    return slot.value;
  }
  set(key: string, value: unknown): void {
    const slot = this.map.get(key);
    if (slot !== undefined) {
      slot.value = value;
      slot.used = true;
      return;
    }
    // Room first, so that the entry being added is never the one evicted.
    if (this.map.size >= this.capacity) this.evict();
    this.map.set(key, { value, used: false });
  }
  /**
   * Frees a tenth of the capacity in one pass (one entry per insertion would leave deleted slots at the front
   * that every later pass walks again). Each entry is visited at most twice: once spared, then as any other.
   */
  private evict(): void {
    let n = this.map.size + 1 - Math.floor(this.capacity * 0.9);
    for (const [key, slot] of this.map) {
      this.map.delete(key);
      if (slot.used) {
        slot.used = false;
        this.map.set(key, slot);
        continue;
      }
      if (--n <= 0) break;
    }
  }
  delete(key: string): void {
    this.map.delete(key);
  }
  /** Drops every entry whose key starts with a prefix (after a whole-key delete of a hash). */
  deletePrefix(prefix: string): void {
    for (const k of this.map.keys()) if (k.startsWith(prefix)) this.map.delete(k);
  }
  clear(): void {
    this.map.clear();
  }
}

interface HashOverlay {
  wiped: boolean;
  fields: Map<string, Slot>;
}
interface SetOverlay {
  wiped: boolean;
  added: Set<string>;
  removed: Set<string>;
}

/** One emitted client event. */
export interface Emitted {
  route: ClientEventRoute;
  payload: Record<string, unknown>;
}

/**
 * Where a batch's spread keys live (docs/ARCHITECTURE.md "Redis Cluster"): shard s's keys under
 * `shardPrefix(prefix, generation, s)`, read on `conn(s)`; the main slot is shard -1 (`MAIN_SLOT`). `done(s)` is
 * the position up to which the partition's writes to s are already applied (its checkpoint there): while a
 * runner replays events at or below it, their writes to s are dropped (they are in Redis), and reads of s see
 * Redis. `done(HOME_SLOT)` is the partition's own checkpoint: an event at or below it was announced already.
 * Since the home slot's redo log (projections/runner.ts `repair`) a runner brings every slot up to its checkpoint
 * before it reads an event, so nothing is dropped in practice: the check stays as a guard against a replay.
 */
export interface ShardRouting {
  prefix: string;
  generation: number;
  conn(shard: number): RedisClient;
  done(shard: number): bigint | undefined;
}

/** Implementation of ProjectionTx for one batch. */
export class BatchTx implements ProjectionTx {
  readonly ops: Array<[string, ...Array<string | number>]> = [];
  /** The shard each of `ops` writes (-1: the main slot), in the same order. */
  readonly opShards: number[] = [];
  /** Position of the event being applied (set by the runner; with `routing`, decides which writes are dropped). */
  position: bigint | undefined;
  readonly emitted: Emitted[] = [];
  /** Logical keys (`key` or `key\nfield`) the API processes cache and this batch writes (their invalidations). */
  readonly touched = new Set<string>();
  private readonly values = new Map<string, Slot>();
  /** Where in `ops` the SET of a key stands, while no other command on that key follows it. */
  private readonly lastSet = new Map<string, number>();
  private readonly hashes = new Map<string, HashOverlay>();
  private readonly sets = new Map<string, SetOverlay>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keyPrefix: string,
    private readonly cache: ValueCache,
    readonly partition: number,
    readonly rebuilding: boolean,
    private readonly routing?: ShardRouting,
  ) {}

  private readonly shardPrefixes = new Map<number, string>();

  private k(key: string): string {
    if (!this.routing) return this.keyPrefix + key;
    const s = shardOfKey(key);
    if (s < 0) return this.keyPrefix + key;
    let p = this.shardPrefixes.get(s);
    if (p === undefined) {
      p = shardPrefix(this.routing.prefix, this.routing.generation, s);
      this.shardPrefixes.set(s, p);
    }
    return p + key;
  }

  private shard(key: string): number {
    return this.routing ? shardOfKey(key) : -1;
  }

  /** The connection a key is read on. */
  private r(key: string): RedisClient {
    return this.routing ? this.routing.conn(this.shard(key)) : this.redis;
  }

  /** True when the event being applied is already applied in the key's slot (a replay): its write is dropped. */
  private skips(key: string): boolean {
    return this.skipsShard(this.shard(key));
  }

  private skipsShard(shard: number): boolean {
    if (!this.routing || this.position === undefined) return false;
    const done = this.routing.done(shard);
    return done !== undefined && this.position <= done;
  }

  private push(key: string, op: [string, ...Array<string | number>]): void {
    this.ops.push(op);
    this.opShards.push(this.shard(key));
  }

  async getJson<T>(key: string): Promise<T | null> {
    const full = this.k(key);
    if (this.values.has(full)) {
      const v = this.values.get(full);
      return v === DELETED ? null : (v as T);
    }
    const cached = this.cache.get(full);
    if (cached !== undefined) return cached as T | null;
    const raw = await this.r(key).get(full);
    const v = raw === null ? null : (JSON.parse(raw) as T);
    this.cache.set(full, v);
    return v;
  }

  private touch(key: string, field?: string): void {
    // A rebuild fills a generation nobody reads yet: no cache to tell.
    if (this.rebuilding) return;
    if (field === undefined ? isCacheableKey(key) || isCacheableHash(key) : isCacheableHash(key)) {
      this.touched.add(field === undefined ? key : fieldKey(key, field));
      return;
    }
    // A channel's messages changed: its cached newest page goes.
    const page = pageKeyOf(key);
    if (page !== undefined) this.touched.add(page);
  }

  setJson(key: string, value: unknown): void {
    if (this.skips(key)) return;
    this.touch(key);
    const full = this.k(key);
    this.values.set(full, value);
    // A key written again in the same batch (a channel's last_message_id, once per message of a rebuild's page):
    // the earlier SET is replaced where it stands, as nothing between reads or removes that key.
    const at = this.lastSet.get(full);
    if (at !== undefined) {
      this.ops[at]![2] = JSON.stringify(value);
      return;
    }
    this.lastSet.set(full, this.ops.length);
    this.push(key, ['set', full, JSON.stringify(value)]);
  }

  del(key: string): void {
    if (this.skips(key)) return;
    this.touch(key);
    const full = this.k(key);
    this.lastSet.delete(full);
    this.values.set(full, DELETED);
    this.hashes.set(full, { wiped: true, fields: new Map() });
    this.sets.set(full, { wiped: true, added: new Set(), removed: new Set() });
    // UNLINK: the same as DEL for readers, but a large hash (a channel's messages) is freed off the main thread.
    this.push(key, ['unlink', full]);
  }

  private hash(full: string): HashOverlay {
    let h = this.hashes.get(full);
    if (!h) {
      h = { wiped: false, fields: new Map() };
      this.hashes.set(full, h);
    }
    return h;
  }

  /**
   * A field of a hash or the record of an id in a record set: this batch's writes, then the partition cache,
   * then Redis (`fetch`: the raw JSON or null), remembered in the cache.
   */
  private async fieldJson<T>(key: string, field: string, fetch: (full: string) => Promise<string | null>): Promise<T | null> {
    const full = this.k(key);
    const h = this.hashes.get(full);
    if (h?.fields.has(field)) {
      const v = h.fields.get(field);
      return v === DELETED ? null : (v as T);
    }
    if (h?.wiped) return null;
    const ck = `${full}\u0000${field}`;
    const cached = this.cache.get(ck);
    if (cached !== undefined) return cached as T | null;
    const raw = await fetch(full);
    const v = raw === null ? null : (JSON.parse(raw) as T);
    this.cache.set(ck, v);
    return v;
  }

  hgetJson<T>(key: string, field: string): Promise<T | null> {
    return this.fieldJson<T>(key, field, (full) => this.r(key).hget(full, field));
  }

  async hgetallJson<T>(key: string): Promise<Map<string, T>> {
    const full = this.k(key);
    const h = this.hashes.get(full);
    const out = new Map<string, T>();
    if (!h?.wiped) {
      const raw = await this.r(key).hgetall(full);
      for (const [f, v] of Object.entries(raw)) out.set(f, JSON.parse(v) as T);
    }
    if (h) {
      for (const [f, v] of h.fields) {
        if (v === DELETED) out.delete(f);
        else out.set(f, v as T);
      }
    }
    return out;
  }

  hsetJson(key: string, field: string, value: unknown): void {
    if (this.skips(key)) return;
    this.touch(key, field);
    const full = this.k(key);
    this.hash(full).fields.set(field, value);
    this.push(key, ['hset', full, field, JSON.stringify(value)]);
  }

  hdel(key: string, ...fields: string[]): void {
    if (fields.length === 0 || this.skips(key)) return;
    const full = this.k(key);
    const h = this.hash(full);
    for (const f of fields) {
      h.fields.set(f, DELETED);
      this.touch(key, f);
    }
    this.push(key, ['hdel', full, ...fields]);
  }

  rgetJson<T>(key: string, id: string): Promise<T | null> {
    return this.fieldJson<T>(key, id, async (full) => (await this.r(key).zrangebylex(full, ...recordRange(id), 'LIMIT', 0, 1))[0] ?? null);
  }

  rsetJson(key: string, id: string, value: unknown): void {
    this.record(key, id, value, true);
  }

  raddJson(key: string, id: string, value: unknown): void {
    const h = this.hashes.get(this.k(key));
    // Written or removed earlier in this batch (or the whole set wiped): replaced as usual.
    this.record(key, id, value, h !== undefined && (h.wiped || h.fields.has(id)));
  }

  private record(key: string, id: string, value: unknown, replace: boolean): void {
    if (this.skips(key)) return;
    const json = JSON.stringify(value);
    // The record's bytes are its place in the set: one that does not begin with its id would be lost to it.
    if (!json.startsWith(recordHead(id))) throw new Error(`a record of ${key} must begin with {"_id":"${id}"`);
    this.touch(key);
    const full = this.k(key);
    this.hash(full).fields.set(id, value);
    if (replace) {
      // The record it replaces (if any) has other bytes: remove it by its id's range, then add.
      const [min, max] = recordRange(id);
      this.push(key, ['zremrangebylex', full, min, max]);
    }
    this.push(key, ['zadd', full, 0, json]);
  }

  rdel(key: string, id: string): void {
    if (this.skips(key)) return;
    this.touch(key);
    const full = this.k(key);
    this.hash(full).fields.set(id, DELETED);
    const [min, max] = recordRange(id);
    this.push(key, ['zremrangebylex', full, min, max]);
  }

  private set(full: string): SetOverlay {
    let s = this.sets.get(full);
    if (!s) {
      s = { wiped: false, added: new Set(), removed: new Set() };
      this.sets.set(full, s);
    }
    return s;
  }

  sadd(key: string, ...members: string[]): void {
    if (members.length === 0 || this.skips(key)) return;
    const full = this.k(key);
    const s = this.set(full);
    for (const m of members) {
      s.added.add(m);
      s.removed.delete(m);
    }
    this.push(key, ['sadd', full, ...members]);
  }

  srem(key: string, ...members: string[]): void {
    if (members.length === 0 || this.skips(key)) return;
    const full = this.k(key);
    const s = this.set(full);
    for (const m of members) {
      s.removed.add(m);
      s.added.delete(m);
    }
    this.push(key, ['srem', full, ...members]);
  }

  async smembers(key: string): Promise<Set<string>> {
    const full = this.k(key);
    const s = this.sets.get(full);
    const out = new Set<string>(s?.wiped ? [] : await this.r(key).smembers(full));
    if (s) {
      for (const m of s.removed) out.delete(m);
      for (const m of s.added) out.add(m);
    }
    return out;
  }

  zadd(key: string, score: number, member: string): void {
    if (this.skips(key)) return;
    this.touch(key);
    this.push(key, ['zadd', this.k(key), score, member]);
  }

  zrem(key: string, ...members: string[]): void {
    if (members.length === 0 || this.skips(key)) return;
    this.touch(key);
    this.push(key, ['zrem', this.k(key), ...members]);
  }

  eval(script: string, keys: string[], args: string[]): void {
    // A script runs in one slot: its keys must share a shard (or all be in the main slot).
    const shard = keys.length === 0 ? -1 : this.shard(keys[0]!);
    if (keys.some((k) => this.shard(k) !== shard)) throw new Error(`a script's keys must share a shard: ${keys.join(', ')}`);
    if (this.skipsShard(shard)) return;
    for (const k of keys) {
      this.touch(k);
      // The script may read the key: a later SET of it must come after the script, not replace an earlier one.
      this.lastSet.delete(this.k(k));
    }
    this.ops.push(['eval', script, keys.length, ...keys.map((k) => this.k(k)), ...args]);
    this.opShards.push(shard);
  }

  emit(route: ClientEventRoute, payload: Record<string, unknown>): void {
    // An event replayed below the partition's checkpoint (its home slot) was announced when it was first committed.
    if (!this.rebuilding && !this.skipsShard(HOME_SLOT)) this.emitted.push({ route, payload });
  }

  /** After a successful commit: remember this batch's values in the partition cache. */
  commitToCache(): void {
    for (const [k, v] of this.values) {
      if (v === DELETED) {
        this.cache.set(k, null);
        this.cache.deletePrefix(`${k}\u0000`);
      } else this.cache.set(k, v);
    }
    for (const [k, h] of this.hashes) {
      if (h.wiped) this.cache.deletePrefix(`${k}\u0000`);
      for (const [f, v] of h.fields) this.cache.set(`${k}\u0000${f}`, v === DELETED ? null : v);
    }
  }
}
