/**
 * The embedded event store: one SQLite file (better-sqlite3 12.x, WAL, synchronous=FULL).
 *
 * Group commit: every append issued during one turn of the event loop is queued and written by a single
 * `BEGIN IMMEDIATE … COMMIT` (one fsync) at the next `setImmediate`. While other appends are announced
 * (`expectAppend`: commands still deciding, which append in a later turn), the group is held back for them, at
 * most `commitDelayMs` after its first append, so commands whose decisions end in different turns share one
 * commit (one fsync, one projector batch) instead of taking one each. With nothing announced, a group commits in
 * the next turn as before, so a lone append is never delayed. Each queued append is checked
 * against the revisions as they stand inside that transaction, so appends in the same group see each
 * other. Several processes may open the same file: SQLite serialises their write transactions, and the
 * global position (the rowid) is assigned inside them, so positions become visible in order.
 *
 * Subscriptions poll the table from their checkpoint; an append in this process (or `wake()`, which the
 * composition root calls when another process announces a commit) wakes them at once.
 *
 * The tail this process committed is kept in memory (`RECENT_MAX` events, positions without a gap), so the
 * subscriptions that follow the log live (the projector, the search indexer) read what was just appended
 * without reading it back from the file. Rows another process committed in between break the run: the
 * tail restarts at the next commit, and reads before it go to the file.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
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
} from './port.ts';
import { WrongExpectedRevisionError } from './port.ts';
import { encodeWrites, matchesExpected as matches, validateEvents, validateWrites, type EncodedWrite } from './validate.ts';

/** Options of the SQLite store. */
export interface SqliteStoreOptions {
  /** How often an idle subscription looks for events appended by other processes (ms, default 50). */
  pollIntervalMs?: number;
  /** Called after every commit with the last position written (used to notify other processes). */
  onCommit?: (position: bigint) => void;
  /** Injected fault for tests: runs inside the transaction before COMMIT. */
  beforeCommit?: () => void;
  /**
   * Longest a queued group waits for announced appends (`expectAppend`) before it commits (ms, default 1; 0:
   * never waits).
   */
  commitDelayMs?: number;
}

interface Row {
  position: number;
  id: string;
  stream: string;
  revision: number;
  type: string;
  data: string;
  metadata: string;
}

/** A row this process committed, decoded on the first read (shared by every reader: frozen). */
type RecentRow = Omit<Row, 'position'> & { decoded?: RecordedEvent };

/** At most how many of the newest events this process committed are kept for live readers (at least ¾ of it once full). */
const RECENT_MAX = 4096;

