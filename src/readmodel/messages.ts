/**
 * Reading a channel's messages (projection `messages`): a page costs O(log n + page) whatever the channel's
 * size. One Lua script per page walks the sorted set `channel:<id>:message_ids` with ZRANGEBYLEX /
 * ZREVRANGEBYLEX … LIMIT and HMGETs the page from `channel:<id>:messages`, so the ids and the messages come
 * from the same instant (a message deleted meanwhile is simply absent).
 */
import type { RedisClient } from '../redis.ts';
import type { MessageState } from '../domain/message/state.ts';
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

const PAGE = `
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
if #ids == 0 then return {} end
return redis.call('HMGET', KEYS[2], unpack(ids))
`;

type PageCommand = (zset: string, hash: string, mode: string, a: string, b: string, limit: number) => Promise<Array<string | null>>;
const defined = new WeakSet<RedisClient>();

function pageCommand(redis: RedisClient): PageCommand {
  if (!defined.has(redis)) {
    redis.defineCommand('stoatMessagePage', { numberOfKeys: 2, lua: PAGE });
    defined.add(redis);
  }
  return (redis as unknown as { stoatMessagePage: PageCommand }).stoatMessagePage.bind(redis);
}

/** One page of a channel's messages, in the order the query asks for. */
export async function readHistory(readModels: ReadModels, channelId: string, q: HistoryQuery): Promise<MessageState[]> {
  const page = pageCommand(readModels.redis);
  const zset = readModels.key(rm.channelMessageIds(channelId));
  const hash = readModels.key(rm.channelMessages(channelId));
  let raw: Array<string | null>;
  if ('nearby' in q) {
    raw = await page(zset, hash, 'nearby', q.nearby, '', Math.floor(q.limit / 2) + 1);
  } else {
    const min = q.after === undefined ? '-' : `(${q.after}`;
    const max = q.before === undefined ? '+' : `(${q.before}`;
    raw = await page(zset, hash, q.sort === 'Oldest' ? 'asc' : 'desc', min, max, q.limit);
  }
  const out: MessageState[] = [];
  for (const r of raw) if (r !== null) out.push(JSON.parse(r) as MessageState);
  return out;
}

/** One stored message of a channel, or null. */
export async function loadMessage(readModels: ReadModels, channelId: string, messageId: string): Promise<MessageState | null> {
  return readModels.hgetJson<MessageState>(rm.channelMessages(channelId), messageId);
}

/** Several stored messages of a channel (null where missing). */
export async function loadMessages(readModels: ReadModels, channelId: string, messageIds: string[]): Promise<Array<MessageState | null>> {
  return readModels.hmgetJson<MessageState>(rm.channelMessages(channelId), messageIds);
}
