/**
 * Events of a user's read state (stream `unreads-<userId>`, scope = the user id). Acks are appended with
 * expected revision `any`: they never read or contend on a per-channel document, so an ack costs one append
 * and one small projection write, like a message send. Mentions are not events of this stream: they come
 * from `MessageSent` (`mentionedUsers`, else `message.mentions`) in the message's own partition.
 */
import { z } from 'zod';

export const unreadEvents = {
  /** The user read a channel up to and including `messageId` (a message of that channel). */
  ChannelAcked: z.object({ channelId: z.string(), messageId: z.string() }),
};

/** Stream of a user's read state. */
export const unreadsStream = (userId: string) => `unreads-${userId}`;
/** Prefix of the read-state streams. */
export const UNREADS_STREAM = 'unreads-';
