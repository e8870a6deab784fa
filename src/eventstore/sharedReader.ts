/**
 * One reader of the log for the followers of a process (push, previews, the voice enforcer: `followLog`).
 * Each follower used to subscribe to the store on its own: in a worker process of its own every follower read
 * and decoded the same log pages from SQLite (or PostgreSQL, or KurrentDB), polled it, and opened the sealed
 * content of every message (`PersonalDataStore`) once per follower. A `SharedLogReader` holds one subscription
 * to the store and hands each batch it reads to every follower that joined it, each from its own position:
 *
 * - A follower joins with its own exclusive start (`subscribe({ after })`, its checkpoint) and receives only
 *   the events after it, in position order, exactly as from `EventStore.subscribe`: what it already received
 *   is never handed to it again, whatever the others do.
 * - A follower that joins behind the reader's position (a restart after a failed batch, a rewind, a late start)
 *   makes the reader start its one subscription again from the lowest position any follower needs; the others
 *   skip what they already received. Joining at or after the reader's position costs nothing.
 * - A batch is handed to the followers together and the next batch is read once all of them have settled
 *   (back pressure: the slowest follower of the process sets the pace, as one event loop does anyway).
 * - A follower whose batch throws leaves the reader (its `onError` is called, as a failed subscription's would
 *   be); the others go on. A failure of the store's subscription itself ends every follower's.
 * - `onCaughtUp` of a follower is called once the reader has passed the head the log had when it joined.
 *
 * It has the shape of `EventStore.subscribe`, so a follower takes either the store or the process's reader.
 * Given the sealed log and an `open` (as the service does), it opens only the events a follower acts on.
 */
import type { EventStore, RecordedEvent, SubscribeOptions, Subscription } from './port.ts';

/** Before any position: a subscription without `after` starts at the beginning of the log. */
const START = -1n;

interface Member {
  opts: SubscribeOptions;
  /** The last position handed to this follower (or its exclusive start). */
  after: bigint;
  /** The log's head when it joined (START for an empty log): it is caught up once the reader passed it. */
  target: bigint | undefined;
  caughtUp: boolean;
  closed: boolean;
  /** The batch being handed to it. */
  inflight: Promise<void> | undefined;
}

/** What a reader did, for tests and benchmarks. */
export interface SharedReaderStats {
  /** Subscriptions opened on the store (1 while nobody joins behind the reader). */
  subscriptions: number;
  /** Batches read from the store (each handed to every follower that wanted part of it). */
  batches: number;
  /** Events read from the store. */
  events: number;
}

/** One subscription to the log, shared by the followers of a process. */
export class SharedLogReader {
  readonly #store: EventStore;
  readonly #batchSize: number | undefined;
  /** Followers the running subscription hands batches to. */
  readonly #active = new Set<Member>();
  #sub: Subscription | undefined;
  /** Marks the running subscription: calls of one stopped meanwhile are ignored. */
  #token: object | undefined;
  /** The last position the running subscription read (or its exclusive start). */
  #cur = START;
  /** Joins and restarts, one at a time. */
  #ops: Promise<void> = Promise.resolve();
  readonly #stats: SharedReaderStats = { subscriptions: 0, batches: 0, events: 0 };

  /**
   * `store`: the log to read. `open`: when `store` is the sealed log under a `PersonalDataStore`, opens the
   * events a follower acts on (its `wants`), so that the rest (on a busy log most messages: no push, no preview)
   * are never decrypted; the followers then see sealed events in `wants` (only the fields they filter on, none
   * of them sealed) and opened ones in their `onEvents` (`followLog` calls `open`).
   */
  constructor(store: EventStore, opts: { batchSize?: number; open?: (events: readonly RecordedEvent[]) => Promise<RecordedEvent[]> } = {}) {
    this.#store = store;
    this.#batchSize = opts.batchSize;
    if (opts.open) this.open = opts.open;
  }

  /** Opens the events a follower acts on (see the constructor); absent when the reader reads opened events. */
  readonly open?: (events: readonly RecordedEvent[]) => Promise<RecordedEvent[]>;

