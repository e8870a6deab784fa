/**
 * Who a DM or group call rings. `join_call`'s `recipients` (Stoat's DataJoinCall) name them when the call has
 * nobody in it yet; they are kept for `RING_SECONDS` (the time for the client to connect to LiveKit and for
 * LiveKit's join webhook to arrive), then the webhook of that first join takes them into its
 * `VoiceParticipantJoined`, where the log keeps who was rung. Without such a list every other recipient is
 * rung; a list only narrows it (an id that is no recipient is never rung).
 */
import type { PrivateChannelState } from '../domain/private/state.ts';
import { recipientsOf } from '../domain/private/state.ts';
import type { RedisClient } from '../redis.ts';

/** How long `join_call`'s ring list waits for the join it announces. */
export const RING_SECONDS = 10;

function ringKey(prefix: string, channelId: string, userId: string): string {
  return `${prefix}ring:${channelId}:${userId}`;
}

/** Keeps the users `userId`'s call in `channelId` is to ring. */
export async function rememberRing(redis: RedisClient, prefix: string, channelId: string, userId: string, users: readonly string[]): Promise<void> {
  await redis.set(ringKey(prefix, channelId, userId), JSON.stringify([...new Set(users)]), 'EX', RING_SECONDS);
}

/** Who the first join of `userId` in the channel rings (the list `join_call` kept, taken once, or every other recipient). */
export async function takeRing(redis: RedisClient, prefix: string, channel: PrivateChannelState, userId: string): Promise<string[]> {
  const others = recipientsOf(channel).filter((u) => u !== userId);
  const kept = await redis.getdel(ringKey(prefix, channel._id, userId));
  if (kept === null) return others;
  let asked: unknown;
  try {
    asked = JSON.parse(kept);
  } catch {
    return others;
  }
  const wanted = new Set(Array.isArray(asked) ? asked.filter((u): u is string => typeof u === 'string') : []);
  return others.filter((u) => wanted.has(u));
}
