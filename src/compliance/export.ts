/**
 * The compliance export (issue 39 part 3): every message event of a time range — sends, edits with the
 * previous and the new content, deletions with who deleted, bulk deletes, pins, reactions — and the moderation
 * actions (kicks, bans, timeouts, instance sanctions, moderator deletions), as rows in log order, each with its
 * log position and time. Shared by `npm run compliance -- export` and `GET /admin/export`.
 *
 * It reads the log once, streamed (`readAll`), so memory stays flat: the only state is a bounded LRU of
 * message facts (author, channel, current content). A message not in it (sent before the range, or evicted)
 * is looked up by reading its own stream up to the event, which gives the content it had just before.
 *
 * Content that cannot be read — a personal field whose key was destroyed (the personal-data boundary leaves it
 * out), a value still sealed after opening, an event marked `erased` (message content whose retention bucket
 * key was destroyed) — is shown as erased (`erased: true`, `content: null`), never as an error. A message
 * retention erased also has its own row (`message_erased`: id, author, channel, time, `erased: true`).
 */
import type { EventStore, RecordedEvent } from '../eventstore/port.ts';
import { isSealed } from '../personal/cipher.ts';

/** Which events an export covers. Times are compared with each event's `metadata.at`. */
export interface ComplianceFilter {
  /** Inclusive lower bound. */
  from?: Date;
  /** Inclusive upper bound. */
  to?: Date;
  serverId?: string;
  channelId?: string;
  /** Events this user caused, or about a message they wrote, or whose target they are. */
  userId?: string;
}

/** One row of the export (the JSONL object; CSV has these columns in this order). */
export interface ComplianceRow {
  /** Log position (decimal string: positions are 64-bit). */
  position: string;
  /** ISO time the event was decided. */
  at: string;
  /** What happened: see `COMPLIANCE_KINDS`. */
  kind: ComplianceKind;
  stream: string;
  /** The message concerned (message events and moderator deletions). */
  message: string | null;
  channel: string | null;
  server: string | null;
  /** The message's author. */
  author: string | null;
  /** Who caused the event (the deleter, the pinner, the moderator…); null for the system. */
  actor: string | null;
  /** The user acted upon (kicked, banned, timed out, sanctioned). */
  target: string | null;
  /** The content after the event (send, edit); null when none or erased. */
  content: string | null;
  /** The content before an edit; null when none or erased. */
  previous_content: string | null;
  /** True when content of this row (or the previous content of an edit) was erased and cannot be read. */
  erased: boolean;
  /** Attachment ids of a send. */
  attachments: string[] | null;
  emoji: string | null;
  /** Moderation reason, or the `X-Audit-Log-Reason` of the request. */
  reason: string | null;
  /** A timeout's end, or a suspension's. */
  until: string | null;
  /** True for a deletion that was part of a bulk delete. */
  bulk: boolean;
}

/** Every row kind. */
export const COMPLIANCE_KINDS = [
  'message_sent',
  'message_edited',
  'message_deleted',
  'message_erased',
  'message_pinned',
  'message_unpinned',
  'reaction_added',
  'reaction_removed',
  'reactions_removed_for_emoji',
  'reactions_cleared',
  'moderator_deleted_message',
  'member_kicked',
  'member_banned',
  'member_unbanned',
  'member_timed_out',
  'member_timeout_cleared',
  'account_suspended',
  'account_banned',
  'account_sanction_lifted',
  'account_deleted_by_moderator',
  'server_deleted_by_moderator',
  'hold_placed',
  'hold_lifted',
] as const;
/** A row kind. */
export type ComplianceKind = (typeof COMPLIANCE_KINDS)[number];

/** The CSV columns, in order. */
export const CSV_COLUMNS: ReadonlyArray<keyof ComplianceRow> = [
  'position',
  'at',
  'kind',
  'stream',
  'message',
  'channel',
  'server',
  'author',
  'actor',
  'target',
  'content',
  'previous_content',
  'erased',
  'attachments',
  'emoji',
  'reason',
  'until',
  'bulk',
];

/** Marker of content that cannot be read. */
const ERASED = Symbol('erased');
/** Content as tracked: text, none, or erased. */
type Content = string | null | typeof ERASED;

/** What the export knows of one message. */
interface MessageFacts {
  author: string | null;
  channel: string | null;
  content: Content;
}

/** Messages remembered at most (each entry is small; the rest are looked up in their streams). */
export const MESSAGE_CACHE_SIZE = 10_000;

/** The content of a field: erased when still sealed or when the event says so. */
function contentOf(v: unknown, erasedFlag: boolean): Content {
  if (erasedFlag || isSealed(v)) return ERASED;
  return typeof v === 'string' ? v : null;
}

