/**
 * The erasure record: an append-only file of the data subjects whose keys were destroyed (accounts deleted) — and
 * of accounts deleted while a legal hold kept their keys (`held`) — kept
 * outside the key store — `DATA_DIR/erasures.jsonl` by default, `ERASURE_LOG` to keep it elsewhere (beside the
 * backups). A restore brings back the key store as it was at the backup; this record says which keys were
 * destroyed since, and the restore destroys them again (and re-appends the deletions the restored log lacks), so
 * a deleted account never comes back with its personal data.
 */
import fs from 'node:fs';
import path from 'node:path';

/** One line of the record. */
export interface Erasure {
  /** The data subject (an account id). */
  subject: string;
  /** ISO-8601 time its key was destroyed (or, with `held`, the account deleted). */
  at: string;
  /**
   * The account was deleted while a legal hold kept its key: a restore re-applies the deletion and keeps the
   * key (unless the record also holds a destruction of that subject, which wins).
   */
  held?: true;
}

/** Appends one erasure (fsynced: it must outlive the key it records). */
export function recordErasure(file: string, e: Erasure): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const fd = fs.openSync(file, 'a');
  try {
    fs.writeSync(fd, `${JSON.stringify(e)}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Reads the record (a missing file is empty; a torn last line, from a crash mid-write, is skipped). */
export function readErasures(file: string): Erasure[] {
  if (!fs.existsSync(file)) return [];
  const out: Erasure[] = [];
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      const e = JSON.parse(line) as Erasure;
      if (typeof e.subject === 'string' && typeof e.at === 'string') out.push(e.held === true ? { subject: e.subject, at: e.at, held: true } : { subject: e.subject, at: e.at });
    } catch {
      /* torn line */
    }
  }
  return out;
}

/** Records a held account's deletion (its key kept), once per subject. */
export function recordHeldDeletion(file: string, subject: string): void {
  if (readErasures(file).some((e) => e.subject === subject && e.held)) return;
  recordErasure(file, { subject, at: new Date().toISOString(), held: true });
}

const lineKey = (e: Erasure) => `${e.subject}${e.held ? '|held' : ''}`;

/** Appends to `file` the erasures of `others` it does not hold yet (by subject and kind); returns the union. */
export function mergeErasures(file: string, others: readonly Erasure[]): Erasure[] {
  const have = readErasures(file);
  const seen = new Set(have.map(lineKey));
  for (const e of others) {
    if (seen.has(lineKey(e))) continue;
    seen.add(lineKey(e));
    recordErasure(file, e);
    have.push(e);
  }
  return have;
}
