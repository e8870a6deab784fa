/**
 * The message search index: a projection of the event log into a SQLite file (`DATA_DIR/search.sqlite`)
 * with an FTS5 full-text table, kept by the indexer (`indexer.ts`, projector role) and read by the search
 * route (API role, same machine).
 *
 * Tables:
 * - `doc(rowid, message_id, channel, pinned)`: one row per live message. The rowid is the message id's time
 *   (ULID milliseconds) × 2^20 plus the order of arrival within that millisecond, so rowid order is id order
 *   (but for messages of one millisecond sent by different processes) and `before` / `after` cursors become
 *   rowid ranges FTS5 seeks to; ids are given in log order, so a rebuild gives every message the same rowid.
 *   Partial index on pinned rows per channel: the pinned list never walks the channel.
 * - `fts(channel, body)`: contentless FTS5 (`contentless_delete=1`, so edits and deletions remove the old
 *   text by rowid) with `unicode61 remove_diacritics 2`; `channel` holds the channel id as a token, so a
 *   search is the intersection of the channel's and the words' posting lists — never a scan of the channel.
 * - `gone_channel(channel)`: deleted channels (a message appended while its channel was being deleted lands
 *   after the deletion and is not indexed, as the messages projection drops it).
 * - `meta(key, value)`: `checkpoint` (the log position applied last) and the indexer's lease.
 *
 * Exactly once: the events of a batch and the new checkpoint are written in one IMMEDIATE transaction that
 * first checks the stored checkpoint is the one the writer started from (another writer that moved it makes
 * the batch roll back).
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { RecordedEvent } from '../eventstore/port.ts';
import type { StoredEvent } from '../domain/events.ts';
import { MESSAGE_STREAM } from '../domain/message/events.ts';
import { isUlid, ulidTime } from '../ids.ts';
import { matchOf, parseQuery, segment } from './text.ts';

/** Stored checkpoint does not match the writer's: another indexer moved it. */
export class SearchCheckpointMoved extends Error {
  constructor(readonly stored: bigint | undefined, readonly expected: bigint | undefined) {
    super(`search checkpoint is ${stored ?? 'missing'}, expected ${expected ?? 'missing'}`);
    this.name = 'SearchCheckpointMoved';
  }
}

/** Event types the index consumes. */
export const SEARCH_EVENT_TYPES = new Set(['MessageSent', 'MessageEdited', 'MessagePinned', 'MessageUnpinned', 'MessageDeleted', 'MessageErased', 'ChannelDeleted', 'ServerDeleted']);

/** How many of the newest matches of each word a Relevance search ranks. */
export const RELEVANCE_WINDOW = 1_000;

/** Most by-rowid checks of a Relevance search for words of messages older than a word's full window. */
export const RELEVANCE_RECOUNTS = 2_000;

/**
 * Rowids per millisecond of message id time (2^20: a monotonic id factory can make very many ids in one
 * millisecond, e.g. a bulk import). 2^63 / 2^20 ms reaches the year 2248.
 */
export const PER_MS = 2n ** 20n;

