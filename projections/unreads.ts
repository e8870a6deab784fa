/**
 * Read state (Stoat's `channel_unreads`): per user and channel, the last acknowledged message (`last_id`)
 * and the messages that mention the user above the highest ack (`mentions`).
 *
 * Two partitions write it: a mention is added by the partition of its message (`MessageSent`, scope = the
 * server), an ack by the user's own (`ChannelAcked`, scope = the user), so the order in which they reach
 * Redis is not fixed — live it depends on the partitions' progress, in a rebuild on their speed. Both go
 * through one Lua script each, run atomically at commit, and together keep one invariant whatever the order:
 *
 *   mentions(user, channel) = { m mentioned | m > max(every ack of the user in the channel) }
 *
 * - a mention is added only when its id is above the highest ack stored (`unreads:<u>:acked`);
 * - an ack raises that highest ack (never lowers it) and removes the mentions up to its own id.
 * So a mention and an ack commute, and rebuild equals live. `last_id` is the user's latest ack in the order
 * the acks were made (one partition orders them all), so "mark as unread" (an ack of an older message)
 * moves it back, as in Stoat; the mentions it cleared stay cleared.
 *
 * An ack costs one script over four small keys of that user and channel (no read in the projection, no
 * per-channel document rewritten); a message costs one script per shard its mentioned users fall into (each
 * user's keys are in that user's shard, src/readmodel/keys.ts `shardOfKey`, and a script must stay in one slot on
 * a cluster), at most `SHARDS` (64) whatever the number of mentioned users. Emits `ChannelAck` to the user's
 * sockets.
 */
import { FLAG_SUPPRESS_NOTIFICATIONS } from '../src/domain/message/sendMessage.ts';
import { MESSAGE_STREAM } from '../src/domain/message/events.ts';
import { UNREADS_STREAM } from '../src/domain/unreads/events.ts';
import { rm, shardOf } from '../src/readmodel/keys.ts';
import type { Projection } from './types.ts';

/**
 * KEYS: per user, (acked hash, mentions zset, mentioned set), of users of one shard (one slot). ARGV: channel id,
 * message id as JSON, raw id.
 * Hash values are JSON strings of 26-character ULIDs, so comparing them as strings compares the ids.
 */
export const MENTION_SCRIPT = `
for i = 1, #KEYS, 3 do
  local acked = redis.call('HGET', KEYS[i], ARGV[1])
  if (not acked) or ARGV[2] > acked then
    redis.call('ZADD', KEYS[i + 1], 0, ARGV[3])
    redis.call('SADD', KEYS[i + 2], ARGV[1])
  end
end
return 0
`;

/** KEYS: last hash, acked hash, mentions zset, mentioned set. ARGV: channel id, message id as JSON, raw id. */
export const ACK_SCRIPT = `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local acked = redis.call('HGET', KEYS[2], ARGV[1])
if (not acked) or ARGV[2] > acked then redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]) end
redis.call('ZREMRANGEBYLEX', KEYS[3], '-', '[' .. ARGV[3])
if redis.call('EXISTS', KEYS[3]) == 0 then redis.call('SREM', KEYS[4], ARGV[1]) end
return 0
`;

export const unreadsProjection: Projection = {
  name: 'unreads',
  handles: ['MessageSent', 'ChannelAcked'],
  apply(e, tx) {
    if (e.type === 'MessageSent' && e.stream.startsWith(MESSAGE_STREAM)) {
      const m = e.data.message;
      const suppressed = ((m.flags ?? 0) & FLAG_SUPPRESS_NOTIFICATIONS) !== 0;
      const users = suppressed ? [] : (e.data.mentionedUsers ?? m.mentions ?? []);
      if (users.length === 0) return;
      // One script per shard of the mentioned users: a user's unread keys are in their user's shard, so a script
      // stays in one slot however many users it covers (at most `SHARDS` scripts for a mass mention).
      const byShard = new Map<number, string[]>();
      for (const u of new Set(users)) {
        const s = shardOf(u);
        const keys = [rm.unreadAcked(u), rm.unreadMentions(u, m.channel), rm.unreadMentioned(u)];
        const list = byShard.get(s);
        if (list) list.push(...keys);
        else byShard.set(s, keys);
      }
      for (const keys of byShard.values()) tx.eval(MENTION_SCRIPT, keys, [m.channel, JSON.stringify(m._id), m._id]);
      return;
    }
    if (e.type === 'ChannelAcked' && e.stream.startsWith(UNREADS_STREAM)) {
      const userId = e.stream.slice(UNREADS_STREAM.length);
      const { channelId, messageId } = e.data;
      tx.eval(
        ACK_SCRIPT,
        [rm.unreadLast(userId), rm.unreadAcked(userId), rm.unreadMentions(userId, channelId), rm.unreadMentioned(userId)],
        [channelId, JSON.stringify(messageId), messageId],
      );
      tx.emit({ kind: 'user', userId }, { type: 'ChannelAck', id: channelId, user: userId, message_id: messageId });
    }
  },
};
