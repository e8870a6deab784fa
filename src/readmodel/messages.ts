/**
 * Reading a channel's messages (projection `messages`): a page costs O(log n + page) whatever the channel's
 * size. The messages are the members of the record set `channel:<id>:history` (src/readmodel/records.ts), so a
 * page is one ZRANGEBYLEX / ZREVRANGEBYLEX … LIMIT (two for `nearby`) whose reply is the page: in wire form with
 * no parsing (`readHistoryWire`, the history route), or parsed (`readHistory`, for the routes that work on the
 * messages).
 */
import type { RedisClient } from '../redis.ts';
import { presentMessage, type MessageState } from '../domain/message/state.ts';
import { rm } from './keys.ts';
import type { ReadModels } from './reader.ts';
import { aboveId, belowId, fromId, recordRange } from './records.ts';

/** Which page of a channel's history (reference §3.7 "Query semantics"). */
export type HistoryQuery =
  | {
      /** Latest: newest first; Oldest: oldest first. */
      sort: 'Latest' | 'Oldest';
      limit: number;
      /** Only messages with a smaller id. */
      before?: string | undefined;
      /** Only messages with a greater id. */
      after?: string | undefined;
    }
  | {
      /** Up to `limit / 2 + 1` messages with id ≥ nearby (ascending), then up to as many with id < nearby (descending). */
      nearby: string;
      limit: number;
    };

/** One ZRANGEBYLEX (ascending) or ZREVRANGEBYLEX (descending) of a page: from, to (in the command's order), limit. */
interface Range {
  reverse: boolean;
  from: string;
  to: string;
  limit: number;
}

/** The ranges of a page query, in the order their messages are answered. */
function rangesOf(q: HistoryQuery): Range[] {
  if ('nearby' in q) {
    const n = Math.floor(q.limit / 2) + 1;
    return [
      { reverse: false, from: fromId(q.nearby), to: '+', limit: n },
      { reverse: true, from: belowId(q.nearby), to: '-', limit: n },
    ];
  }
  const min = q.after === undefined ? '-' : aboveId(q.after);
  const max = q.before === undefined ? '+' : belowId(q.before);
  return [q.sort === 'Oldest' ? { reverse: false, from: min, to: max, limit: q.limit } : { reverse: true, from: max, to: min, limit: q.limit }];
}

function readRange(redis: RedisClient, key: string, r: Range): Promise<string[]> {
  return r.reverse ? redis.zrevrangebylex(key, r.from, r.to, 'LIMIT', 0, r.limit) : redis.zrangebylex(key, r.from, r.to, 'LIMIT', 0, r.limit);
}

function readRangeBuffer(redis: RedisClient, key: string, r: Range): Promise<Buffer[]> {
  return r.reverse ? redis.zrevrangebylexBuffer(key, r.from, r.to, 'LIMIT', 0, r.limit) : redis.zrangebylexBuffer(key, r.from, r.to, 'LIMIT', 0, r.limit);
}

/** A page in wire form: the JSON array of Revolt Messages as bytes, and (when asked) the author of each. */
export interface WirePage {
  json: Buffer;
  authors: string[];
}

const TAIL = Buffer.from(',"revision":');
const AUTHOR_KEY = Buffer.from('","author":"');
/** Where `","author":"` starts in a stored message: after `{"_id":"<26>","channel":"<26>`. */
const AUTHOR_AT = '{"_id":"'.length + 26 + '","channel":"'.length + 26;
/** Where the author id starts in a stored message (and in its wire form, which is its first bytes). */
const AUTHOR_ID_AT = AUTHOR_AT + AUTHOR_KEY.length;

/**
 * Where the wire form of a stored message ends (storedMessage layout: `,"revision":N}` last, the author at a
 * fixed offset): the offset of `,"revision":`, or -1 for another layout (an older projection). Byte loops,
 * not `lastIndexOf` / `compare`: the bytes checked are few, a native call per message costs more.
 */
function wireEnd(v: Buffer): number {
  let k = v.length - 1;
  if (k < AUTHOR_ID_AT + 26 || v[k] !== 125) return -1;
  const last = --k;
  while (k > 0 && v[k]! >= 48 && v[k]! <= 57) k--;
  if (k === last) return -1;
  const at = k - TAIL.length + 1;
  if (at < AUTHOR_ID_AT + 26) return -1;
  for (let j = 0; j < TAIL.length; j++) if (v[at + j] !== TAIL[j]) return -1;
  for (let j = 0; j < AUTHOR_KEY.length; j++) if (v[AUTHOR_AT + j] !== AUTHOR_KEY[j]) return -1;
  return at;
}

/**
 * A page in wire form. Each message's author is read from the page's own bytes only when asked
 * (`include_users`): `authorAt` holds its offset there, or the author itself for a message of an older layout.
 */
class Page implements WirePage {
  private list: string[] | undefined;
  constructor(
    readonly json: Buffer,
    private readonly authorAt: Array<number | string>,
  ) {}

  get authors(): string[] {
    return (this.list ??= this.authorAt.map((a) => (typeof a === 'string' ? a : this.json.toString('latin1', a, a + 26))));
  }
}

const EMPTY_PAGE = Buffer.from('[]');

