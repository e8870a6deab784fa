/**
 * The API process's cache of the facts read on every request (sessions, users, servers with their roles,
 * channels, members, relations, bot tokens), kept coherent by the projector's own client-event streams.
 *
 * Coherence (issue 18, docs/ARCHITECTURE.md "Fact cache"):
 * - Every projector commit appends, in the same MULTI as its checkpoint, one invalidation entry to its
 *   partition's client-event stream: `{g, p, q, k}` = generation, the new checkpoint, the previous one and the
 *   cacheable logical keys the batch wrote. Every API process reads those streams in order (the gateway's
 *   reader), drops the named entries and advances its position for the partition.
 * - A request first reads the partitions' checkpoints (one round trip, `ReadModels.fence`) and waits until
 *   this cache has applied every entry up to them, so nothing cached is older than what any process had
 *   acknowledged before the request began (a write through another API process included).
 * - A write's read-your-writes wait also waits for this cache to pass the write's position.
 * - A fetch that an invalidation overtakes is not stored. A gap in the entries (a trimmed stream, a lost
 *   append) or an entry that does not come in time empties the cache: what is read next comes from Redis.
 * Values are kept as the raw JSON text and parsed on each hit, so no caller can change a cached object.
 */
import type { Logger } from 'pino';
import { streamEnds, type RedisClient } from '../redis.ts';
import { controlKeys } from './keys.ts';

function sizeOf(key: string, raw: string | null): number {
  return 2 * (key.length + (raw?.length ?? 0)) + 64;
}

/** A cached newest history page: its wire bytes and each message's author. */
export interface CachedPage {
  json: Buffer;
  authors: string[];
}

function pageSize(key: string, page: CachedPage): number {
  return 2 * key.length + page.json.length + 30 * page.authors.length + 64;
}

/** Whether a logical read-model key (or hash) is cached: small facts read on every request. */
export function isCacheableKey(logical: string): boolean {
  return CACHEABLE.test(logical);
}

/** Whether the fields of a logical hash are cached one by one (a server's members). */
export function isCacheableHash(logical: string): boolean {
  return CACHEABLE_HASH.test(logical);
}

const CACHEABLE = /^(?:session|user|server|channel|pchannel|lastmsg|relations|bottoken):[^:]+$/;
const CACHEABLE_HASH = /^server:[^:]+:members$/;

const MESSAGES_KEY = /^channel:([^:]+):history$/;

/** The cache key of a channel's newest history page, for a write to its messages (undefined for other keys). */
export function pageKeyOf(logical: string): string | undefined {
  const m = MESSAGES_KEY.exec(logical);
  return m ? pageKey(m[1]!) : undefined;
}

/** The cache key under which a channel's newest pages are kept (one entry per page size). */
export function pageKey(channelId: string): string {
  return `page:${channelId}`;
}

/** The cache key of a hash field. */
export function fieldKey(logical: string, field: string): string {
  return `${logical}\n${field}`;
}

/** One projector commit as the invalidation stream carries it. */
export interface Invalidation {
  /** Generation of the read models written. */
  g: number;
  /** The checkpoint after the batch (decimal position). */
  p: string;
  /** The checkpoint before it (null: the partition's first batch). */
  q: string | null;
  /** Cacheable logical keys written (`key` or `key\nfield`). */
  k: string[];
}

interface Ticket {
  valid: boolean;
}

interface Waiter {
  partition: number;
  position: bigint;
  resolve: () => void;
}

/** Options of the cache. */
export interface FactCacheOptions {
  /** Most entries kept (the oldest tenth is evicted past it). */
  maxEntries: number;
  /** Most bytes of keys and JSON text kept (counted as UTF-16 code units × 2; the oldest tenth goes past it). */
  maxBytes?: number;
  /** How long to wait for the invalidation stream before emptying the cache instead (ms). */
  staleMs: number;
}

/** See the file comment. */
export class FactCache {
  private readonly map = new Map<string, string | null>();
  private bytes = 0;
  /** Newest history pages by `page:<channel>\n<limit>` (wire bytes and authors), bounded with the facts' bytes. */
  private readonly pages = new Map<string, CachedPage>();
  private readonly pending = new Map<string, Ticket[]>();
  private readonly positions = new Map<number, bigint>();
  private waiters: Waiter[] = [];
  /** Generation the entries belong to. */
  private gen: number | undefined;
  /** Counters for the metrics and the tests. */
  readonly stats = { hits: 0, misses: 0, invalidations: 0, flushes: 0 };

  constructor(private readonly o: FactCacheOptions) {}

  /** Number of cached entries (facts and pages). */
  get size(): number {
    return this.map.size + this.pages.size;
  }