interface Pending {
  writes: EncodedWrite[];
  resolve: (r: AppendResult[]) => void;
  reject: (e: unknown) => void;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS events (
  position INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL,
  stream TEXT NOT NULL,
  revision INTEGER NOT NULL,
  type TEXT NOT NULL,
  data TEXT NOT NULL,
  metadata TEXT NOT NULL,
  UNIQUE (stream, revision)
);
CREATE TABLE IF NOT EXISTS store_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`;

/** SQLite adapter of the event store port. */
export class SqliteEventStore implements EventStore {
  private readonly db: Database.Database;
  private readonly opts: SqliteStoreOptions;
  private queue: Pending[] = [];
  private flushScheduled = false;
  /** Appends announced and not yet made (`expectAppend`). */
  private announced = 0;
  /** The timer holding a queued group back for announced appends (set: the flush waits for it or for `announced` to fall to 0). */
  private holdTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly wakers = new Set<() => void>();
  private counters: StoreStats = { appends: 0, commits: 0 };
  /** The newest events this process committed; `recent[i]` is at position `recentFirst + i`. */
  private recent: RecentRow[] = [];
  private recentFirst = 0;
  private readonly storeId: string;
  private readonly stmt: {
    revision: Database.Statement<[string], { revision: number }>;
    insert: Database.Statement<[string, string, number, string, string, string]>;
    readFwd: Database.Statement<[string, number, number], Row>;
    readBack: Database.Statement<[string, number, number], Row>;
    readAll: Database.Statement<[number, number], Row>;
    head: Database.Statement<[], { position: number | null }>;
    idAt: Database.Statement<[number], { id: string }>;
  };

  constructor(file: string, opts: SqliteStoreOptions = {}) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    this.opts = opts;
    this.db = new Database(file, { timeout: 10_000 });
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.exec(SCHEMA);
    this.db.prepare(`INSERT OR IGNORE INTO store_info (key, value) VALUES ('identity', ?)`).run(`sqlite:${randomUUID()}`);
    this.storeId = this.db.prepare(`SELECT value FROM store_info WHERE key = 'identity'`).pluck().get() as string;
    this.stmt = {
      revision: this.db.prepare('SELECT revision FROM events WHERE stream = ? ORDER BY revision DESC LIMIT 1'),
      insert: this.db.prepare(
        'INSERT INTO events (id, stream, revision, type, data, metadata) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      readFwd: this.db.prepare(
        'SELECT * FROM events WHERE stream = ? AND revision >= ? ORDER BY revision ASC LIMIT ?',
      ),
      readBack: this.db.prepare(
        'SELECT * FROM events WHERE stream = ? AND revision <= ? ORDER BY revision DESC LIMIT ?',
      ),
      readAll: this.db.prepare('SELECT * FROM events WHERE position > ? ORDER BY position ASC LIMIT ?'),
      head: this.db.prepare('SELECT MAX(position) AS position FROM events'),
      idAt: this.db.prepare('SELECT id FROM events WHERE position = ?'),
    };
  }

  append(stream: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    return this.enqueue([{ stream, events, expected }], () => validateEvents(stream, events)).then((r) => r[0]!);
  }

  appendMany(writes: StreamWrite[]): Promise<AppendResult[]> {
    return this.enqueue(writes, () => validateWrites(writes));
  }

  /** Id of the event at a position (read from the file: another process, or a restore, may have written it). */
  async eventIdAt(position: bigint): Promise<string | undefined> {
    if (position <= 0n || position > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
    return this.stmt.idAt.get(Number(position))?.id;
  }

  /** The store's identity (created with the file). */
  async identity(): Promise<string> {
    return this.storeId;
  }

  private enqueue(writes: StreamWrite[], validate: () => void): Promise<AppendResult[]> {
    if (this.closed) return Promise.reject(new Error('event store is closed'));
    this.counters.appends++;
    let encoded: EncodedWrite[];
    try {
      validate();
      // Encoded before it joins a group: a payload JSON cannot hold fails this append only, not its group.
      encoded = encodeWrites(writes);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ writes: encoded, resolve, reject });
      if (this.flushScheduled) return;
      this.flushScheduled = true;
      const delay = this.opts.commitDelayMs ?? 1;
      // Appends are announced: hold the group for them (the last one made, or the deadline, releases it).
      if (this.announced > 0 && delay > 0) this.holdTimer = setTimeout(() => this.release(), delay);
      else setImmediate(() => this.flush());
    });
  }

  expectAppend(): () => void {
    this.announced++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.announced--;
      // Everything announced has been appended (or given up): the held group goes in the next turn.
      if (this.announced === 0 && this.holdTimer) this.release();
    };
  }

  /** Ends a hold: the queued group commits in the next turn (with whatever else this turn appends). */
  private release(): void {
    if (!this.holdTimer) return;
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    setImmediate(() => this.flush());
  }

  /** Writes every queued append in one transaction. */
  private flush(): void {
    this.flushScheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    const outcomes: Array<{ ok: AppendResult[] } | { err: unknown }> = [];
    let last = 0;
    // The rows of this commit, in position order (kept as the in-memory tail once committed).
    const rows: RecentRow[] = [];
    let firstPos = 0;
    let contiguous = true;
    const run = this.db.transaction(() => {
      // Revisions as they stand inside this transaction, including earlier appends of the same group.
      const current = new Map<string, number>();
      const revisionOf = (stream: string): number => {
        let r = current.get(stream);
        if (r === undefined) {
          r = this.stmt.revision.get(stream)?.revision ?? -1;
          current.set(stream, r);
        }
        return r;
      };
      for (const p of batch) {
        let failure: WrongExpectedRevisionError | undefined;
        const seen = new Map<string, number>();
        for (const w of p.writes) {
          const actual = seen.get(w.stream) ?? revisionOf(w.stream);
          if (!matches(w.expected, actual)) {
            failure = new WrongExpectedRevisionError(w.stream, w.expected, actual);
            break;
          }
          seen.set(w.stream, actual + w.events.length);
        }
        if (failure) {
          outcomes.push({ err: failure });
          continue;
        }
        const results: AppendResult[] = [];
        for (const w of p.writes) {
          let rev = revisionOf(w.stream);
          let pos = 0;
          for (const e of w.events) {
            rev++;
            const row: RecentRow = { id: e.id, stream: w.stream, revision: rev, type: e.type, data: e.data, metadata: e.metadata };
            const info = this.stmt.insert.run(row.id, row.stream, row.revision, row.type, row.data, row.metadata);
            pos = Number(info.lastInsertRowid);
            if (rows.length === 0) firstPos = pos;
            // Kept only while the positions run without a gap (they do inside one transaction).
            if (pos === firstPos + rows.length) rows.push(row);
            else contiguous = false;
          }
          current.set(w.stream, rev);
          if (w.events.length === 0) pos = last;
          else last = pos;
          results.push({ revision: rev, position: BigInt(pos) });
        }
        outcomes.push({ ok: results });
      }
      this.opts.beforeCommit?.();
    });
    try {
      run.immediate();
      this.counters.commits++;
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    if (rows.length > 0 && contiguous) this.remember(firstPos, rows);
    else if (!contiguous) this.recent = [];
    for (let i = 0; i < batch.length; i++) {
      const o = outcomes[i]!;
      if ('ok' in o) {
        // An empty append reports the head at the time of the commit.
        for (const r of o.ok) if (r.position === 0n) r.position = BigInt(last);
        batch[i]!.resolve(o.ok);
      } else batch[i]!.reject(o.err);
    }
    if (last > 0) {
      this.opts.onCommit?.(BigInt(last));
      this.wake();
    }
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const max = options.maxCount ?? Number.MAX_SAFE_INTEGER;
    const rows =
      options.direction === 'backwards'
        ? this.stmt.readBack.all(stream, options.fromRevision ?? Number.MAX_SAFE_INTEGER, max)
        : this.stmt.readFwd.all(stream, options.fromRevision ?? 0, max);
    return rows.map(toRecorded);
  }

  async streamRevision(stream: string): Promise<number> {
    return this.stmt.revision.get(stream)?.revision ?? -1;
  }

  async *readAll(options: ReadAllOptions = {}): AsyncIterable<RecordedEvent> {
    let after = options.after === undefined ? 0 : Number(options.after);
    let left = options.maxCount ?? Number.MAX_SAFE_INTEGER;
    while (left > 0 && !this.closed) {
      const rows = this.stmt.readAll.all(after, Math.min(1000, left));
      if (rows.length === 0) return;
      for (const r of rows) yield toRecorded(r);
      after = rows[rows.length - 1]!.position;
      left -= rows.length;
    }
  }

  /** Keeps a commit's rows (positions `first`…, without a gap) as the in-memory tail. */
  private remember(first: number, rows: RecentRow[]): void {
    // Positions run without a gap inside one transaction; another process's commit in between starts a new run.
    if (this.recent.length === 0 || this.recentFirst + this.recent.length !== first) {
      this.recent = rows.slice(-RECENT_MAX);
      this.recentFirst = first + rows.length - this.recent.length;
      return;
    }
    for (const r of rows) this.recent.push(r);
    // Trimmed a quarter at a time, not by the overflow of each commit: one copy per ~1,000 events.
    if (this.recent.length > RECENT_MAX) {
      const over = this.recent.length - (RECENT_MAX - RECENT_MAX / 4);
      this.recent = this.recent.slice(over);
      this.recentFirst += over;
    }
  }

  /** Reads a page of the log synchronously (for subscriptions and bulk tools). */
  readPage(after: bigint | undefined, limit: number): RecordedEvent[] {
    const from = after === undefined ? 0 : Number(after);
    // The next position is in the in-memory tail: read from it (up to its end; the next read goes on from there).
    const i = from + 1 - this.recentFirst;
    if (this.recent.length > 0 && i >= 0 && i < this.recent.length) {
      const end = Math.min(this.recent.length, i + limit);
      const out: RecordedEvent[] = new Array(end - i);
      for (let k = i; k < end; k++) {
        const r = this.recent[k]!;
        out[k - i] = r.decoded ??= deepFreeze(toRecorded({ ...r, position: this.recentFirst + k }));
      }
      return out;
    }
    return this.stmt.readAll.all(from, limit).map(toRecorded);
  }

  async headPosition(): Promise<bigint | undefined> {
    const p = this.stmt.head.get()?.position;
    return p === null || p === undefined ? undefined : BigInt(p);
  }

  /** Wakes idle subscriptions (another process committed). */
  wake(): void {
    for (const w of [...this.wakers]) w();
  }

  subscribe(options: SubscribeOptions): Subscription {
    const batchSize = options.batchSize ?? 500;
    const pollMs = this.opts.pollIntervalMs ?? 50;
    let after = options.after;
    let stopped = false;
    let wake: (() => void) | undefined;
    let timer: NodeJS.Timeout | undefined;
    const sleep = () =>
      new Promise<void>((resolve) => {
        wake = () => {
          if (timer) clearTimeout(timer);
          this.wakers.delete(wake!);
          wake = undefined;
          resolve();
        };
        this.wakers.add(wake);
        timer = setTimeout(wake, pollMs);
      });
    const loop = (async () => {
      let caughtUp = false;
      while (!stopped && !this.closed) {
        const page = this.readPage(after, batchSize);
        if (page.length > 0) {
          await options.onEvents(page);
          after = page[page.length - 1]!.position;
          continue;
        }
        if (!caughtUp) {
          caughtUp = true;
          options.onCaughtUp?.();
        }
        await sleep();
      }
    })().catch((err: unknown) => {
      stopped = true;
      options.onError?.(err instanceof Error ? err : new Error(String(err)));
    });
    return {
      close: async () => {
        stopped = true;
        wake?.();
        await loop;
      },
    };
  }

  stats(): StoreStats {
    return { ...this.counters };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.holdTimer) clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    if (this.queue.length > 0) this.flush();
    this.closed = true;
    this.wake();
    this.db.close();
  }
}

/** Freezes an event read from the in-memory tail: every reader gets the same object, none may change it. */
function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  }
  return v;
}

function toRecorded(r: Row): RecordedEvent {
  return {
    id: r.id,
    stream: r.stream,
    revision: r.revision,
    position: BigInt(r.position),
    type: r.type,
    data: JSON.parse(r.data) as unknown,
    metadata: JSON.parse(r.metadata) as RecordedEvent['metadata'],
  };
}
