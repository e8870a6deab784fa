/**
 * Messages from the `message-<id>` streams: per channel, the record set `channel:<id>:history` (a sorted set of
 * the stored messages, MessageState JSON with the stream revision so it handles every event of the stream, all
 * scored 0: ZRANGEBYLEX pages in ULID order at O(log n + page), src/readmodel/records.ts). A channel's or
 * server's deletion removes its messages. Emits the message client events of reference §9 on the channel
 * route.
 */
import type { StoredEvent } from '../src/domain/events.ts';
import { MESSAGE_STREAM, messageEvents } from '../src/domain/message/events.ts';
import { evolveMessage, presentMessage, storedMessage, type MessageState } from '../src/domain/message/state.ts';
import type { ChannelState } from '../src/domain/channel/state.ts';
import { rm } from '../src/readmodel/keys.ts';
import { recipientsOf, type PrivateChannelState } from '../src/domain/private/state.ts';
import type { ClientEventRoute, Projection, ProjectionTx } from './types.ts';

/** Removes every message of a channel. */
function deleteChannelMessages(tx: ProjectionTx, channelId: string): void {
  tx.del(rm.channelHistory(channelId));
}

/**
 * Who hears of a channel's messages: a server channel's viewers, or a private channel's recipients (its
 * messages share its scope, so its state is in this partition). Null when the channel is gone.
 */
async function routeOf(tx: ProjectionTx, channelId: string): Promise<ClientEventRoute | null> {
  const channel = await tx.getJson<ChannelState>(rm.channel(channelId));
  if (channel) return { kind: 'channel', serverId: channel.server, channelId };
  const priv = await tx.getJson<PrivateChannelState>(rm.privateChannel(channelId));
  return priv ? { kind: 'users', userIds: recipientsOf(priv), channelId } : null;
}

async function applyMessageEvent(e: StoredEvent, tx: ProjectionTx): Promise<void> {
  const messageId = e.stream.slice(MESSAGE_STREAM.length);
  const channelId = e.type === 'MessageSent' ? e.data.message.channel : (e.data as { channel: string }).channel;
  const route = await routeOf(tx, channelId);
  // A message sent while its channel was being deleted lands after the deletion: nothing to keep.
  if (!route) return;
  // A new message has no earlier state, so there is nothing to read.
  const before = e.type === 'MessageSent' ? null : await tx.rgetJson<MessageState>(rm.channelHistory(channelId), messageId);
  if (e.type !== 'MessageSent' && !before) return;
  const after = evolveMessage(before, e, e.revision);
  if (!after) tx.rdel(rm.channelHistory(channelId), messageId);
  // A new message's id was never in the set: one ZADD, nothing to remove first.
  else if (!before) tx.raddJson(rm.channelHistory(channelId), messageId, storedMessage(after));
  else tx.rsetJson(rm.channelHistory(channelId), messageId, storedMessage(after));
  switch (e.type) {
    case 'MessageSent':
      tx.emit(route, { type: 'Message', ...presentMessage(after!) });
      return;
    case 'MessageEdited':
      tx.emit(route, { type: 'MessageUpdate', id: messageId, channel: channelId, data: { ...e.data.data, edited: e.data.edited }, clear: [] });
      return;
    case 'MessageAppended':
      tx.emit(route, { type: 'MessageAppend', id: messageId, channel: channelId, append: { embeds: e.data.embeds } });
      return;
    case 'MessageReacted':
      tx.emit(route, { type: 'MessageReact', id: messageId, channel_id: channelId, user_id: e.data.userId, emoji_id: e.data.emoji });
      return;
    case 'MessageUnreacted':
      tx.emit(route, { type: 'MessageUnreact', id: messageId, channel_id: channelId, user_id: e.data.userId, emoji_id: e.data.emoji });
      return;
    case 'MessageReactionRemoved':
      tx.emit(route, { type: 'MessageRemoveReaction', id: messageId, channel_id: channelId, emoji_id: e.data.emoji });
      return;
    case 'MessageReactionsCleared':
      tx.emit(route, { type: 'MessageUpdate', id: messageId, channel: channelId, data: { reactions: {} }, clear: [] });
      return;
    case 'CallFinished':
      // `_id` too: stoat.js builds a call_started system message from its message's id (the call's start time),
      // and without it the client throws on the update and keeps the call unfinished.
      if (after?.system) tx.emit(route, { type: 'MessageUpdate', id: messageId, channel: channelId, data: { _id: messageId, system: after.system }, clear: [] });
      return;
    case 'MessagePinned':
      tx.emit(route, { type: 'MessageUpdate', id: messageId, channel: channelId, data: { pinned: true }, clear: [] });
      return;
    case 'MessageUnpinned':
      tx.emit(route, { type: 'MessageUpdate', id: messageId, channel: channelId, data: {}, clear: ['Pinned'] });
      return;
    case 'MessageDeleted':
      if (e.data.bulkIds) tx.emit(route, { type: 'BulkMessageDelete', channel: channelId, ids: e.data.bulkIds });
      else if (!e.data.inBulk) tx.emit(route, { type: 'MessageDelete', id: messageId, channel: channelId });
      return;
    case 'MessageErased':
      // Clients know no erasure: Stoat's MessageDelete makes them drop it (from pins and reply previews too).
      tx.emit(route, { type: 'MessageDelete', id: messageId, channel: channelId });
      return;
    default:
      return;
  }
}

export const messagesProjection: Projection = {
  name: 'messages',
  handles: [...Object.keys(messageEvents), 'ChannelDeleted', 'ServerDeleted'],
  async apply(e, tx) {
    if (e.stream.startsWith(MESSAGE_STREAM)) return applyMessageEvent(e, tx);
    if (e.type === 'ChannelDeleted') deleteChannelMessages(tx, e.data.channelId);
    if (e.type === 'ServerDeleted') for (const id of e.data.channels) deleteChannelMessages(tx, id);
  },
};