  /** Joins the reader: `options` as for `EventStore.subscribe` (its `batchSize` is the reader's). */
  subscribe(options: SubscribeOptions): Subscription {
    const m: Member = { opts: options, after: options.after ?? START, target: undefined, caughtUp: false, closed: false, inflight: undefined };
    this.#serially(() => this.#join(m)).catch((err: unknown) => this.#fail(m, err));
    return {
      close: async () => {
        if (m.closed) return;
        m.closed = true;
        this.#active.delete(m);
        await m.inflight;
        await this.#serially(async () => {
          if (this.#active.size === 0) await this.#stop();
        });
      },
    };
  }

  stats(): SharedReaderStats {
    return { ...this.#stats };
  }

  /** Runs `fn` after every join or restart asked before it. */
  #serially(fn: () => Promise<void>): Promise<void> {
    const run = this.#ops.then(fn);
    this.#ops = run.catch(() => {});
    return run;
  }

  async #join(m: Member): Promise<void> {
    if (m.closed) return;
    const head = await this.#store.headPosition();
    m.target = head ?? START;
    if (m.closed) return;
    if (this.#sub && m.after >= this.#cur) {
      // The running subscription has not read past this follower's start: it takes the next batches from here.
      this.#active.add(m);
      this.#caughtUpCheck(m);
      return;
    }
    // The reader is past this follower's start (or not reading): read again from the lowest start anybody needs.
    await this.#stop();
    if (m.closed) return;
    this.#active.add(m);
    this.#start();
    this.#caughtUpCheck(m);
  }

  /** Opens the subscription from the lowest position the followers need. */
  #start(): void {
    let from: bigint | undefined;
    for (const m of this.#active) if (from === undefined || m.after < from) from = m.after;
    if (from === undefined) return;
    this.#cur = from;
    this.#stats.subscriptions++;
    const token = {};
    this.#token = token;
    const mine = () => this.#token === token;
    this.#sub = this.#store.subscribe({
      ...(from !== START ? { after: from } : {}),
      ...(this.#batchSize !== undefined ? { batchSize: this.#batchSize } : {}),
      onEvents: (events) => (mine() ? this.#deliver(events) : undefined),
      onCaughtUp: () => {
        if (!mine()) return;
        for (const m of this.#active) this.#caughtUp(m);
      },
      onError: (err) => {
        if (!mine()) return;
        this.#sub = undefined;
        this.#token = undefined;
        const members = [...this.#active];
        this.#active.clear();
        for (const m of members) this.#fail(m, err);
      },
    });
  }

  async #stop(): Promise<void> {
    const sub = this.#sub;
    this.#sub = undefined;
    this.#token = undefined;
    await sub?.close();
  }

  async #deliver(events: RecordedEvent[]): Promise<void> {
    if (events.length === 0) return;
    this.#stats.batches++;
    this.#stats.events += events.length;
    const last = events[events.length - 1]!.position;
    this.#cur = last;
    const handed: Array<Promise<void>> = [];
    for (const m of [...this.#active]) {
      if (m.closed || m.after >= last) continue;
      const first = events.findIndex((e) => e.position > m.after);
      const slice = first <= 0 ? events : events.slice(first);
      const run = (async () => {
        try {
          await m.opts.onEvents(slice);
          m.after = last;
        } catch (err) {
          this.#active.delete(m);
          this.#fail(m, err);
        } finally {
          m.inflight = undefined;
        }
      })();
      m.inflight = run;
      handed.push(run);
    }
    await Promise.all(handed);
    for (const m of this.#active) this.#caughtUpCheck(m);
  }

  #caughtUpCheck(m: Member): void {
    if (m.target !== undefined && m.after >= m.target && this.#cur >= m.target) this.#caughtUp(m);
  }

  #caughtUp(m: Member): void {
    if (m.caughtUp || m.closed) return;
    m.caughtUp = true;
    m.opts.onCaughtUp?.();
  }

  #fail(m: Member, err: unknown): void {
    if (m.closed) return;
    m.closed = true;
    this.#active.delete(m);
    m.opts.onError?.(err instanceof Error ? err : new Error(String(err)));
  }
}