  /** The position this cache reflects for a partition (undefined: not yet known). */
  position(partition: number): bigint | undefined {
    return this.positions.get(partition);
  }

  /** Serving is possible only in the generation the entries were read in; a new one empties the cache. */
  useGeneration(gen: number | undefined): void {
    if (gen === this.gen) return;
    this.gen = gen;
    this.flush();
    this.positions.clear();
  }

  /** The raw JSON cached under `key` (null: cached as absent; undefined: not cached). */
  get(key: string): string | null | undefined {
    const v = this.map.get(key);
    if (v === undefined) this.stats.misses++;
    else this.stats.hits++;
    return v;
  }

  /** A channel's cached newest page of `limit` messages, or undefined. */
  getPage(channelId: string, limit: number): CachedPage | undefined {
    const key = fieldKey(pageKey(channelId), String(limit));
    const v = this.pages.get(key);
    if (v === undefined) this.stats.misses++;
    else this.stats.hits++;
    return v;
  }

  /** Stores a page fetched under `ticket` (from `beginPage`) unless an invalidation of its channel overtook it. */
  finishPage(channelId: string, limit: number, ticket: Ticket, page: CachedPage): void {
    const key = fieldKey(pageKey(channelId), String(limit));
    this.release(key, ticket);
    if (!ticket.valid) return;
    const old = this.pages.get(key);
    if (old) this.bytes -= pageSize(key, old);
    this.pages.delete(key);
    this.pages.set(key, page);
    this.bytes += pageSize(key, page);
    this.evict();
  }

  /** Registers a page fetch about to be sent (see `begin`). */
  beginPage(channelId: string, limit: number): Ticket {
    return this.begin(fieldKey(pageKey(channelId), String(limit)));
  }

  private release(key: string, ticket: Ticket): void {
    const list = this.pending.get(key);
    if (!list) return;
    const i = list.indexOf(ticket);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.pending.delete(key);
  }

  /** Registers a fetch of `key` about to be sent; `finish` stores its answer unless an invalidation overtook it. */
  begin(key: string): Ticket {
    const t: Ticket = { valid: true };
    const list = this.pending.get(key);
    if (list) list.push(t);
    else this.pending.set(key, [t]);
    return t;
  }

  /** Ends a fetch started by `begin`: stores the raw value when nothing invalidated the key meanwhile. */
  finish(key: string, ticket: Ticket, raw: string | null): void {
    this.release(key, ticket);
    if (!ticket.valid) return;
    this.remove(key);
    this.map.set(key, raw);
    this.bytes += sizeOf(key, raw);
    this.evict();
  }

  private evict(): void {
    const maxBytes = this.o.maxBytes ?? Infinity;
    if (this.map.size + this.pages.size <= this.o.maxEntries && this.bytes <= maxBytes) return;
    // Evict the oldest pages first (the largest entries), then the oldest facts, in one pass each, down to
    // nine tenths of both bounds.
    const entries = Math.floor(this.o.maxEntries * 0.9);
    const bytes = maxBytes * 0.9;
    const over = () => this.map.size + this.pages.size > entries || this.bytes > bytes;
    for (const [k, v] of this.pages) {
      if (!over()) return;
      this.pages.delete(k);
      this.bytes -= pageSize(k, v);
    }
    for (const [k, v] of this.map) {
      if (!over()) return;
      this.map.delete(k);
      this.bytes -= sizeOf(k, v);
    }
  }

  /** Bytes the entries hold (keys and JSON text, 2 bytes per code unit). */
  get heldBytes(): number {
    return this.bytes;
  }

  private remove(key: string): void {
    const v = this.map.get(key);
    if (v === undefined) return;
    this.map.delete(key);
    this.bytes -= sizeOf(key, v);
  }

  /** Empties the cache; fetches in flight are not stored. */
  flush(): void {
    this.stats.flushes++;
    this.map.clear();
    this.pages.clear();
    this.bytes = 0;
    for (const list of this.pending.values()) for (const t of list) t.valid = false;
  }

  private drop(key: string): void {
    if (key.startsWith('page:')) {
      // Every page size of the channel goes, and page fetches in flight are not stored.
      const prefix = `${key}\n`;
      for (const [k, v] of [...this.pages]) {
        if (!k.startsWith(prefix)) continue;
        this.pages.delete(k);
        this.bytes -= pageSize(k, v);
      }
      for (const [k, ts] of this.pending) if (k.startsWith(prefix)) for (const t of ts) t.valid = false;
      return;
    }
    this.remove(key);
    const list = this.pending.get(key);
    if (list) for (const t of list) t.valid = false;
    if (key.includes('\n')) return;
    if (isCacheableHash(key)) {
      // The whole hash was written (deleted): every field of it goes.
      const prefix = `${key}\n`;
      for (const k of [...this.map.keys()]) if (k.startsWith(prefix)) this.remove(k);
      for (const [k, ts] of this.pending) if (k.startsWith(prefix)) for (const t of ts) t.valid = false;
    }
  }

