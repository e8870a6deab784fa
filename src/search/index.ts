/**
 * The message search index: a projection of the event log into a SQLite file (`DATA_DIR/search.sqlite`)
 * with an FTS5 full-text table, kept by the indexer (`indexer.ts`, projector role) and read by the search
 * route (API role, same machine).
 *
 * Tables:
 * - `doc(rowid, message_id, channel, pinned)`: one row per live message; rowid = the global position of its
 *   `MessageSent`, so a rebuild from zero gives every row the same rowid, and rowid order is log order.
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
import { matchExpression, segment } from './text.ts';

/** Stored checkpoint does not match the writer's: another indexer moved it. */
export class SearchCheckpointMoved extends Error {
  constructor(readonly stored: bigint | undefined, readonly expected: bigint | undefined) {
    super(`search checkpoint is ${stored ?? 'missing'}, expected ${expected ?? 'missing'}`);
    this.name = 'SearchCheckpointMoved';
  }
}

/** Event types the index consumes. */
export const SEARCH_EVENT_TYPES = new Set(['MessageSent', 'MessageEdited', 'MessagePinned', 'MessageUnpinned', 'MessageDeleted', 'ChannelDeleted', 'ServerDeleted']);

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
      channelRows: db.prepare<[string], { rowid: bigint }>('SELECT rowid FROM doc WHERE channel = ?'),
      deleteChannelDocs: db.prepare<[string]>('DELETE FROM doc WHERE channel = ?'),
    };
  }

  /** The log position applied last (undefined before the first event). */
  checkpoint(): bigint | undefined {
    const row = this.q.getMeta.get('checkpoint');
    return row ? BigInt(row.value) : undefined;
  }

  /**
   * Applies a batch of log events and moves the checkpoint to the last one's position, atomically and only
   * if the stored checkpoint is still `expected` (else `SearchCheckpointMoved`, nothing written).
   */
  applyBatch(events: readonly RecordedEvent[], expected: bigint | undefined, upcast: (e: RecordedEvent) => StoredEvent): bigint {
    const last = events[events.length - 1]!.position;
    this.db
      .transaction(() => {
        const stored = this.checkpoint();
        if (stored !== expected) throw new SearchCheckpointMoved(stored, expected);
        for (const raw of events) if (SEARCH_EVENT_TYPES.has(raw.type)) this.apply(upcast(raw));
        this.q.setMeta.run('checkpoint', last.toString());
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
      q.insertDoc.run(e.position, messageId, m.channel, 0);
      q.insertText.run(e.position, m.channel, segment(m.content ?? ''));
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
        q.deleteText.run(doc.rowid);
        q.deleteDoc.run(doc.rowid);
        return;
      default:
        return;
    }
  }

  private dropChannel(channelId: string): void {
    this.q.gone.run(channelId);
    for (const { rowid } of this.q.channelRows.all(channelId)) this.q.deleteText.run(rowid);
    this.q.deleteChannelDocs.run(channelId);
  }

  /** Ids of the channel's messages matching a Stoat search query, in the page's order (at most `limit`). */
  search(channelId: string, query: string, page: SearchPage): string[] {
    const match = matchExpression(query, channelId);
    if (match === null) return [];
    const order = page.sort === 'Relevance' ? 'bm25(fts, 0.0, 1.0), fts.rowid DESC' : page.sort === 'Oldest' ? 'fts.rowid ASC' : 'fts.rowid DESC';
    const sql = `SELECT doc.message_id AS id FROM fts JOIN doc ON doc.rowid = fts.rowid
      WHERE fts MATCH ? ${page.before !== undefined ? 'AND doc.message_id < ?' : ''} ${page.after !== undefined ? 'AND doc.message_id > ?' : ''}
      ORDER BY ${order} LIMIT ?`;
    const args: unknown[] = [match];
    if (page.before !== undefined) args.push(page.before);
    if (page.after !== undefined) args.push(page.after);
    args.push(page.limit);
    return (this.db.prepare(sql).all(...args) as Array<{ id: string }>).map((r) => r.id);
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