/** One page of a search or of the pinned list. */
export interface SearchPage {
  /** Only messages with a smaller id. */
  before?: string | undefined;
  /** Only messages with a greater id. */
  after?: string | undefined;
  sort: 'Relevance' | 'Latest' | 'Oldest';
  limit: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS doc (rowid INTEGER PRIMARY KEY, message_id TEXT NOT NULL UNIQUE, channel TEXT NOT NULL, pinned INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS doc_channel ON doc(channel);
CREATE INDEX IF NOT EXISTS doc_pinned ON doc(channel, message_id) WHERE pinned = 1;
CREATE TABLE IF NOT EXISTS gone_channel (channel TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(channel, body, tokenize = "unicode61 remove_diacritics 2", content = '', contentless_delete = 1);
`;

/** The index file, opened by a reader (API) or the writer (indexer). */
export class SearchIndex {
  readonly db: Database.Database;
  private readonly q: ReturnType<SearchIndex['prepare']>;

  constructor(file: string) {
    if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(SCHEMA);
    this.db.defaultSafeIntegers(true);
    this.q = this.prepare();
  }

  private prepare() {
    const db = this.db;
    return {
      getMeta: db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?'),
      setMeta: db.prepare<[string, string]>('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value'),
      docById: db.prepare<[string], { rowid: bigint; channel: string; pinned: bigint }>('SELECT rowid, channel, pinned FROM doc WHERE message_id = ?'),
      insertDoc: db.prepare<[bigint, string, string, number]>('INSERT OR REPLACE INTO doc (rowid, message_id, channel, pinned) VALUES (?, ?, ?, ?)'),
      deleteDoc: db.prepare<[bigint]>('DELETE FROM doc WHERE rowid = ?'),
      pin: db.prepare<[number, bigint]>('UPDATE doc SET pinned = ? WHERE rowid = ?'),
      insertText: db.prepare<[bigint, string, string]>('INSERT INTO fts (rowid, channel, body) VALUES (?, ?, ?)'),
      deleteText: db.prepare<[bigint]>('DELETE FROM fts WHERE rowid = ?'),
      gone: db.prepare<[string]>('INSERT OR IGNORE INTO gone_channel (channel) VALUES (?)'),
      isGone: db.prepare<[string], { one: bigint }>('SELECT 1 AS one FROM gone_channel WHERE channel = ?'),
      lastInMs: db.prepare<[bigint, bigint], { top: bigint | null }>('SELECT max(rowid) AS top FROM doc WHERE rowid >= ? AND rowid < ?'),
      channelRows: db.prepare<[string], { rowid: bigint }>('SELECT rowid FROM doc WHERE channel = ?'),
      deleteChannelDocs: db.prepare<[string]>('DELETE FROM doc WHERE channel = ?'),
    };
  }

  /** The log position applied last (undefined before the first event). */
  checkpoint(): bigint | undefined {
    const row = this.q.getMeta.get('checkpoint');
    return row ? BigInt(row.value) : undefined;
  }

  /** Id of the event at the checkpoint (undefined before the first event, or in an index written before ids were). */
  checkpointEvent(): string | undefined {
    return this.q.getMeta.get('checkpoint_event')?.value;
  }

  /**
   * Applies a batch of log events and moves the checkpoint to the last one's position, atomically and only
   * if the stored checkpoint is still `expected` (else `SearchCheckpointMoved`, nothing written).
   */
  applyBatch(events: readonly RecordedEvent[], expected: bigint | undefined, upcast: (e: RecordedEvent) => StoredEvent): bigint {
    const lastEvent = events[events.length - 1]!;
    const last = lastEvent.position;
    this.db
      .transaction(() => {
        const stored = this.checkpoint();
        if (stored !== expected) throw new SearchCheckpointMoved(stored, expected);
        for (const raw of events) if (SEARCH_EVENT_TYPES.has(raw.type)) this.apply(upcast(raw));
        this.q.setMeta.run('checkpoint', last.toString());
        // What the checkpoint points at: a log that went back in time no longer holds it (the indexer starts over).
        this.q.setMeta.run('checkpoint_event', lastEvent.id);
      })
      .immediate();
    return last;
  }

  private apply(e: StoredEvent): void {
    const q = this.q;
    if (e.type === 'ChannelDeleted') return this.dropChannel(e.data.channelId);
    if (e.type === 'ServerDeleted') {
      for (const id of e.data.channels) this.dropChannel(id);
      return;
    }
    if (!e.stream.startsWith(MESSAGE_STREAM)) return;
    const messageId = e.stream.slice(MESSAGE_STREAM.length);
    if (e.type === 'MessageSent') {
      const m = e.data.message;
      if (q.isGone.get(m.channel)) return;
      const rowid = this.newRowid(messageId);
      q.insertDoc.run(rowid, messageId, m.channel, 0);
      q.insertText.run(rowid, m.channel, segment(m.content ?? ''));
      return;
    }
    const doc = q.docById.get(messageId);
    if (!doc) return;
    switch (e.type) {
      case 'MessageEdited':
        if (e.data.data.content === undefined) return;
        q.deleteText.run(doc.rowid);
        q.insertText.run(doc.rowid, doc.channel, segment(e.data.data.content));
        return;
      case 'MessagePinned':
        q.pin.run(1, doc.rowid);
        return;
      case 'MessageUnpinned':
        q.pin.run(0, doc.rowid);
        return;
      case 'MessageDeleted':
      case 'MessageErased':
        q.deleteText.run(doc.rowid);
        q.deleteDoc.run(doc.rowid);
        return;
      default:
        return;
    }
  }

  /** The next free rowid of the message id's millisecond (ids arrive in log order: deterministic). */
  private newRowid(messageId: string): bigint {
    // Ids are server-made ULIDs; anything else (never seen) shares millisecond 0 rather than stop the index.
    const base = upperUlid(messageId) ? BigInt(ulidTime(messageId)) * PER_MS : 0n;
    // Past 2^20 in one millisecond the rows spill into the next ones (the index never stops; cursors inside
    // such a millisecond may then be inexact).
    let from = base;
    for (;;) {
      const top = this.q.lastInMs.get(from, from + PER_MS)?.top ?? null;
      if (top === null) return from;
      if (top + 1n < from + PER_MS) return top + 1n;
      from += PER_MS;
    }
  }

  /** Rowid bounds and exact id filters of a page's cursors (SQL and its arguments). */
  private cursors(page: SearchPage): { sql: string; args: unknown[] } {
    let sql = '';
    const args: unknown[] = [];
    // The rowid range narrows to the cursor's millisecond; the id comparison settles that millisecond. A
    // cursor that is not an upper-case ULID has no time consistent with string order: the id filter alone.
    if (page.before !== undefined) {
      sql += ' AND doc.message_id < ?';
      args.push(page.before);
      if (upperUlid(page.before)) {
        sql += ' AND fts.rowid < ?';
        args.push((BigInt(ulidTime(page.before)) + 1n) * PER_MS);
      }
    }
    if (page.after !== undefined) {
      sql += ' AND doc.message_id > ?';
      args.push(page.after);
      if (upperUlid(page.after)) {
        sql += ' AND fts.rowid >= ?';
        args.push(BigInt(ulidTime(page.after)) * PER_MS);
      }
    }
    return { sql, args };
  }

  private dropChannel(channelId: string): void {
    this.q.gone.run(channelId);
    for (const { rowid } of this.q.channelRows.all(channelId)) this.q.deleteText.run(rowid);
    this.q.deleteChannelDocs.run(channelId);
  }

  /**
   * Ids of the channel's messages matching a Stoat search query, in the page's order (at most `limit`).
   * Latest / Oldest walk the matches in rowid (= id) order and stop at `limit`. Relevance takes, for each
   * word of the query, its newest `RELEVANCE_WINDOW` matches that meet the rest of the query, and ranks them
   * by how many of the words each has, newest first among equals — so a rare word's message is found however
   * old it is, and a word in a million messages costs a bounded walk, never a ranking of a million.
   */
  search(channelId: string, query: string, page: SearchPage): string[] {
    const parsed = parseQuery(query);
    const c = this.cursors(page);
    const run = (match: string, order: 'ASC' | 'DESC', limit: number) =>
      this.db
        .prepare(`SELECT doc.rowid AS r, doc.message_id AS id FROM fts JOIN doc ON doc.rowid = fts.rowid WHERE fts MATCH ?${c.sql} ORDER BY fts.rowid ${order} LIMIT ?`)
        .all(match, ...c.args, limit) as Array<{ r: bigint; id: string }>;
    const all = matchOf(parsed, channelId);
    if (all === null) return [];
    if (page.sort !== 'Relevance' || parsed.any.length <= 1) {
      return run(all, page.sort === 'Oldest' ? 'ASC' : 'DESC', page.limit).map((row) => row.id);
    }
    const hits = new Map<bigint, { id: string; words: number }>();
    /** Per word: the oldest rowid of its window when the window was full (older messages were not looked at). */
    const cutoffs: Array<{ word: string; oldest: bigint; seen: Set<bigint> }> = [];
    for (const word of parsed.any) {
      const rows = run(matchOf(parsed, channelId, word)!, 'DESC', RELEVANCE_WINDOW);
      for (const row of rows) {
        const h = hits.get(row.r);
        if (h) h.words++;
        else hits.set(row.r, { id: row.id, words: 1 });
      }
      if (rows.length === RELEVANCE_WINDOW) cutoffs.push({ word, oldest: rows[rows.length - 1]!.r, seen: new Set(rows.map((row) => row.r)) });
    }
    // A message older than a full window may still have that word (an old message with a rare word and a
    // common one): look it up by rowid, at most RELEVANCE_RECOUNTS times.
    let recounts = 0;
    for (const { word, oldest, seen } of cutoffs) {
      const has = this.db.prepare('SELECT 1 FROM fts WHERE fts MATCH ? AND rowid = ?');
      const match = matchOf(parsed, channelId, word)!;
      for (const [r, h] of hits) {
        if (r >= oldest || seen.has(r)) continue;
        if (recounts++ >= RELEVANCE_RECOUNTS) break;
        if (has.get(match, r)) h.words++;
      }
    }
    return [...hits.entries()]
      .sort(([ra, a], [rb, b]) => b.words - a.words || (rb > ra ? 1 : rb < ra ? -1 : 0))
      .slice(0, page.limit)
      .map(([, h]) => h.id);
  }

  /** Ids of the channel's pinned messages, newest first (Latest, Relevance) or oldest first. */
  pinned(channelId: string, page: SearchPage): string[] {
    const sql = `SELECT message_id AS id FROM doc WHERE channel = ? AND pinned = 1
      ${page.before !== undefined ? 'AND message_id < ?' : ''} ${page.after !== undefined ? 'AND message_id > ?' : ''}
      ORDER BY message_id ${page.sort === 'Oldest' ? 'ASC' : 'DESC'} LIMIT ?`;
    const args: unknown[] = [channelId];
    if (page.before !== undefined) args.push(page.before);
    if (page.after !== undefined) args.push(page.after);
    args.push(page.limit);
    return (this.db.prepare(sql).all(...args) as Array<{ id: string }>).map((r) => r.id);
  }

  /**
   * Takes or renews the writer's lease (one indexer per index file): true when `holder` holds it until
   * `now + ms`. A lease whose holder stopped renewing expires and is taken by the next asker.
   */
  lease(holder: string, now: number, ms: number): boolean {
    return this.db
      .transaction(() => {
        const raw = this.q.getMeta.get('lease')?.value;
        const cur = raw ? (JSON.parse(raw) as { holder: string; until: number }) : undefined;
        if (cur && cur.holder !== holder && cur.until > now) return false;
        this.q.setMeta.run('lease', JSON.stringify({ holder, until: now + ms }));
        return true;
      })
      .immediate();
  }

  /** Gives the lease up (when held by `holder`). */
  release(holder: string): void {
    this.db
      .transaction(() => {
        const raw = this.q.getMeta.get('lease')?.value;
        if (raw && (JSON.parse(raw) as { holder: string }).holder === holder) this.db.prepare("DELETE FROM meta WHERE key = 'lease'").run();
      })
      .immediate();
  }

  /**
   * Empties the index and forgets its checkpoint, in one transaction (`npm run rebuild:search`). A running
   * indexer notices that the checkpoint moved and replays the log from zero; searches wait for it meanwhile.
   */
  reset(): void {
    this.db
      .transaction(() => {
        this.db.exec("DELETE FROM doc; DELETE FROM gone_channel; INSERT INTO fts(fts) VALUES('delete-all'); DELETE FROM meta WHERE key IN ('checkpoint', 'checkpoint_event');");
      })
      .immediate();
  }

  /** Everything the index holds, in a stable order (for rebuild-equals-live checks). */
  dump(): { docs: unknown[]; terms: unknown[]; gone: unknown[]; checkpoint: string | undefined } {
    this.db.exec("CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_terms USING fts5vocab(main, 'fts', 'instance')");
    return {
      docs: this.db.prepare('SELECT rowid, message_id, channel, pinned FROM doc ORDER BY rowid').all(),
      terms: this.db.prepare('SELECT term, doc, col, offset FROM temp.fts_terms ORDER BY doc, col, offset').all(),
      gone: this.db.prepare('SELECT channel FROM gone_channel ORDER BY channel').all(),
      checkpoint: this.checkpoint()?.toString(),
    };
  }

  close(): void {
    this.db.close();
  }
}

/** An upper-case ULID (the form whose time agrees with string order). */
function upperUlid(id: string): boolean {
  return isUlid(id) && id === id.toUpperCase();
}