/** The content a `MessageSent` carries; a message with nothing at all lost its fields to erasure. */
function sentContent(data: Record<string, unknown>): Content {
  const m = (data.message ?? {}) as Record<string, unknown>;
  if (data.erased === true || m.erased === true) return ERASED;
  const c = contentOf(m.content, false);
  if (c === ERASED) return c;
  if (c === null && m.system === undefined && !(Array.isArray(m.attachments) && m.attachments.length) && !(Array.isArray(m.embeds) && m.embeds.length)) {
    return ERASED;
  }
  return c;
}

/** A bounded map that forgets the least recently used entry. */
class Lru<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(k: string): V | undefined {
    const v = this.map.get(k);
    if (v !== undefined) {
      this.map.delete(k);
      this.map.set(k, v);
    }
    return v;
  }
  set(k: string, v: V): void {
    this.map.delete(k);
    this.map.set(k, v);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value as string);
  }
  has(k: string): boolean {
    return this.map.has(k);
  }
  get size(): number {
    return this.map.size;
  }
}

/** Folds a message's stream up to (excluding) `revision` into its facts. */
async function lookUp(store: EventStore, stream: string, revision: number): Promise<MessageFacts> {
  const facts: MessageFacts = { author: null, channel: null, content: null };
  let from = 0;
  while (from < revision) {
    const page = await store.readStream(stream, { fromRevision: from, maxCount: Math.min(1000, revision - from) });
    for (const e of page) applyFacts(facts, e);
    if (page.length === 0) break;
    from = page[page.length - 1]!.revision + 1;
  }
  return facts;
}

/** Applies a send or an edit to the facts of its message. */
function applyFacts(facts: MessageFacts, e: RecordedEvent): void {
  const d = e.data as Record<string, unknown>;
  if (e.type === 'MessageSent') {
    const m = (d.message ?? {}) as Record<string, unknown>;
    facts.author = typeof m.author === 'string' ? m.author : null;
    facts.channel = typeof m.channel === 'string' ? m.channel : null;
    facts.content = sentContent(d);
  } else if (e.type === 'MessageErased') {
    facts.content = ERASED;
    if (typeof d.author === 'string') facts.author = d.author;
  } else if (e.type === 'MessageEdited') {
    const data = (d.data ?? {}) as Record<string, unknown>;
    if (d.erased === true || isSealed(data.content)) facts.content = ERASED;
    else if ('content' in data) facts.content = contentOf(data.content, false);
  }
}

const MESSAGE_TYPES = new Set([
  'MessageSent',
  'MessageEdited',
  'MessageDeleted',
  'MessageErased',
  'MessagePinned',
  'MessageUnpinned',
  'MessageReacted',
  'MessageUnreacted',
  'MessageReactionRemoved',
  'MessageReactionsCleared',
]);

const MODERATION_TYPES = new Set([
  'ModeratorDeletedMessage',
  'MemberLeft',
  'UserBanned',
  'UserUnbanned',
  'MemberEdited',
  'AccountSuspended',
  'AccountBanned',
  'AccountSanctionLifted',
  'ModeratorDeletedAccount',
  'ModeratorDeletedServer',
  'HoldPlaced',
  'HoldLifted',
]);

/** An empty row for an event. */
function baseRow(e: RecordedEvent, kind: ComplianceKind): ComplianceRow {
  return {
    position: e.position.toString(),
    at: e.metadata.at,
    kind,
    stream: e.stream,
    message: null,
    channel: null,
    server: null,
    author: null,
    actor: e.metadata.actor,
    target: null,
    content: null,
    previous_content: null,
    erased: false,
    attachments: null,
    emoji: null,
    reason: e.metadata.reason ?? null,
    until: null,
    bulk: false,
  };
}

/** Options of a run. */
export interface ComplianceRunOptions {
  /** Called every thousand events read (and at the end) with the number read. */
  onProgress?: (read: number) => void;
  /** Size of the message LRU (tests make it tiny to exercise the stream look-up). */
  cacheSize?: number;
}

