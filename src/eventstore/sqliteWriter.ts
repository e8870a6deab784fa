/**
 * The SQLite store's writer thread (see `sqlite.ts`): owns its own better-sqlite3 connection and runs each
 * group commit's `BEGIN IMMEDIATE … COMMIT` (and so its fsync) off the main thread.
 *
 * It is loaded through tsx's CommonJS hook by a small `eval` bootstrap, so it must not use top-level
 * await or `import.meta`. The main thread sends one `commit` at a time and waits for its answer.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { ExpectedRevision } from './port.ts';
import { matchesExpected } from './validate.ts';

/** What the writer is started with. */
export interface WriterInit {
  file: string;
  /** Ask the main thread (`hook` message) before every COMMIT; a refusal rolls the group back. */
  hook: boolean;
  /** Injected slowness for tests: the thread sleeps this long inside the transaction before COMMIT (ms). */
  delayMs: number;
}

/** One stream's part of an append, its events already serialised: [id, type, data JSON, metadata JSON]. */
export interface WriterWrite {
  stream: string;
  expected: ExpectedRevision;
  events: Array<[string, string, string, string]>;
}

/** Messages from the main thread. */
export type ToWriter =
  | { kind: 'commit'; appends: WriterWrite[][] }
  | { kind: 'verdict'; failure?: WriterFailure }
  | { kind: 'close' };

/** The outcome of one append of a group. */
export type WriterOutcome =
  | { ok: Array<{ revision: number; position: number }>; positions: number[] }
  | { conflict: { stream: string; expected: ExpectedRevision; actual: number } };

/** An error as it crosses the thread boundary. */
export interface WriterFailure {
  name: string;
  message: string;
  code?: string;
}

/** Messages from the writer. */
export type FromWriter =
  | { kind: 'committed'; outcomes: WriterOutcome[]; before: number; last: number }
  | { kind: 'failed'; failure: WriterFailure }
  | { kind: 'hook' };

const port = parentPort!;
const init = workerData as WriterInit;
const db = new Database(init.file, { timeout: 10_000 });
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
const revisionOf = db.prepare<[string], { revision: number }>(
  'SELECT revision FROM events WHERE stream = ? ORDER BY revision DESC LIMIT 1',
);
const head = db.prepare<[], { position: number | null }>('SELECT MAX(position) AS position FROM events');
const insert = db.prepare<[string, string, number, string, string, string]>(
  'INSERT INTO events (id, stream, revision, type, data, metadata) VALUES (?, ?, ?, ?, ?, ?)',
);
const begin = db.prepare('BEGIN IMMEDIATE');
const commitStmt = db.prepare('COMMIT');
const rollback = db.prepare('ROLLBACK');
let verdict: ((failure: WriterFailure | undefined) => void) | undefined;

/** Checks and inserts every append of a group; appends in the group see each other. */
function write(appends: WriterWrite[][]): { outcomes: WriterOutcome[]; last: number } {
  const current = new Map<string, number>();
  const revision = (stream: string): number => {
    let r = current.get(stream);
    if (r === undefined) {
      r = revisionOf.get(stream)?.revision ?? -1;
      current.set(stream, r);
    }
    return r;
  };
  const outcomes: WriterOutcome[] = [];
  let last = 0;
  for (const writes of appends) {
    let conflict: { stream: string; expected: ExpectedRevision; actual: number } | undefined;
    const seen = new Map<string, number>();
    for (const w of writes) {
      const actual = seen.get(w.stream) ?? revision(w.stream);
      if (!matchesExpected(w.expected, actual)) {
        conflict = { stream: w.stream, expected: w.expected, actual };
        break;
      }
      seen.set(w.stream, actual + w.events.length);
    }
    if (conflict) {
      outcomes.push({ conflict });
      continue;
    }
    const ok: Array<{ revision: number; position: number }> = [];
    const positions: number[] = [];
    for (const w of writes) {
      let rev = revision(w.stream);
      let pos = 0;
      for (const [id, type, data, metadata] of w.events) {
        rev++;
        pos = Number(insert.run(id, w.stream, rev, type, data, metadata).lastInsertRowid);
        positions.push(pos);
      }
      current.set(w.stream, rev);
      if (w.events.length === 0) pos = last;
      else last = pos;
      ok.push({ revision: rev, position: pos });
    }
    outcomes.push({ ok, positions });
  }
  return { outcomes, last };
}

async function commit(appends: WriterWrite[][]): Promise<void> {
  try {
    begin.run();
    const before = head.get()?.position ?? 0;
    const { outcomes, last } = write(appends);
    if (init.delayMs > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, init.delayMs);
    if (init.hook) {
      const failure = await new Promise<WriterFailure | undefined>((resolve) => {
        verdict = resolve;
        port.postMessage({ kind: 'hook' } satisfies FromWriter);
      });
      if (failure) throw Object.assign(new Error(failure.message), failure);
    }
    commitStmt.run();
    port.postMessage({ kind: 'committed', outcomes, before, last } satisfies FromWriter);
  } catch (error) {
    if (db.inTransaction) rollback.run();
    const e = error instanceof Error ? error : new Error(String(error));
    const code = (e as { code?: unknown }).code;
    port.postMessage({
      kind: 'failed',
      failure: { name: e.name, message: e.message, ...(typeof code === 'string' ? { code } : {}) },
    } satisfies FromWriter);
  }
}

port.on('message', (m: ToWriter) => {
  if (m.kind === 'commit') void commit(m.appends);
  else if (m.kind === 'verdict') {
    const v = verdict;
    verdict = undefined;
    v?.(m.failure);
  } else {
    db.close();
    process.exit(0);
  }
});
