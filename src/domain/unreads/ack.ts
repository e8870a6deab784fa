/**
 * Acknowledging messages (Stoat's `channel_ack` and `server_ack`): pure decisions over facts the routes
 * load. An ack of the message already acknowledged last is a no-op (nothing appended): clients re-send acks
 * freely, and such an ack could change nothing (every mention it would clear was cleared by the first).
 */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';

/** Input of AckChannel. */
export interface AckChannel {
  channelId: string;
  messageId: string;
}

/** Facts for AckChannel. */
export interface AckChannelFacts {
  /** The caller's permission value in the channel. */
  permissions: bigint;
  /** The message is in the channel (or is its `last_message_id`: the last message, possibly deleted since). */
  inChannel: boolean;
  /** The message the caller acknowledged last in the channel, or null. */
  lastId: string | null;
}

/** ViewChannel (403), then the message must be in the channel (404 NotFound). */
export function decideAckChannel(cmd: AckChannel, facts: AckChannelFacts): DomainEvent[] {
  requirePermission(facts.permissions, Permission.ViewChannel);
  if (!facts.inChannel) throw new AppError({ type: 'NotFound' });
  if (facts.lastId === cmd.messageId) return [];
  return [{ type: 'ChannelAcked', data: { channelId: cmd.channelId, messageId: cmd.messageId } }];
}

/** A channel of the server the caller can view, with its last message and the caller's last ack there. */
export interface ServerAckChannel {
  channelId: string;
  lastMessageId: string | undefined;
  lastId: string | null;
}

/**
 * Marks a server read (Stoat's `ack_server`): every channel the caller can view that has messages is
 * acknowledged up to its last message; channels already acknowledged there are left alone.
 */
export function decideAckServer(channels: readonly ServerAckChannel[]): DomainEvent[] {
  return channels
    .filter((c) => c.lastMessageId !== undefined && c.lastMessageId !== c.lastId)
    .map((c) => ({ type: 'ChannelAcked' as const, data: { channelId: c.channelId, messageId: c.lastMessageId! } }));
}