/** The rows of the export, in log order, streamed from the log. */
export async function* complianceRows(store: EventStore, f: ComplianceFilter, o: ComplianceRunOptions = {}): AsyncGenerator<ComplianceRow> {
  const cache = new Lru<MessageFacts>(o.cacheSize ?? MESSAGE_CACHE_SIZE);
  const from = f.from?.getTime() ?? -Infinity;
  const to = f.to?.getTime() ?? Infinity;
  let read = 0;
  for await (const e of store.readAll()) {
    if (++read % 1000 === 0) o.onProgress?.(read);
    const isMessage = MESSAGE_TYPES.has(e.type) && e.stream.startsWith('message-');
    if (!isMessage && !MODERATION_TYPES.has(e.type)) continue;
    const at = Date.parse(e.metadata.at);
    const inRange = at >= from && at <= to;
    if (isMessage) {
      const id = e.stream.slice('message-'.length);
      const d = e.data as Record<string, unknown>;
      const channel = typeof d.channel === 'string' ? d.channel : typeof (d.message as { channel?: unknown })?.channel === 'string' ? ((d.message as { channel: string }).channel) : null;
      const server = e.metadata.scope && e.metadata.scope !== channel ? e.metadata.scope : null;
      // Cached facts follow every send and edit, in range or not, so they are always as of the current event.
      if (!inRange || (f.channelId !== undefined && channel !== f.channelId) || (f.serverId !== undefined && server !== f.serverId)) {
        if (e.type === 'MessageSent') cache.set(id, factsAfter(e));
        else if (e.type === 'MessageEdited') {
          const c = cache.get(id);
          if (c) applyFacts(c, e);
        }
        continue;
      }
      let before: MessageFacts;
      if (e.type === 'MessageSent') before = { author: null, channel, content: null };
      else before = cache.get(id) ?? (await lookUp(store, e.stream, e.revision));
      const after: MessageFacts = { ...before };
      applyFacts(after, e);
      cache.set(id, after);
      const row = messageRow(e, id, channel, server, before, after);
      if (row && (f.userId === undefined || row.actor === f.userId || row.author === f.userId)) yield row;
      continue;
    }
    if (!inRange) continue;
    const row = moderationRow(e);
    if (!row) continue;
    if (f.channelId !== undefined && row.channel !== f.channelId) continue;
    if (f.serverId !== undefined && row.server !== f.serverId) continue;
    if (f.userId !== undefined && row.actor !== f.userId && row.author !== f.userId && row.target !== f.userId) continue;
    yield row;
  }
  o.onProgress?.(read);
}

/** The facts of a message right after its `MessageSent`. */
function factsAfter(e: RecordedEvent): MessageFacts {
  const f: MessageFacts = { author: null, channel: null, content: null };
  applyFacts(f, e);
  return f;
}

/** The row of a message event. */
function messageRow(e: RecordedEvent, id: string, channel: string | null, server: string | null, before: MessageFacts, after: MessageFacts): ComplianceRow | null {
  const d = e.data as Record<string, unknown>;
  const kindOf: Record<string, ComplianceKind> = {
    MessageSent: 'message_sent',
    MessageEdited: 'message_edited',
    MessageDeleted: 'message_deleted',
    MessageErased: 'message_erased',
    MessagePinned: 'message_pinned',
    MessageUnpinned: 'message_unpinned',
    MessageReacted: 'reaction_added',
    MessageUnreacted: 'reaction_removed',
    MessageReactionRemoved: 'reactions_removed_for_emoji',
    MessageReactionsCleared: 'reactions_cleared',
  };
  const kind = kindOf[e.type];
  if (!kind) return null;
  const row = baseRow(e, kind);
  row.message = id;
  row.channel = channel;
  row.server = server;
  row.author = after.author;
  if (e.type === 'MessageSent') {
    const m = (d.message ?? {}) as Record<string, unknown>;
    row.content = after.content === ERASED ? null : after.content;
    row.erased = after.content === ERASED;
    if (Array.isArray(m.attachments) && m.attachments.length) row.attachments = m.attachments.map((a) => String((a as { _id?: unknown })._id));
  } else if (e.type === 'MessageEdited') {
    row.content = after.content === ERASED ? null : after.content;
    row.previous_content = before.content === ERASED ? null : before.content;
    row.erased = after.content === ERASED || before.content === ERASED;
  } else if (e.type === 'MessageDeleted') {
    row.content = before.content === ERASED ? null : before.content;
    row.erased = before.content === ERASED;
    row.bulk = d.inBulk === true || Array.isArray(d.bulkIds);
  } else if (e.type === 'MessageErased') {
    // What the audit keeps of an expired message: id, author, channel, time; the content is gone.
    row.erased = true;
    if (Array.isArray(d.files) && d.files.length) row.attachments = d.files.map(String);
  } else if (e.type === 'MessagePinned' || e.type === 'MessageUnpinned') {
    if (typeof d.by === 'string') row.actor = d.by;
  } else if (e.type === 'MessageReacted' || e.type === 'MessageUnreacted') {
    row.emoji = typeof d.emoji === 'string' ? d.emoji : null;
    // The reactor (a moderator removing someone's reaction is the actor; the reactor is the target).
    if (typeof d.userId === 'string' && d.userId !== e.metadata.actor) row.target = d.userId;
    if (e.metadata.actor === null && typeof d.userId === 'string') row.actor = d.userId;
  } else if (e.type === 'MessageReactionRemoved') {
    row.emoji = typeof d.emoji === 'string' ? d.emoji : null;
  }
  return row;
}

