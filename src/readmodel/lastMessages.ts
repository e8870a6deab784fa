/**
 * Stoat's `last_message_id` of a channel: kept in `lastmsg:<id>` apart from the channel (READ_MODEL_LAYOUT 3), so
 * a message sent leaves the channel's own record, and every API process's cached copy of it, as they were.
 * Wherever a channel is shown to a client it is merged back in here.
 */
import { rm } from './keys.ts';
import type { ReadModels } from './reader.ts';

/** How the reads go: through the fact cache (`readModels`) or around it (`readModels.direct`, the gateway's dispatcher). */
type Reads = Pick<ReadModels, 'mgetJson'>;

/** The last message id of each channel (null where none was sent), in one round trip. */
export function lastMessageIds(reads: Reads, channelIds: readonly string[]): Promise<Array<string | null>> {
  return reads.mgetJson<string>(channelIds.map((id) => rm.lastMessage(id)));
}

/** The channel objects with their `last_message_id` (left out where no message was sent), in the same order. */
export async function withLastMessages<T extends { _id: string }>(reads: Reads, channels: readonly T[]): Promise<Array<T & { last_message_id?: string }>> {
  if (channels.length === 0) return [];
  const ids = await lastMessageIds(reads, channels.map((c) => c._id));
  return channels.map((c, i) => (ids[i] ? { ...c, last_message_id: ids[i]! } : c));
}

/** One channel object with its `last_message_id`. */
export async function withLastMessage<T extends { _id: string }>(reads: Reads, channel: T): Promise<T & { last_message_id?: string }> {
  return (await withLastMessages(reads, [channel]))[0]!;
}
