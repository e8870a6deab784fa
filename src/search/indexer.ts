/**
 * The search indexer (projector role): follows the event log from the index's own checkpoint and applies each
 * batch to the SQLite index in one transaction with the new checkpoint (`SearchIndex.applyBatch`), so a crash
 * never applies an event twice or skips one. One indexer per index file writes at a time: it holds a lease in
 * the file itself (renewed every third of `leaseMs`); another process with the projector role on the same
 * machine waits and takes over when the lease expires. If the checkpoint moved under it anyway (its lease
 * lapsed during a stall), the batch rolls back and the indexer starts over from the stored checkpoint.
 *
 * A rebuild is the same code from an empty index: `npm run rebuild:search` empties the file's tables and its
 * checkpoint in one transaction; the running indexer sees its checkpoint gone at its next check and replays
 * the log from zero (with no indexer running, the command replays it itself). `rebuildSearchIndex` builds a
 * fresh file from zero (tests compare it with the live one).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { EventStore, RecordedEvent, Subscription } from '../eventstore/port.ts';
import { upcast } from '../domain/events.ts';
import { SearchCheckpointMoved, SearchIndex } from './index.ts';

/** How long live events are gathered before they are written in one transaction (ms). */
const GATHER_MS = 25;

/** Options of the indexer. */
export interface SearchIndexerOptions {
  store: EventStore;
  /** Path of the index file (`DATA_DIR/search.sqlite`). */
  file: string;
  log: Logger;
  /** Lease time-to-live (ms, default 10 000). */
  leaseMs?: number;
  /** Events per batch (default 1000). */
  batchSize?: number;
  /** The lease holder's name (default: a new UUID); a restarted indexer thread keeps its predecessor's. */
  holder?: string;
  /** Called when this indexer takes the lease and starts writing (true) or stops writing (false). */
  onActive?: (active: boolean) => void;
}

/** The running indexer. */
export class SearchIndexer {
  private readonly o: SearchIndexerOptions;
  private readonly holder: string;
  private index: SearchIndex | undefined;
  private sub: Subscription | undefined;
  /** Writes the events gathered but not yet written (set while following). */
  private flushPending: (() => void) | undefined;
  private checkpoint: bigint | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Checking the checkpoint before following (the next tick must not start a second subscription). */
  private starting = false;
  private checking = false;
  private caughtUpResolve!: () => void;
  /** Resolves once this indexer has applied everything that existed when it took the lease. */
  readonly caughtUp: Promise<void>;

  constructor(o: SearchIndexerOptions) {
    this.o = o;
    this.holder = o.holder ?? randomUUID();
    this.caughtUp = new Promise((r) => (this.caughtUpResolve = r));
  }

  /** Opens the file and starts trying for the lease. */
  start(): void {
    this.index = new SearchIndex(this.o.file);
    const leaseMs = this.o.leaseMs ?? 10_000;
    this.tick();
    this.timer = setInterval(() => this.tick(), Math.max(100, Math.floor(leaseMs / 3)));
    this.timer.unref();
  }

  /** Whether this process writes the index now. */
  get active(): boolean {
    return this.sub !== undefined;
  }

  private tick(): void {
    if (this.stopped || !this.index) return;
    let held: boolean;
    try {
      held = this.index.lease(this.holder, Date.now(), this.o.leaseMs ?? 10_000);
    } catch (err) {
      this.o.log.warn({ err }, 'search index lease check failed');
      return;
    }
    if (held && this.sub && this.index.checkpoint() !== this.checkpoint) {
      // Emptied by `npm run rebuild:search` (or moved by another writer): start over from the stored checkpoint.
      this.o.log.warn({ stored: this.index.checkpoint()?.toString(), mine: this.checkpoint?.toString() }, 'search checkpoint moved; following the log from it');
      void this.unfollow().then(() => this.tick());
      return;
    }
    if (held && this.sub) void this.checkAnchor();
    if (held && !this.sub) this.follow();
    else if (!held && this.sub) {
      this.o.log.warn('search index lease lost; another indexer writes now');
      void this.unfollow();
    }
  }

