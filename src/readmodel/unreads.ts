/**
 * Reading a user's read state and synced settings (projections `unreads` and `settings`), for
 * `GET /sync/unreads`, `POST /sync/settings/fetch` and the gateway's Ready.
 */
import { rm } from './keys.ts';
import type { ReadModels } from './reader.ts';

/** Stoat's ChannelUnread: `mentions` omitted when empty, `last_id` when the channel was never acked. */
export interface ChannelUnread {
  _id: { channel: string; user: string };
  last_id?: string;
  mentions?: string[];
}

/** Every channel the user has read state in: acked, or with mentions above the highest ack. */
export async function fetchUnreads(readModels: ReadModels, userId: string): Promise<ChannelUnread[]> {
  const [last, mentioned] = await Promise.all([readModels.hgetallJson<string>(rm.unreadLast(userId)), readModels.smembers(rm.unreadMentioned(userId))]);
  const withMentions = [...mentioned].sort();
  const lists = await Promise.all(withMentions.map((c) => readModels.zrangeByLex(rm.unreadMentions(userId, c), '-', '+', 100_000)));
  const mentions = new Map(withMentions.map((c, i) => [c, lists[i]!]));
  const channels = [...new Set([...last.keys(), ...withMentions])].sort();
  return channels.map((channel) => {
    const u: ChannelUnread = { _id: { channel, user: userId } };
    const l = last.get(channel);
    if (l !== undefined) u.last_id = l;
    const m = mentions.get(channel);
    if (m && m.length > 0) u.mentions = m;
    return u;
  });
}

/** The stored `[timestamp, value]` of the given keys that exist, as `[key, entry]` pairs in the order asked. */
export async function fetchSettings(readModels: ReadModels, userId: string, keys: readonly string[]): Promise<Array<[string, [number, string]]>> {
  const unique = [...new Set(keys)];
  if (unique.length === 0) return [];
  const values = await readModels.hmgetJson<[number, string]>(rm.userSettings(userId), unique);
  const out: Array<[string, [number, string]]> = [];
  unique.forEach((k, i) => {
    const v = values[i];
    if (v) out.push([k, v]);
  });
  return out;
}
