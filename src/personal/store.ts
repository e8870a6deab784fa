/**
 * The personal-data boundary of the event store: an `EventStore` around another one that seals the declared
 * personal fields (`fields.ts`) on append and opens them on every read (streams, `$all`, subscriptions), so
 * projections, `events export`, `events state` and commands see plain values while the log holds ciphertext.
 * A field whose subject's key was destroyed reads as absent (erased); so does a plain (pre-encryption) value
 * of a destroyed subject. `events migrate` copies the inner store as it is (ciphertext stays ciphertext).
 */
import type {
  AppendResult,
  EventStore,
  ExpectedRevision,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  StoreStats,
  StreamWrite,
  SubscribeOptions,
  Subscription,
} from '../eventstore/port.ts';
import { isSealed, open, seal, type Sealed } from './cipher.ts';
import { heldUsersNow } from '../compliance/holdLog.ts';
import { CONTENT_FIELDS, ERASING_EVENTS, PERSONAL_FIELDS, RELEASING_EVENTS } from './fields.ts';
import type { KeyStore } from './keyStore.ts';

/** The default width of a content bucket (RETENTION_BUCKET_SECONDS): one day. */
export const DEFAULT_CONTENT_BUCKET_MS = 86_400_000;

/** How long a content key fetched for sealing is reused (ms). */
const SEAL_KEY_TTL_MS = 10_000;
/** Content keys kept for sealing at most. */
const SEAL_KEY_CACHE_MAX = 10_000;

/** Marks a value to be left out of its object (or array). */
const DROP = Symbol('drop');

/**
 * Maps every value at `path` (`*`: each element of an array) with `fn`, copying the objects and arrays on the
 * way so the input is never changed; a value mapped to DROP is removed. Missing paths are left alone.
 */
async function mapPath(node: unknown, path: readonly string[], i: number, fn: (v: unknown) => Promise<unknown>): Promise<unknown> {
  if (i === path.length) return fn(node);
  const step = path[i]!;
  if (step === '*') {
    if (!Array.isArray(node)) return node;
    let changed = false;
    const out: unknown[] = [];
    for (const el of node) {
      const r = await mapPath(el, path, i + 1, fn);
      if (r !== el) changed = true;
      if (r !== DROP) out.push(r);
    }
    return changed ? out : node;
  }
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return node;
  const obj = node as Record<string, unknown>;
  if (!Object.hasOwn(obj, step) || obj[step] === undefined) return node;
  const r = await mapPath(obj[step], path, i + 1, fn);
  if (r === obj[step]) return node;
  const copy = { ...obj };
  if (r === DROP) delete copy[step];
  else copy[step] = r;
  return copy;
}

/** Seals message content under its channel's time bucket, and a file's name under the file (`CONTENT_FIELDS`), the subject named in the sealed value. */
async function sealContent(keys: Pick<KeyStore, 'keyFor'>, stream: string, e: NewEvent, bucketMs: number): Promise<NewEvent> {
  const spec = CONTENT_FIELDS.get(e.type);
  if (!spec) return e;
  const subject = spec.subject(stream, e.data as Record<string, unknown>, bucketMs);
  if (!subject) return e;
  let key: Buffer | null | undefined;
  let data = e.data as Record<string, unknown>;
  for (const p of spec.paths) {
    const field = p.join('.');
    data = (await mapPath(data, p, 0, async (v) => {
      if (v === undefined || isSealed(v)) return v;
      key ??= await keys.keyFor(subject);
      // A bucket whose key is gone (every message of it expired) takes no new content: dropped, never plain.
      return key ? { ...seal(key, subject, field, v), s: subject } : DROP;
    })) as Record<string, unknown>;
  }
  return data === e.data ? e : { ...e, data };
}

/** Opens the message content of a recorded event; content whose bucket key is gone is left out and the event marked `erased`. */
async function openContent(cache: KeyCache, e: RecordedEvent): Promise<RecordedEvent> {
  const spec = CONTENT_FIELDS.get(e.type);
  if (!spec) return e;
  let erased = false;
  let data = e.data as Record<string, unknown>;
  for (const p of spec.paths) {
    const field = p.join('.');
    data = (await mapPath(data, p, 0, async (v) => {
      // Plain values (written before content was sealed) are read as they are.
      if (!isSealed(v) || typeof (v as Sealed).s !== 'string') return v;
      const subject = (v as Sealed).s!;
      const key = await cache.key(subject);
      const plain = key ? open(key, subject, field, v) : undefined;
      if (plain !== undefined) return plain;
      erased = true;
      return DROP;
    })) as Record<string, unknown>;
  }
  if (erased) data = { ...data, erased: true };
  return data === e.data ? e : { ...e, data };
}