  /**
   * Whether the log still holds the event the index's checkpoint points at; if not (a restored backup, a failed-over
   * store: the log went back in time) the index is emptied and rebuilt from the log as it is.
   */
  private async anchorHolds(index: SearchIndex): Promise<boolean> {
    const cp = index.checkpoint();
    const id = index.checkpointEvent();
    if (cp === undefined || id === undefined) return true;
    const found = await this.o.store.eventIdAt(cp);
    if (found === id || this.index !== index || this.stopped) return true;
    this.o.log.error({ checkpoint: cp.toString(), expected: id, found: found ?? null }, 'the event log went back in time: rebuilding the search index from the log as it is');
    index.reset();
    return false;
  }

  /** Checks the running indexer's checkpoint against the log (one read per lease renewal). */
  private async checkAnchor(): Promise<void> {
    if (this.checking || !this.index) return;
    this.checking = true;
    try {
      // A reset makes the next tick see the checkpoint moved, and start over from zero.
      await this.anchorHolds(this.index);
    } catch (err) {
      this.o.log.warn({ err }, 'search checkpoint check failed');
    } finally {
      this.checking = false;
    }
  }

  private follow(): void {
    if (this.starting) return;
    this.starting = true;
    const index = this.index!;
    this.anchorHolds(index).then(
      () => {
        this.starting = false;
        if (!this.stopped && !this.sub && this.index === index) this.subscribe(index);
      },
      (err: unknown) => {
        this.starting = false;
        this.o.log.warn({ err }, 'search checkpoint check failed; trying again');
      },
    );
  }

  private subscribe(index: SearchIndex): void {
    this.checkpoint = index.checkpoint();
    this.o.log.info({ checkpoint: this.checkpoint?.toString() }, 'search indexer following the log');
    // Live events come a few at a time (each group commit of the log): they are gathered for a moment and
    // written in one transaction, instead of one transaction per commit. Events gathered but not written when
    // the process dies are read again from the log (the index's own checkpoint has not passed them).
    let pending: RecordedEvent[] = [];
    let timer: NodeJS.Timeout | undefined;
    this.o.onActive?.(true);
    const fail = (err: unknown) => {
      if (timer) clearTimeout(timer);
      timer = undefined;
      pending = [];
      if (err instanceof SearchCheckpointMoved) this.o.log.warn({ err: err.message }, 'search checkpoint moved; starting over from it');
      else this.o.log.error({ err }, 'search indexer failed; starting over');
      void this.unfollow().then(() => {
        if (!this.stopped) setTimeout(() => this.tick(), 200).unref();
      });
    };
    const write = () => {
      if (timer) clearTimeout(timer);
      timer = undefined;
      if (pending.length === 0 || this.stopped || this.index !== index) return;
      const events = pending;
      pending = [];
      try {
        this.checkpoint = index.applyBatch(events, this.checkpoint, upcast);
      } catch (err) {
        fail(err);
      }
    };
    this.flushPending = write;
    this.sub = this.o.store.subscribe({
      ...(this.checkpoint !== undefined ? { after: this.checkpoint } : {}),
      batchSize: this.o.batchSize ?? 1000,
      onEvents: (events) => {
        if (this.stopped) return;
        for (const e of events) pending.push(e);
        if (pending.length >= (this.o.batchSize ?? 1000)) write();
        else timer ??= setTimeout(write, GATHER_MS);
      },
      onCaughtUp: () => {
        write();
        this.caughtUpResolve();
      },
      onError: fail,
    });
  }

  private async unfollow(): Promise<void> {
    const sub = this.sub;
    this.sub = undefined;
    if (sub) this.o.onActive?.(false);
    await sub?.close();
    // What was gathered is written before the file is let go (read again from the log otherwise).
    this.flushPending?.();
    this.flushPending = undefined;
  }

  /** Stops following, gives the lease up and closes the file. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.unfollow();
    try {
      this.index?.release(this.holder);
    } catch {
      /* the file is going away with the process */
    }
    this.index?.close();
    this.index = undefined;
  }
}

/** Builds an index from position 0 into `file` (which must be empty or new) and resolves when it caught up. */
export async function rebuildSearchIndex(store: EventStore, file: string, batchSize = 1000): Promise<SearchIndex> {
  const index = new SearchIndex(file);
  let checkpoint = index.checkpoint();
  if (checkpoint !== undefined) throw new Error(`${file} is not empty (checkpoint ${checkpoint})`);
  await new Promise<void>((resolve, reject) => {
    const sub = store.subscribe({
      batchSize,
      onEvents: (events) => {
        checkpoint = index.applyBatch(events, checkpoint, upcast);
      },
      onCaughtUp: () => void sub.close().then(resolve),
      onError: reject,
    });
  });
  return index;
}
