/**
 * The embedded event store: one SQLite file (better-sqlite3 12.x, WAL, synchronous=FULL).
 *
 * Group commit on a writer thread: appends are queued, and the appends of one turn of the event loop go to the
 * store's writer thread as one group, written there by a single `BEGIN IMMEDIATE … COMMIT` (one fsync,
 * sqliteCommit.ts). While a group is being committed the next one gathers, and is sent the moment the first is
 * done; an append is answered only once its group is committed. The event loop that serves requests never
 * runs the inserts nor waits on the fsync. Each queued append is checked against the revisions as they stand
 * inside that transaction, so appends in the same group see each other. Several processes may open the same
 * file: SQLite serialises their write transactions, and the global position (the rowid) is assigned inside
 * them, so positions become visible in order. The thread starts with the first append (a process that only
 * reads never starts it) and is started again if it dies; the appends of the group it was writing fail.
 *
 * Reads use this thread's own connection. Subscriptions poll the table from their checkpoint; an append in this
 * process (or `wake()`, which the composition root calls when another process announces a commit) wakes them
 * at once.
 *
 * The tail this process committed is kept in memory (`RECENT_MAX` events, positions without a gap), so the
 * subscriptions that follow the log live (the projector, the search indexer) read what was just appended
 * without reading it back from the file. Rows another process committed in between break the run: the
 * tail restarts at the next commit, and reads before it go to the file.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
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
import { validateEvents, validateWrites } from './validate.ts';
import { EVENTS_SCHEMA, type EncodedWrite, type GroupResult } from './sqliteCommit.ts';
import type { WriterRequest } from './sqliteWriterWorker.ts';

/** Options of the SQLite store. */
export interface SqliteStoreOptions {
  /** How often an idle subscription looks for events appended by other processes (ms, default 50). */
  pollIntervalMs?: number;
  /** Called after every commit with the last position written (used to notify other processes). */
  onCommit?: (position: bigint) => void;
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
  writes: StreamWrite[];
  resolve: (r: AppendResult[]) => void;
  reject: (e: unknown) => void;
}

/**
 * The writer thread's boot: registers tsx's ESM loader in the thread (the `--import tsx` of the process does not
 * reach worker threads), then imports the entry module.
 */