/**
 * One page of a channel's messages in wire form (the JSON array of Revolt Messages as bytes) and the author
 * of each, in the order the query asks for. The stored messages are written out as Redis hands them over,
 * their revision cut off: no message is parsed or serialised.
 */
export async function readHistoryWire(readModels: ReadModels, channelId: string, q: HistoryQuery): Promise<WirePage> {
  // The newest page (opening a channel) is the hot one: it is kept in the fact cache until the channel's
  // messages change.
  if (!('nearby' in q) && q.before === undefined && q.after === undefined && q.sort !== 'Oldest') {
    return readModels.newestPage(channelId, q.limit, () => fetchWirePage(readModels, channelId, q));
  }
  return fetchWirePage(readModels, channelId, q);
}

async function fetchWirePage(readModels: ReadModels, channelId: string, q: HistoryQuery): Promise<WirePage> {
  const key = readModels.key(rm.channelHistory(channelId));
  const ranges = rangesOf(q);
  const values = ranges.length === 1 ? await readRangeBuffer(readModels.redis, key, ranges[0]!) : (await Promise.all(ranges.map((r) => readRangeBuffer(readModels.redis, key, r)))).flat();
  // Sizes first, then one copy of each message's wire bytes into the page (no parse, no serialisation).
  const bodies: Buffer[] = [];
  const ends: number[] = [];
  const authorAt: Array<number | string> = [];
  let total = 1;
  for (const v of values) {
    let body = v;
    let end = wireEnd(v);
    let author: string | undefined;
    if (end < 0) {
      const m = JSON.parse(v.toString()) as MessageState;
      body = Buffer.from(JSON.stringify(presentMessage(m)).slice(0, -1));
      end = body.length;
      author = m.author;
    }
    bodies.push(body);
    ends.push(end);
    authorAt.push(author ?? total + AUTHOR_ID_AT);
    total += end + 2; // the body, its closing brace, and a comma or the closing bracket
  }
  if (bodies.length === 0) return new Page(EMPTY_PAGE, []);
  const json = Buffer.allocUnsafe(total);
  json[0] = 91; // [
  let at = 1;
  for (let n = 0; n < bodies.length; n++) {
    at += bodies[n]!.copy(json, at, 0, ends[n]);
    json[at++] = 125; // }
    json[at++] = n === bodies.length - 1 ? 93 : 44; // ] or ,
  }
  return new Page(json, authorAt);
}

/** One page of a channel's messages, in the order the query asks for. */
export async function readHistory(readModels: ReadModels, channelId: string, q: HistoryQuery): Promise<MessageState[]> {
  const out: MessageState[] = [];
  for (const r of await readPageRaw(readModels, channelId, q)) out.push(JSON.parse(r) as MessageState);
  return out;
}

async function readPageRaw(readModels: ReadModels, channelId: string, q: HistoryQuery): Promise<string[]> {
  const key = readModels.key(rm.channelHistory(channelId));
  return (await Promise.all(rangesOf(q).map((r) => readRange(readModels.redis, key, r)))).flat();
}

/** One stored message of a channel, or null. */
export async function loadMessage(readModels: ReadModels, channelId: string, messageId: string): Promise<MessageState | null> {
  const [raw] = await readModels.redis.zrangebylex(readModels.key(rm.channelHistory(channelId)), ...recordRange(messageId), 'LIMIT', 0, 1);
  return raw === undefined ? null : (JSON.parse(raw) as MessageState);
}

/** Whether a channel holds a message. */
export async function hasMessage(readModels: ReadModels, channelId: string, messageId: string): Promise<boolean> {
  return (await readModels.redis.zlexcount(readModels.key(rm.channelHistory(channelId)), ...recordRange(messageId))) > 0;
}

/**
 * Lua: the records of several ids (ARGV: the min and max of each id's range, `recordRange`), false where one is
 * absent. One command instead of one per id: for 50 ids about half the CPU of 50 pipelined ranges, client and
 * Redis together (`bench/redisPage.ts` measures pages; the by-id figures are in bench/RESULTS.md).
 */
const RECORDS = `local out = {}
for i = 1, #ARGV, 2 do
  local r = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[i], ARGV[i + 1])
  out[#out + 1] = r[1] or false
end
return out`;

type RecordsCommand = (key: string, ...bounds: string[]) => Promise<Array<string | null>>;
const withRecords = new WeakSet<RedisClient>();

/** Several stored messages of a channel (null where missing), in the order asked. */
export async function loadMessages(readModels: ReadModels, channelId: string, messageIds: string[]): Promise<Array<MessageState | null>> {
  if (messageIds.length <= 1) return Promise.all(messageIds.map((id) => loadMessage(readModels, channelId, id)));
  const redis = readModels.redis;
  if (!withRecords.has(redis)) {
    redis.defineCommand('stoatMessageRecords', { numberOfKeys: 1, lua: RECORDS });
    withRecords.add(redis);
  }
  const records = (redis as unknown as { stoatMessageRecords: RecordsCommand }).stoatMessageRecords;
  const raws = await records.call(redis, readModels.key(rm.channelHistory(channelId)), ...messageIds.flatMap(recordRange));
  return raws.map((raw) => (raw === null ? null : (JSON.parse(raw) as MessageState)));
}
