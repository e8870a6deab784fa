/**
 * Reading a channel's messages (projection `messages`): a page costs O(log n + page) whatever the channel's
 * size. The page's ids come from the sorted set `channel:<id>:message_ids` (ZRANGEBYLEX / ZREVRANGEBYLEX …
 * LIMIT) and its messages from `channel:<id>:messages` (HMGET): in wire form, two commands and no parsing
 * (`readHistoryWire`, the history route); parsed, one Lua script doing both (`readHistory`, for the routes that
 * work on the messages). A message deleted in between is simply absent.
 */
import type { RedisClient } from '../redis.ts';
import { presentMessage, type MessageState } from '../domain/message/state.ts';
import { rm } from './keys.ts';
import type { ReadModels } from './reader.ts';

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

/** Lua: the ids of a page (ARGV: mode asc|desc|nearby, min or the nearby id, max, limit). */
const SELECT_IDS = `
local ids
if ARGV[1] == 'asc' then
  ids = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[2], ARGV[3], 'LIMIT', 0, tonumber(ARGV[4]))
elseif ARGV[1] == 'desc' then
  ids = redis.call('ZREVRANGEBYLEX', KEYS[1], ARGV[3], ARGV[2], 'LIMIT', 0, tonumber(ARGV[4]))
else
  ids = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. ARGV[2], '+', 'LIMIT', 0, tonumber(ARGV[4]))
  local older = redis.call('ZREVRANGEBYLEX', KEYS[1], '(' .. ARGV[2], '-', 'LIMIT', 0, tonumber(ARGV[4]))
  for i = 1, #older do ids[#ids + 1] = older[i] end
end
`;

/** The page's stored values (null where a message went meanwhile). */
const PAGE = `${SELECT_IDS}
if #ids == 0 then return {} end
return redis.call('HMGET', KEYS[2], unpack(ids))
`;

type PageCommand = (zset: string, hash: string, mode: string, a: string, b: string, limit: number) => Promise<Array<string | null>>;
const defined = new WeakSet<RedisClient>();

function define(redis: RedisClient): void {
  if (!defined.has(redis)) {
    redis.defineCommand('stoatMessagePage', { numberOfKeys: 2, lua: PAGE });
    defined.add(redis);
  }
}

function pageCommand(redis: RedisClient): PageCommand {
  define(redis);
  return (redis as unknown as { stoatMessagePage: PageCommand }).stoatMessagePage.bind(redis);
}

/** The arguments of a page query: mode, bounds and limit. */
function pageArgs(q: HistoryQuery): [string, string, string, number] {
  if ('nearby' in q) return ['nearby', q.nearby, '', Math.floor(q.limit / 2) + 1];
  const min = q.after === undefined ? '-' : `(${q.after}`;
  const max = q.before === undefined ? '+' : `(${q.before}`;
  return [q.sort === 'Oldest' ? 'asc' : 'desc', min, max, q.limit];
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
 * of each, in the order the query asks for. The stored values are written out as they are, their revision
 * cut off: no message is parsed or serialised. The ids are read first, then the messages (a message deleted
 * between is simply absent, as with `readHistory`).
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
  const redis = readModels.redis;
  const zset = readModels.key(rm.channelMessageIds(channelId));
  let ids: string[];
  if ('nearby' in q) {
    const n = Math.floor(q.limit / 2) + 1;
    const [newer, older] = await Promise.all([
      redis.zrangebylex(zset, `[${q.nearby}`, '+', 'LIMIT', 0, n),
      redis.zrevrangebylex(zset, `(${q.nearby}`, '-', 'LIMIT', 0, n),
    ]);
    ids = [...newer, ...older];
  } else {
    const min = q.after === undefined ? '-' : `(${q.after}`;
    const max = q.before === undefined ? '+' : `(${q.before}`;
    ids = q.sort === 'Oldest' ? await redis.zrangebylex(zset, min, max, 'LIMIT', 0, q.limit) : await redis.zrevrangebylex(zset, max, min, 'LIMIT', 0, q.limit);
  }
  if (ids.length === 0) return new Page(EMPTY_PAGE, []);
  const values = await redis.hmgetBuffer(readModels.key(rm.channelMessages(channelId)), ...ids);
  // Sizes first, then one copy of each message's wire bytes into the page (no parse, no serialisation).
  const bodies: Buffer[] = [];
  const ends: number[] = [];
  const authorAt: Array<number | string> = [];
  let total = 1;
  for (const v of values) {
    if (v === null) continue;
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
  for (const r of await readPageRaw(readModels, channelId, q)) if (r !== null) out.push(JSON.parse(r) as MessageState);
  return out;
}

async function readPageRaw(readModels: ReadModels, channelId: string, q: HistoryQuery): Promise<Array<string | null>> {
  const page = pageCommand(readModels.redis);
  return page(readModels.key(rm.channelMessageIds(channelId)), readModels.key(rm.channelMessages(channelId)), ...pageArgs(q));
}

/** One stored message of a channel, or null. */
export async function loadMessage(readModels: ReadModels, channelId: string, messageId: string): Promise<MessageState | null> {
  return readModels.hgetJson<MessageState>(rm.channelMessages(channelId), messageId);
}

/** Several stored messages of a channel (null where missing). */
export async function loadMessages(readModels: ReadModels, channelId: string, messageIds: string[]): Promise<Array<MessageState | null>> {
  return readModels.hmgetJson<MessageState>(rm.channelMessages(channelId), messageIds);
}