/** Keys looked up during one read (a batch), so a subject's key is fetched once per batch. */
class KeyCache {
  private readonly keys = new Map<string, Buffer | null>();
  private readonly gone = new Map<string, boolean>();
  constructor(private readonly store: KeyStore) {}
  async key(subject: string): Promise<Buffer | null> {
    if (!this.keys.has(subject)) this.keys.set(subject, await this.store.lookup(subject));
    return this.keys.get(subject)!;
  }
  async destroyed(subject: string): Promise<boolean> {
    if (!this.gone.has(subject)) this.gone.set(subject, await this.store.destroyed(subject));
    return this.gone.get(subject)!;
  }
}

/** Seals the personal fields of one event about to be appended to `stream`. */
export async function sealEvent(keys: KeyStore, stream: string, e: NewEvent): Promise<NewEvent> {
  const spec = PERSONAL_FIELDS.get(e.type);
  if (!spec) return e;
  const subject = spec.subject(stream);
  const data = e.data as Record<string, unknown>;
  if (!subject || !spec.fields.some((f) => data[f] !== undefined && !isSealed(data[f]))) return e;
  const key = await keys.keyFor(subject);
  const out: Record<string, unknown> = { ...data };
  for (const f of spec.fields) {
    if (out[f] === undefined || isSealed(out[f])) continue;
    // A destroyed subject gets no new key: its personal fields are dropped rather than written in plain text.
    if (key) out[f] = seal(key, subject, f, out[f]);
    else delete out[f];
  }
  return { ...e, data: out };
}

/** Opens the personal fields and the message content of one recorded event (erased fields are left out). */
async function openEvent(cache: KeyCache, e: RecordedEvent): Promise<RecordedEvent> {
  return openPersonal(cache, await openContent(cache, e));
}

/** Opens the personal fields of one recorded event (erased fields are left out). */
async function openPersonal(cache: KeyCache, e: RecordedEvent): Promise<RecordedEvent> {
  const spec = PERSONAL_FIELDS.get(e.type);
  if (!spec) return e;
  const subject = spec.subject(e.stream);
  if (!subject) return e;
  const data = e.data as Record<string, unknown>;
  let out: Record<string, unknown> | undefined;
  for (const f of spec.fields) {
    const v = data[f];
    if (v === undefined) continue;
    out ??= { ...data };
    if (isSealed(v)) {
      const key = await cache.key(subject);
      const plain = key ? open(key, subject, f, v) : undefined;
      if (plain === undefined) delete out[f];
      else out[f] = plain;
    } else if (await cache.destroyed(subject)) {
      // Written in plain text before fields were sealed: not erasable from the log, but never shown again.
      delete out[f];
    }
  }
  return out ? { ...e, data: out } : e;
}

/** Options of the boundary. */
export interface PersonalDataStoreOptions {
  /** Width of a message-content bucket (RETENTION_BUCKET_SECONDS × 1000) for new content. */
  contentBucketMs?: number;
  /** False for a reader that must not repeat key destructions its subscription delivers (the search indexer thread). */
  repeatErasures?: boolean;
}

/** The boundary. `inner` is the store as it is on disk (for migration and adapter-specific calls). */
export class PersonalDataStore implements EventStore {
  /** Width of the content buckets new messages are sealed in. */
  readonly contentBucketMs: number;
  private readonly repeatErasures: boolean;

  constructor(
    readonly inner: EventStore,
    readonly keys: KeyStore,
    options: PersonalDataStoreOptions = {},
  ) {
    this.contentBucketMs = options.contentBucketMs ?? DEFAULT_CONTENT_BUCKET_MS;
    this.repeatErasures = options.repeatErasures ?? true;
  }

  /**
   * Content keys recently used for sealing (a send per message: the key store is not asked each time). A key
   * destroyed meanwhile by another process may still seal content for up to SEAL_KEY_TTL_MS: content of a
   * bucket that is gone already, which then never opens (its key is destroyed) — erased, never plain.
   */
  private readonly sealKeys = new Map<string, { key: Buffer | null; until: number }>();

  private readonly contentKeys: Pick<KeyStore, 'keyFor'> = {
    keyFor: async (subject) => {
      const now = Date.now();
      const hit = this.sealKeys.get(subject);
      if (hit && hit.until > now) return hit.key;
      const key = await this.keys.keyFor(subject);
      if (this.sealKeys.size >= SEAL_KEY_CACHE_MAX) this.sealKeys.delete(this.sealKeys.keys().next().value as string);
      this.sealKeys.set(subject, { key, until: now + SEAL_KEY_TTL_MS });
      return key;
    },
  };

  private async sealAll(stream: string, events: NewEvent[]): Promise<NewEvent[]> {
    return Promise.all(events.map(async (e) => sealContent(this.contentKeys, stream, await sealEvent(this.keys, stream, e), this.contentBucketMs)));
  }

