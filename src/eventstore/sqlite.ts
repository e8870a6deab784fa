/**
 * The embedded event store: one SQLite file (better-sqlite3 12.x, WAL, synchronous=FULL).
 *
 * Group commit: every append issued during one turn of the event loop is queued and written by a single
 * `BEGIN IMMEDIATE … COMMIT` (one fsync). The transaction runs on a writer thread (`sqliteWriter.ts`, its own
 * connection) so the main thread keeps serving while the disk syncs; appends arriving while a commit is in
 * flight form the next group. An append resolves only once its COMMIT has returned. Each queued append is
 * checked against the revisions as they stand inside that transaction, so appends in the same group see each
 * other. Several processes may open the same file: SQLite serialises their write transactions, and the
 * global position (the rowid) is assigned inside them, so positions become visible in order. Reads stay on
 * a main-thread connection (a WAL reader sees every committed transaction).
 *
 * Subscriptions poll the table from their checkpoint; an append in this process (or `wake()`, which the
 * composition root calls when another process announces a commit) wakes them at once. After a commit of this
 * process, a subscription whose checkpoint is the position just before the group's first row (nothing of
 * another process in between) is handed the group's events directly instead of reading them back.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
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
import type { FromWriter, ToWriter, WriterFailure, WriterInit, WriterWrite } from './sqliteWriter.ts';
import { validateEvents, validateWrites } from './validate.ts';

/** Options of the SQLite store. */
export interface SqliteStoreOptions {
  /** How often an idle subscription looks for events appended by other processes (ms, default 50). */
  pollIntervalMs?: number;
  /** Called after every commit with the last position written (used to notify other processes). */
  onCommit?: (position: bigint) => void;
  /**
   * Injected fault for tests: runs on the main thread while the writer holds the group's transaction open,
   * before COMMIT; a throw or rejection rolls the group back and rejects its appends.
   */
  beforeCommit?: () => Promise<void> | void;
  /** Injected slowness for tests: the writer thread sleeps this long inside each transaction (ms). */
  writerDelayMs?: number;
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

interface Pending {
  writes: WriterWrite[];
  resolve: (r: AppendResult[]) => void;
  reject: (e: unknown) => void;
}

/** A group commit handed to the writer and not answered yet. */
interface InFlight {
  batch: Pending[];
  done: (m: FromWriter & { kind: 'committed' | 'failed' }) => void;
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

/** The most events a subscription keeps handed off but not yet delivered (beyond it, it reads them back). */
const MAX_HANDED_OFF = 5000;

const require = createRequire(import.meta.url);
/** Starts the writer through tsx's synchronous CommonJS hook (much cheaper to start in a thread than the ESM one). */
const WRITER_BOOT = `require(${JSON.stringify(require.resolve('tsx/cjs/api'))}).register();
require(${JSON.stringify(fileURLToPath(new URL('./sqliteWriter.ts', import.meta.url)))});`;

/** SQLite adapter of the event store port. */
export class SqliteEventStore implements EventStore {
  private readonly db: Database.Database;
  private readonly file: string;
  private readonly opts: SqliteStoreOptions;
  // Mutable state lives in one object so that a wrapper made with `Object.create(store)` (tests do) shares
  // it instead of shadowing fields with its own.
  private readonly s: {
    queue: Pending[];
    flushScheduled: boolean;
    closed: boolean;
    closing: Promise<void> | undefined;
    writer: Worker | undefined;
    inFlight: InFlight | undefined;
    drainWaiters: Array<() => void>;
    handedOff: number;
  } = {
    queue: [],
    flushScheduled: false,
    closed: false,
    closing: undefined,
    writer: undefined,
    inFlight: undefined,
    drainWaiters: [],
    handedOff: 0,
  };
  private readonly wakers = new Set<() => void>();
  private readonly taps = new Set<(before: bigint, rows: Row[]) => void>();
  private counters: StoreStats = { appends: 0, commits: 0 };
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
    this.file = file;
    this.opts = opts;
    this.db = new Database(file, { timeout: 10_000 });
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.exec(SCHEMA);
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
    if (this.s.closed) return Promise.reject(new Error('event store is closed'));
    this.counters.appends++;
    let serialised: WriterWrite[];
    try {
      validate();
      // Serialised now: the caller may change its objects once append returns, and the strings are what
      // the hand-off to subscriptions parses.
      serialised = writes.map((w) => ({
        stream: w.stream,
        expected: w.expected,
        events: w.events.map((e): [string, string, string, string] => [
          e.id,
          e.type,
          JSON.stringify(e.data),
          JSON.stringify(e.metadata),
        ]),
      }));
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      this.s.queue.push({ writes: serialised, resolve, reject });
      if (!this.s.flushScheduled && !this.s.inFlight) {
        this.s.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** The writer thread, started on the first append. */
  private startWriter(): Worker {
    if (this.s.writer) return this.s.writer;
    const init: WriterInit = {
      file: this.file,
      hook: this.opts.beforeCommit !== undefined,
      delayMs: this.opts.writerDelayMs ?? 0,
    };
    const worker = new Worker(WRITER_BOOT, { eval: true, execArgv: [], workerData: init });
    worker.on('message', (m: FromWriter) => {
      if (m.kind === 'hook') void this.runHook(worker);
      else this.s.inFlight?.done(m);
    });
    let failure: Error | undefined;
    worker.on('error', (err) => (failure = err));
    worker.on('exit', (code) => {
      if (this.s.writer === worker) this.s.writer = undefined;
      // A writer that dies with a group in flight leaves its outcome unknown: the group fails.
      const lost = failure ?? new Error(`the event store writer exited (code ${code})`);
      this.s.inFlight?.done({ kind: 'failed', failure: { name: lost.name, message: lost.message } });
    });
    worker.unref();
    this.s.writer = worker;
    return worker;
  }

  private async runHook(worker: Worker): Promise<void> {
    let failure: WriterFailure | undefined;
    try {
      await this.opts.beforeCommit?.();
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      failure = { name: e.name, message: e.message };
    }
    worker.postMessage({ kind: 'verdict', ...(failure ? { failure } : {}) } satisfies ToWriter);
  }

  /** Hands every queued append to the writer as one group, unless a group is in flight. */
  private flush(): void {
    this.s.flushScheduled = false;
    if (this.s.inFlight) return;
    const batch = this.s.queue;
    this.s.queue = [];
    if (batch.length === 0) {
      for (const w of this.s.drainWaiters.splice(0)) w();
      return;
    }
    const worker = this.startWriter();
    worker.ref();
    this.s.inFlight = {
      batch,
      done: (m) => {
        this.s.inFlight = undefined;
        if (this.s.writer) this.s.writer.unref();
        this.settle(batch, m);
        this.flush();
      },
    };
    worker.postMessage({ kind: 'commit', appends: batch.map((p) => p.writes) } satisfies ToWriter);
  }

  /** Resolves or rejects a group's appends and hands its events to caught-up subscriptions. */
  private settle(batch: Pending[], m: FromWriter & { kind: 'committed' | 'failed' }): void {
    if (m.kind === 'failed') {
      const err = Object.assign(new Error(m.failure.message), m.failure);
      for (const p of batch) p.reject(err);
      return;
    }
    this.counters.commits++;
    const rows: Row[] = [];
    for (let i = 0; i < batch.length; i++) {
      const o = m.outcomes[i]!;
      const p = batch[i]!;
      if ('conflict' in o) {
        p.reject(new WrongExpectedRevisionError(o.conflict.stream, o.conflict.expected, o.conflict.actual));
        continue;
      }
      // An empty append reports the head at the time of the commit.
      p.resolve(o.ok.map((r) => ({ revision: r.revision, position: BigInt(r.position === 0 ? m.last : r.position) })));
      if (this.taps.size === 0) continue;
      let k = 0;
      for (let j = 0; j < p.writes.length; j++) {
        const w = p.writes[j]!;
        const first = o.ok[j]!.revision - w.events.length + 1;
        w.events.forEach(([id, type, data, metadata], n) => {
          rows.push({ position: o.positions[k++]!, id, stream: w.stream, revision: first + n, type, data, metadata });
        });
      }
    }
    if (m.last > 0) {
      // In position order already: the writer inserts appends in group order.
      const before = BigInt(m.before);
      for (const tap of this.taps) tap(before, rows);
      this.opts.onCommit?.(BigInt(m.last));
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
    while (left > 0 && !this.s.closed) {
      const rows = this.stmt.readAll.all(after, Math.min(1000, left));
      if (rows.length === 0) return;
      for (const r of rows) yield toRecorded(r);
      after = rows[rows.length - 1]!.position;
      left -= rows.length;
    }
  }

  /** Reads a page of the log synchronously (for subscriptions and bulk tools). */
  readPage(after: bigint | undefined, limit: number): RecordedEvent[] {
    return this.stmt.readAll.all(after === undefined ? 0 : Number(after), limit).map(toRecorded);
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
    // `after`: the last position handed to onEvents; `handedOff`: events this process committed right after
    // it (or after the last of them), waiting to be delivered without reading them back.
    let after = options.after ?? 0n;
    let handedOff: Row[] = [];
    let stopped = false;
    let wake: (() => void) | undefined;
    let timer: NodeJS.Timeout | undefined;
    const tap = (before: bigint, rows: Row[]) => {
      const last = handedOff.length > 0 ? BigInt(handedOff[handedOff.length - 1]!.position) : after;
      if (last === before && handedOff.length + rows.length <= MAX_HANDED_OFF) handedOff.push(...rows);
    };
    this.taps.add(tap);
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
      while (!stopped && !this.s.closed) {
        let page: RecordedEvent[];
        if (handedOff.length > 0) {
          page = handedOff.splice(0, batchSize).map(toRecorded);
          this.s.handedOff += page.length;
        } else page = this.readPage(after, batchSize);
        if (page.length > 0) {
          after = page[page.length - 1]!.position;
          await options.onEvents(page);
          continue;
        }
        if (!caughtUp) {
          caughtUp = true;
          options.onCaughtUp?.();
        }
        await sleep();
      }
    })()
      .catch((err: unknown) => {
        stopped = true;
        options.onError?.(err instanceof Error ? err : new Error(String(err)));
      })
      .finally(() => {
        this.taps.delete(tap);
        handedOff = [];
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

  /** Events delivered to subscriptions straight from this process's commits, not read back (for tests). */
  handedOff(): number {
    return this.s.handedOff;
  }

  /** Writes the appends still queued, stops the writer thread and closes the file. */
  close(): Promise<void> {
    this.s.closing ??= (async () => {
      this.s.closed = true;
      if (this.s.queue.length > 0 || this.s.inFlight) {
        await new Promise<void>((resolve) => {
          this.s.drainWaiters.push(resolve);
          if (!this.s.inFlight) this.flush();
        });
      }
      this.wake();
      const worker = this.s.writer;
      if (worker) {
        const exited = new Promise((resolve) => worker.once('exit', resolve));
        worker.ref();
        worker.postMessage({ kind: 'close' } satisfies ToWriter);
        await exited;
      }
      this.db.close();
    })();
    return this.s.closing;
  }
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