  /** Applies one invalidation entry of a partition's stream, in stream order. */
  apply(partition: number, inv: Invalidation): void {
    if (inv.g !== this.gen) return;
    const pos = this.positions.get(partition);
    // Not yet fenced: nothing is cached for lack of positions, so there is nothing to drop.
    if (pos === undefined) return;
    const p = BigInt(inv.p);
    if (p <= pos) return;
    const q = inv.q === null ? -1n : BigInt(inv.q);
    if (q > pos) {
      // Entries between were missed (trimmed or never appended): nothing cached can be trusted.
      this.flush();
    } else {
      this.stats.invalidations += inv.k.length;
      for (const key of inv.k) this.drop(key);
    }
    this.positions.set(partition, p);
    this.resolve();
  }

  /** Whether entries may be read and stored: every partition's position is known. */
  ready(partitions: number): boolean {
    return this.positions.size >= partitions && this.gen !== undefined;
  }

  /**
   * Resolves once this cache reflects `position` (a committed checkpoint, or a position under one) in the
   * partition. Unknown position: the cache starts there (it holds nothing older). When the stream does not
   * bring the entry within `staleMs`, the cache is emptied and moved there.
   */
  reach(partition: number, position: bigint): Promise<void> {
    const pos = this.positions.get(partition);
    if (pos === undefined) {
      this.flush();
      this.positions.set(partition, position);
      return Promise.resolve();
    }
    if (pos >= position) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        const now = this.positions.get(partition);
        if (now === undefined || now < position) {
          this.flush();
          this.positions.set(partition, position);
        }
        resolve();
      }, this.o.staleMs);
      const waiter: Waiter = {
        partition,
        position,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      this.waiters.push(waiter);
    });
  }

  private resolve(): void {
    if (this.waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      const pos = this.positions.get(w.partition);
      if (pos !== undefined && pos >= w.position) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }

  /** Releases every waiter (the process stops). */
  close(): void {
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
    this.flush();
  }
}

/** Options of the invalidation reader. */
export interface InvalidationReaderOptions {
  /** A connection of its own (it blocks in XREAD). */
  redis: RedisClient;
  prefix: string;
  partitions: number;
  cache: FactCache;
  log: Logger;
  /** TEST HOOK (an injected fault): wait this long before applying each read of the streams (ms). */
  applyDelayMs?: number;
}

/**
 * Follows every partition's invalidation stream (`{live}:inv:<n>:<i>`) from its end when started, with
 * XREAD BLOCK on a connection of its own, and applies each entry to the cache in stream order.
 */
export class InvalidationReader {
  private readonly keys: string[];
  private readonly ids: string[] = [];
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(private readonly o: InvalidationReaderOptions) {
    const ctl = controlKeys(o.prefix);
    this.keys = Array.from({ length: o.partitions }, (_, i) => ctl.invalidations(o.partitions, i));
  }

  /** Resolves the start positions (the current end of every stream) and starts reading. */
  async start(): Promise<void> {
    this.ids.push(...(await streamEnds(this.o.redis, this.keys)));
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let res: Array<[string, Array<[string, string[]]>]> | null;
      try {
        res = (await this.o.redis.xread('COUNT', 1000, 'BLOCK', 5000, 'STREAMS', ...this.keys, ...this.ids)) as typeof res;
      } catch (err) {
        if (this.stopped) return;
        // Entries may be missed while the connection is down: nothing cached can be trusted.
        this.o.cache.flush();
        this.o.log.warn({ err }, 'fact cache: XREAD failed, retrying');
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      if (!res) continue;
      if (this.o.applyDelayMs) await new Promise((r) => setTimeout(r, this.o.applyDelayMs));
      for (const [key, entries] of res) {
        const partition = this.keys.indexOf(key);
        for (const [id, fields] of entries) {
          this.ids[partition] = id;
          const raw = fields[fields.indexOf('i') + 1];
          let inv: Invalidation;
          try {
            inv = JSON.parse(raw ?? '') as Invalidation;
          } catch {
            this.o.cache.flush();
            continue;
          }
          this.o.cache.apply(partition, inv);
        }
      }
    }
  }

  /** Stops reading (the connection belongs to the caller). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.o.redis.disconnect();
    await this.loop?.catch(() => {});
  }
}