  /**
   * Destroys the keys the erasing events among `writes` call for: an account's deletion, unless a standing hold
   * covers the account; a hold's lift, when no other hold stands on the account and the account is deleted. The
   * standing holds are folded from the log as it is now (never a read model, which a rebuild empties), so
   * repeating this — the projector does, on every erasing event it sees, replays and rebuilds included — is
   * idempotent and decides the same: a crash between a lift's append and the destruction is closed by the
   * projector's repeat. A hold placed after a deletion's key was destroyed protects nothing of it.
   */
  private async erase(writes: Array<{ stream: string; events: Array<{ type: string; data?: unknown }> }>): Promise<void> {
    let held: Set<string> | undefined;
    for (const w of writes) {
      for (const e of w.events) {
        const subjectOf = ERASING_EVENTS.get(e.type);
        const subject = subjectOf?.(w.stream, (e.data ?? {}) as Record<string, unknown>);
        if (!subject) continue;
        this.sealKeys.delete(subject);
        // Only an account's key can be held (a deletion, or a hold's lift): content and file keys never are.
        const accountKey = e.type === 'AccountDeleted' || RELEASING_EVENTS.has(e.type);
        if (accountKey) held ??= await heldUsersNow(this.inner);
        if (accountKey && held!.has(subject)) {
          // The account's deletion is recorded for restores (re-applied there with the key kept).
          if (!RELEASING_EVENTS.has(e.type)) await this.keys.keep(subject);
          continue;
        }
        if (RELEASING_EVENTS.has(e.type) && !(await this.accountDeleted(subject))) continue;
        await this.keys.destroy(subject);
      }
    }
  }

  /** Whether the log holds the account's deletion (event types only: nothing is opened). */
  private async accountDeleted(userId: string): Promise<boolean> {
    return (await this.inner.readStream(`account-${userId}`)).some((e) => e.type === 'AccountDeleted');
  }

  async append(stream: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    const r = await this.inner.append(stream, await this.sealAll(stream, events), expected);
    await this.erase([{ stream, events }]);
    return r;
  }

  async appendMany(writes: StreamWrite[]): Promise<AppendResult[]> {
    const sealed = await Promise.all(writes.map(async (w) => ({ ...w, events: await this.sealAll(w.stream, w.events) })));
    const r = await this.inner.appendMany(sealed);
    await this.erase(writes);
    return r;
  }

  async readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    const cache = new KeyCache(this.keys);
    const events = await this.inner.readStream(stream, options);
    const out: RecordedEvent[] = [];
    for (const e of events) out.push(await openEvent(cache, e));
    return out;
  }

  streamRevision(stream: string): Promise<number> {
    return this.inner.streamRevision(stream);
  }

  async *readAll(options?: ReadAllOptions): AsyncIterable<RecordedEvent> {
    let cache = new KeyCache(this.keys);
    let n = 0;
    for await (const e of this.inner.readAll(options)) {
      // A fresh cache now and then: a key destroyed meanwhile is noticed within a thousand events.
      if (++n % 1000 === 0) cache = new KeyCache(this.keys);
      yield await openEvent(cache, e);
    }
  }

  headPosition(): Promise<bigint | undefined> {
    return this.inner.headPosition();
  }

  identity(): Promise<string> {
    return this.inner.identity();
  }

  eventIdAt(position: bigint): Promise<string | undefined> {
    return this.inner.eventIdAt(position);
  }

  /**
   * Opens events read from the inner store (personal fields and message content), as `subscribe` would have:
   * for a reader of the inner log that opens only the events it acts on (`SharedLogReader`'s `open`).
   */
  async openEvents(events: readonly RecordedEvent[]): Promise<RecordedEvent[]> {
    const cache = new KeyCache(this.keys);
    const opened: RecordedEvent[] = [];
    for (const e of events) opened.push(await openEvent(cache, e));
    return opened;
  }

  subscribe(options: SubscribeOptions): Subscription {
    return this.inner.subscribe({
      ...options,
      onEvents: async (events) => {
        const cache = new KeyCache(this.keys);
        const opened: RecordedEvent[] = [];
        for (const e of events) opened.push(await openEvent(cache, e));
        // The projector sees every erasing event: it repeats the destruction, which closes the window of a
        // process that appended the event and died before destroying the key.
        if (this.repeatErasures) await this.erase(events.map((e) => ({ stream: e.stream, events: [e] })).filter((w) => ERASING_EVENTS.has(w.events[0]!.type)));
        return options.onEvents(opened);
      },
    });
  }

  stats(): StoreStats {
    return this.inner.stats();
  }

  async close(): Promise<void> {
    await this.inner.close();
    await this.keys.close();
  }
}
