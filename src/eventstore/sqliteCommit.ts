/**
 * The SQLite store's write side: one group of appends in one `BEGIN IMMEDIATE … COMMIT` (one fsync). It runs
 * on the store's writer thread (sqliteWriterWorker.ts), so neither the commit's CPU nor its fsync holds the
 * event loop that serves requests; this module is only the transaction, kept free of thread plumbing.
 *
 * Each append of a group is checked against the revisions as they stand inside the transaction, so appends of
 * the same group see each other; a conflict fails only its own append. Several processes may write the same
 * file: SQLite serialises their write transactions and assigns the global position (the rowid) inside them.
 */
import Database from 'better-sqlite3';
import type { ExpectedRevision } from './port.ts';
import { matchesExpected } from './validate.ts';

/** One event as the writer stores it: id, type, and data and metadata as JSON text. */
export type EncodedEvent = [id: string, type: string, data: string, metadata: string];

/** One stream's part of an append. */
export interface EncodedWrite {
  stream: string;
  expected: ExpectedRevision;
  events: EncodedEvent[];
}

/** What became of one append of a group. */
export type AppendOutcome =
  /** Written: per stream write, the stream's revision after it and the position of its last event (0: none). */
  | { ok: Array<[revision: number, position: number]> }
  /** Refused: the first stream whose expected revision did not hold, nothing of the append written. */
  | { conflict: [stream: string, expected: ExpectedRevision, actual: number] };

/** What a committed group reports. */
export interface GroupResult {
  outcomes: AppendOutcome[];
  /** Position of the first row written (0: none). */
  first: number;
  /** Rows written; `contiguous` says whether their positions run without a gap from `first`. */
  rows: number;
  contiguous: boolean;
  /** Position of the last row written (0: none). */
  last: number;
}

export const EVENTS_SCHEMA = `
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

/** Opens a connection for writing groups; `commit` writes one group, `close` lets the file go. */
export function openGroupWriter(file: string): { commit: (group: EncodedWrite[][], beforeCommit?: () => void) => GroupResult; close: () => void } {
  const db = new Database(file, { timeout: 10_000 });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  const revision = db.prepare<[string], { revision: number }>('SELECT revision FROM events WHERE stream = ? ORDER BY revision DESC LIMIT 1');
  const insert = db.prepare<[string, string, number, string, string, string]>('INSERT INTO events (id, stream, revision, type, data, metadata) VALUES (?, ?, ?, ?, ?, ?)');
  const commit = (group: EncodedWrite[][], beforeCommit?: () => void): GroupResult => {
    const result: GroupResult = { outcomes: [], first: 0, rows: 0, contiguous: true, last: 0 };
    db.transaction(() => {
      // Revisions as they stand inside this transaction, including earlier appends of the same group.
      const current = new Map<string, number>();
      const revisionOf = (stream: string): number => {
        let r = current.get(stream);
        if (r === undefined) {
          r = revision.get(stream)?.revision ?? -1;
          current.set(stream, r);
        }
        return r;
      };
      for (const writes of group) {
        let conflict: [string, ExpectedRevision, number] | undefined;
        const seen = new Map<string, number>();
        for (const w of writes) {
          const actual = seen.get(w.stream) ?? revisionOf(w.stream);
          if (!matchesExpected(w.expected, actual)) {
            conflict = [w.stream, w.expected, actual];
            break;
          }
          seen.set(w.stream, actual + w.events.length);
        }
        if (conflict) {
          result.outcomes.push({ conflict });
          continue;
        }
        const ok: Array<[number, number]> = [];
        for (const w of writes) {
          let rev = revisionOf(w.stream);
          let pos = 0;
          for (const [id, type, data, metadata] of w.events) {
            rev++;
            pos = Number(insert.run(id, w.stream, rev, type, data, metadata).lastInsertRowid);
            if (result.rows === 0) result.first = pos;
            else if (pos !== result.first + result.rows) result.contiguous = false;
            result.rows++;
            result.last = pos;
          }
          current.set(w.stream, rev);
          ok.push([rev, pos]);
        }
        result.outcomes.push({ ok });
      }
      beforeCommit?.();
    }).immediate();
    return result;
  };
  return { commit, close: () => db.close() };
}