/** The row of a moderation event, or null when the event is not a moderation action (a member leaving). */
function moderationRow(e: RecordedEvent): ComplianceRow | null {
  const d = e.data as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  const serverOf = () => (e.stream.startsWith('server-') ? e.stream.slice('server-'.length) : null);
  switch (e.type) {
    case 'ModeratorDeletedMessage': {
      const row = baseRow(e, 'moderator_deleted_message');
      row.message = str(d.message);
      row.channel = str(d.channel);
      row.server = str(d.server);
      row.author = str(d.author);
      row.target = str(d.author);
      row.reason = str(d.reason) ?? row.reason;
      return row;
    }
    case 'MemberLeft': {
      if (d.reason !== 'Kick') return null;
      const row = baseRow(e, 'member_kicked');
      row.server = serverOf();
      row.target = str(d.userId);
      return row;
    }
    case 'UserBanned':
    case 'UserUnbanned': {
      const row = baseRow(e, e.type === 'UserBanned' ? 'member_banned' : 'member_unbanned');
      row.server = serverOf();
      row.target = str(d.userId);
      row.reason = str(d.reason) ?? row.reason;
      return row;
    }
    case 'MemberEdited': {
      const data = (d.data ?? {}) as Record<string, unknown>;
      const removed = Array.isArray(d.remove) && d.remove.includes('Timeout');
      if (typeof data.timeout !== 'string' && !removed) return null;
      const row = baseRow(e, typeof data.timeout === 'string' ? 'member_timed_out' : 'member_timeout_cleared');
      row.server = serverOf();
      row.target = str(d.userId);
      row.until = str(data.timeout);
      return row;
    }
    case 'AccountSuspended':
    case 'AccountBanned':
    case 'AccountSanctionLifted': {
      const kind = e.type === 'AccountSuspended' ? 'account_suspended' : e.type === 'AccountBanned' ? 'account_banned' : 'account_sanction_lifted';
      const row = baseRow(e, kind);
      row.target = str(d.userId);
      row.reason = str(d.reason) ?? row.reason;
      row.until = str(d.until);
      return row;
    }
    case 'ModeratorDeletedAccount': {
      const row = baseRow(e, 'account_deleted_by_moderator');
      row.target = str(d.userId);
      row.reason = str(d.reason) ?? row.reason;
      return row;
    }
    case 'ModeratorDeletedServer': {
      const row = baseRow(e, 'server_deleted_by_moderator');
      row.server = str(d.server);
      row.target = str(d.owner);
      row.reason = str(d.reason) ?? row.reason;
      return row;
    }
    case 'HoldPlaced':
    case 'HoldLifted': {
      // A legal hold's target: a server, a channel (its server is not named by the event) or a user.
      const row = baseRow(e, e.type === 'HoldPlaced' ? 'hold_placed' : 'hold_lifted');
      const target = (d.target ?? {}) as { type?: unknown; id?: unknown };
      const id = str(target.id);
      if (target.type === 'server') row.server = id;
      else if (target.type === 'channel') row.channel = id;
      else row.target = id;
      row.reason = str(d.reason) ?? row.reason;
      return row;
    }
  }
  return null;
}

/** One CSV field (RFC 4180: quoted when it holds a comma, a quote, CR or LF; quotes doubled). */
export function csvField(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = Array.isArray(v) ? v.join(' ') : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** The CSV header line (with CRLF). */
export function csvHeader(): string {
  return CSV_COLUMNS.join(',') + '\r\n';
}

/** One row as a line of the format (JSONL ends in LF, CSV in CRLF). */
export function formatRow(row: ComplianceRow, format: 'jsonl' | 'csv'): string {
  if (format === 'jsonl') return JSON.stringify(row) + '\n';
  return CSV_COLUMNS.map((c) => csvField(row[c])).join(',') + '\r\n';
}

/** Output formats. */
export type ComplianceFormat = 'jsonl' | 'csv';

/**
 * Writes the export to `out`, waiting whenever its buffer is full (so memory stays flat however slow the
 * reader); returns the number of rows written.
 */
export async function writeCompliance(store: EventStore, out: NodeJS.WritableStream, f: ComplianceFilter, format: ComplianceFormat, o: ComplianceRunOptions = {}): Promise<number> {
  const write = async (s: string) => {
    if (!out.write(s)) await new Promise<void>((r) => out.once('drain', () => r()));
  };
  if (format === 'csv') await write(csvHeader());
  let n = 0;
  for await (const row of complianceRows(store, f, o)) {
    await write(formatRow(row, format));
    n++;
  }
  return n;
}
