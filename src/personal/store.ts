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
import { isSealed, open, seal } from './cipher.ts';
import { heldUsersNow } from '../compliance/holdLog.ts';
import { ERASING_EVENTS, PERSONAL_FIELDS, RELEASING_EVENTS } from './fields.ts';
import type { KeyStore } from './keyStore.ts';

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

/** Opens the personal fields of one recorded event (erased fields are left out). */
async function openEvent(cache: KeyCache, e: RecordedEvent): Promise<RecordedEvent> {
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

/** The boundary. `inner` is the store as it is on disk (for migration and adapter-specific calls). */
export class PersonalDataStore implements EventStore {
  constructor(
    readonly inner: EventStore,
    readonly keys: KeyStore,
  ) {}

  private async sealAll(stream: string, events: NewEvent[]): Promise<NewEvent[]> {
    return Promise.all(events.map((e) => sealEvent(this.keys, stream, e)));
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
        held ??= await heldUsersNow(this.inner);
        if (held.has(subject)) {
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

  subscribe(options: SubscribeOptions): Subscription {
    return this.inner.subscribe({
      ...options,
      onEvents: async (events) => {
        const cache = new KeyCache(this.keys);
        const opened: RecordedEvent[] = [];
        for (const e of events) opened.push(await openEvent(cache, e));
        // The projector sees every erasing event: it repeats the destruction, which closes the window of a
        // process that appended the event and died before destroying the key.
        await this.erase(events.map((e) => ({ stream: e.stream, events: [e] })).filter((w) => ERASING_EVENTS.has(w.events[0]!.type)));
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
