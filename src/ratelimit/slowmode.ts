/**
 * Channel slowmode (Stoat's `message_send.rs`): after a message in a channel with `slowmode = N` seconds, its
 * sender waits N seconds before the next one there. The state lives in Redis, not in a process, so it holds
 * across API processes: `slowmode:{<user>}:<channel>` holds `<token> <until ms>` and expires at `until`;
 * `slowmode:{<user>}` indexes the user's channels for the `UserSlowmodes` sent after Ready (bonfire's
 * `slowmode_idx`). Both keys share the user's hash tag, so one script touches them on a Redis Cluster.
 *
 * A claim is one script: two sends racing at the boundary both run it, and exactly one gets the slot. The
 * token is the message id, so a command that retries (optimistic concurrency) finds its own claim, and a
 * send refused after claiming gives the slot back (`releaseSlowmode`) without freeing somebody else's.
 */
import type { RedisClient } from '../redis.ts';

/** One of a user's active slowmodes, as Stoat's `ChannelSlowmode` (seconds). */
export interface ChannelSlowmode {
  channel_id: string;
  /** The channel's slowmode delay (seconds). */
  duration: number;
  /** Seconds until the user may send there again. */
  retry_after: number;
}

const key = (prefix: string, userId: string, channelId: string) => `${prefix}slowmode:{${userId}}:${channelId}`;
const indexKey = (prefix: string, userId: string) => `${prefix}slowmode:{${userId}}`;

/**
 * KEYS: slot, index. ARGV: token, now (ms), delay (ms), channel id. Returns 0 when the slot is the caller's
 * (taken now or by an earlier run of the same command), else the milliseconds left.
 */
const CLAIM = `
local cur = redis.call('GET', KEYS[1])
local now = tonumber(ARGV[2])
if cur then
  local sp = string.find(cur, ' ', 1, true)
  local token = string.sub(cur, 1, sp - 1)
  local untilMs = tonumber(string.sub(cur, sp + 1))
  if token == ARGV[1] then return 0 end
  if untilMs > now then return untilMs - now end
end
local delay = tonumber(ARGV[3])
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. (now + delay), 'PX', delay)
redis.call('SADD', KEYS[2], ARGV[4])
if redis.call('PTTL', KEYS[2]) < delay then redis.call('PEXPIRE', KEYS[2], delay) end
return 0`;

/** KEYS: slot. ARGV: token. Deletes the slot only while it is the token's. */
const RELEASE = `
local cur = redis.call('GET', KEYS[1])
if cur and string.sub(cur, 1, string.len(ARGV[1]) + 1) == ARGV[1] .. ' ' then return redis.call('DEL', KEYS[1]) end
return 0`;

/** Claims the user's slot in the channel for `seconds`; 0 when claimed, else the milliseconds left of the current one. */
export async function claimSlowmode(
  redis: RedisClient,
  prefix: string,
  c: { userId: string; channelId: string; seconds: number; token: string; now: number },
): Promise<number> {
  const left = await redis.eval(CLAIM, 2, key(prefix, c.userId, c.channelId), indexKey(prefix, c.userId), c.token, String(c.now), String(c.seconds * 1000), c.channelId);
  return Number(left);
}

/** Gives back a slot claimed with `token` (a send refused after claiming it); someone else's claim stays. */
export async function releaseSlowmode(redis: RedisClient, prefix: string, userId: string, channelId: string, token: string): Promise<void> {
  await redis.eval(RELEASE, 1, key(prefix, userId, channelId), token);
}

/** Seconds (rounded up) of a wait in milliseconds: Stoat's `retry_after`. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/**
 * The user's active slowmodes at `now`, for the `UserSlowmodes` after Ready (bonfire's `fetch_user_slowmodes`:
 * `duration` is what is left, as bonfire sends it). Expired channels are dropped from the index.
 */
export async function activeSlowmodes(redis: RedisClient, prefix: string, userId: string, now: number): Promise<ChannelSlowmode[]> {
  const channels = await redis.smembers(indexKey(prefix, userId));
  if (channels.length === 0) return [];
  const values = await redis.mget(...channels.map((c) => key(prefix, userId, c)));
  const out: ChannelSlowmode[] = [];
  const expired: string[] = [];
  channels.forEach((channelId, i) => {
    const v = values[i];
    const untilMs = v ? Number(v.slice(v.indexOf(' ') + 1)) : 0;
    if (untilMs > now) {
      const left = retryAfterSeconds(untilMs - now);
      out.push({ channel_id: channelId, duration: left, retry_after: left });
    } else expired.push(channelId);
  });
  if (expired.length > 0) await redis.srem(indexKey(prefix, userId), ...expired);
  return out;
}