const WRITER_BOOT = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then(({ register }) => {
  register();
  return import(${JSON.stringify(new URL('./sqliteWriterWorker.ts', import.meta.url).href)});
});`;

/** A group sent to the writer thread and not answered yet. */
interface InFlight {
  seq: number;
  batch: Pending[];
  group: EncodedWrite[][];
}

/** What the writer thread answers. */
type WriterReply = { seq: number; result: GroupResult } | { seq: number; error: string };

/** SQLite adapter of the event store port. */
export class SqliteEventStore implements EventStore {
  private readonly db: Database.Database;
  private readonly opts: SqliteStoreOptions;
  private queue: Pending[] = [];
  private flushScheduled = false;
  private closed = false;
  private readonly file: string;
  /** The writer thread (started with the first append) and the group it is committing. */
  private writer: Worker | undefined;
  private inFlight: InFlight | undefined;
  private seq = 0;
  /** Called once nothing is queued or in flight (`close` waits for that). */
  private drained: Array<() => void> = [];
  private readonly wakers = new Set<() => void>();
  private counters: StoreStats = { appends: 0, commits: 0 };
  /** The newest events this process committed; `recent[i]` is at position `recentFirst + i`. */
  private recent: RecentRow[] = [];
  private recentFirst = 0;
  private readonly storeId: string;
  private readonly stmt: {
    revision: Database.Statement<[string], { revision: number }>;
    readFwd: Database.Statement<[string, number, number], Row>;
    readBack: Database.Statement<[string, number, number], Row>;
    readAll: Database.Statement<[number, number], Row>;
    head: Database.Statement<[], { position: number | null }>;
  };

  constructor(file: string, opts: SqliteStoreOptions = {}) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    this.opts = opts;
    this.file = file;
    this.db = new Database(file, { timeout: 10_000 });
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.exec(EVENTS_SCHEMA);
    this.db.prepare(`INSERT OR IGNORE INTO store_info (key, value) VALUES ('identity', ?)`).run(`sqlite:${randomUUID()}`);
    this.storeId = this.db.prepare(`SELECT value FROM store_info WHERE key = 'identity'`).pluck().get() as string;
    this.stmt = {
      revision: this.db.prepare('SELECT revision FROM events WHERE stream = ? ORDER BY revision DESC LIMIT 1'),
      readFwd: this.db.prepare(
        'SELECT * FROM events WHERE stream = ? AND revision >= ? ORDER BY revision ASC LIMIT ?',
      ),
      readBack: this.db.prepare(
        'SELECT * FROM events WHERE stream = ? AND revision <= ? ORDER BY revision DESC LIMIT ?',
      ),
      readAll: this.db.prepare('SELECT * FROM events WHERE position > ? ORDER BY position ASC LIMIT ?'),
      head: this.db.prepare('SELECT MAX(position) AS position FROM events'),
    };
  }

  append(stream: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    return this.enqueue([{ stream, events, expected }], () => validateEvents(stream, events)).then((r) => r[0]!);
  }

  appendMany(writes: StreamWrite[]): Promise<AppendResult[]> {
    return this.enqueue(writes, () => validateWrites(writes));
  }

  /** The store's identity (created with the file). */
  async identity(): Promise<string> {
    return this.storeId;
  }

  private enqueue(writes: StreamWrite[], validate: () => void): Promise<AppendResult[]> {
    if (this.closed) return Promise.reject(new Error('event store is closed'));
    this.counters.appends++;
    try {
      validate();
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ writes, resolve, reject });
      this.schedule();
    });
  }

  /** Sends the queue at the next turn of the event loop, unless a group is in flight (it goes when that one is done). */
  private schedule(): void {
    if (this.flushScheduled || this.inFlight) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  /** Sends every queued append to the writer thread as one group. */
  private flush(): void {
    if (this.inFlight || this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    const group: EncodedWrite[][] = batch.map((p) =>
      p.writes.map((w) => ({ stream: w.stream, expected: w.expected, events: w.events.map((e) => [e.id, e.type, JSON.stringify(e.data), JSON.stringify(e.metadata)]) })),
    );
    const writer = this.startWriter();
    this.inFlight = { seq: ++this.seq, batch, group };
    writer.ref();
    writer.postMessage({ seq: this.seq, group } satisfies WriterRequest);
  }

  /** The writer thread, started when there is none. */
  private startWriter(): Worker {
    if (this.writer) return this.writer;
    const writer = new Worker(WRITER_BOOT, { eval: true, execArgv: [], workerData: { file: this.file } });
    this.writer = writer;
    writer.on('message', (m: WriterReply) => {
      const f = this.inFlight;
      if (!f || m.seq !== f.seq) return;
      this.inFlight = undefined;
      if (!this.queue.length) writer.unref();
      if ('error' in m) for (const p of f.batch) p.reject(new Error(m.error));
      else this.settle(f, m.result);
      this.next();
    });
    const ended = (err: Error) => {
      if (this.writer !== writer) return;
      this.writer = undefined;
      const f = this.inFlight;
      this.inFlight = undefined;
      // Whether that group was committed is unknown to its callers: they get an error, as on a lost connection.
      if (f) for (const p of f.batch) p.reject(err);
      this.next();
    };
    writer.on('error', ended);
    writer.on('exit', (code) => ended(new Error(`the event store's writer thread ended (exit code ${code})`)));
    return writer;
  }

  /** After a group: sends what gathered meanwhile, or tells `close` that all is written. */
  private next(): void {
    if (this.queue.length > 0) this.flush();
    else for (const d of this.drained.splice(0)) d();
  }

  /** Answers the appends of a committed group and keeps its rows as the in-memory tail. */
  private settle(f: InFlight, r: GroupResult): void {
    this.counters.commits++;
    if (r.rows > 0 && r.contiguous) {
      const rows: RecentRow[] = [];
      f.group.forEach((writes, i) => {
        const o = r.outcomes[i]!;
        if (!('ok' in o)) return;
        writes.forEach((w, j) => {
          const first = o.ok[j]![0] - w.events.length + 1;
          w.events.forEach(([id, type, data, metadata], k) => rows.push({ id, stream: w.stream, revision: first + k, type, data, metadata }));
        });
      });
      this.remember(r.first, rows);
    } else if (!r.contiguous) this.recent = [];
    f.batch.forEach((p, i) => {
      const o = r.outcomes[i]!;
      // An empty append reports the head at the time of the commit.
      if ('ok' in o) p.resolve(o.ok.map(([revision, position]) => ({ revision, position: BigInt(position === 0 ? r.last : position) })));
      else p.reject(new WrongExpectedRevisionError(...o.conflict));
    });
    if (r.last > 0) {
      this.opts.onCommit?.(BigInt(r.last));
      this.wake();
    }
  }

  /**
   * Fault injection for tests: the writer thread's next commits fail with `message` inside the transaction,
   * before COMMIT (null: no more); `exit` ends the thread there, as a crash would.
   */
  injectCommitFault(message: string | null): void {
    this.startWriter().postMessage({ fault: message } satisfies WriterRequest);
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

  /** Writes what is queued, stops the writer thread and closes the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.inFlight || this.queue.length > 0) {
      await new Promise<void>((resolve) => {
        this.drained.push(resolve);
        if (!this.inFlight) this.flush();
      });
    }
    const writer = this.writer;
    this.writer = undefined;
    if (writer) {
      const exited = new Promise((r) => writer.once('exit', r));
      writer.ref();
      writer.postMessage('close' satisfies WriterRequest);
      await exited;
    }
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
