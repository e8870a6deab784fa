/**
 * Private channels (Saved Notes, DMs, groups): `pchannel:<id>` (PrivateChannelState), `user:<id>:dms` (SADD /
 * SREM from the channel's partition), `dm:<a>:<b>` (the pair's DM id), `lastmsg:<id>` (the last message of a DM
 * or group). Every event of such a channel — its `channel-<id>` stream and its messages — has the channel id as scope, so one partition projects it all in
 * order and the messages projection reads the recipients from the same partition. A message sent in a
 * closed DM reopens it (Stoat shows the DM again). Emits ChannelCreate, ChannelUpdate, ChannelGroupJoin,
 * ChannelGroupLeave and ChannelDelete to exactly the users involved.
 */
import type { StoredEvent } from '../src/domain/events.ts';
import { MESSAGE_STREAM } from '../src/domain/message/events.ts';
import { privateChannelEvents } from '../src/domain/private/events.ts';
import { evolvePrivateChannel, presentPrivateChannel, recipientsOf, type PrivateChannelState } from '../src/domain/private/state.ts';
import { rm } from '../src/readmodel/keys.ts';
import { CHANNEL_STREAM } from './channels.ts';
import type { Projection, ProjectionTx } from './types.ts';

function to(userIds: string[], channelId: string) {
  return { kind: 'users', userIds, channelId } as const;
}

async function onMessageSent(e: Extract<StoredEvent, { type: 'MessageSent' }>, tx: ProjectionTx): Promise<void> {
  const channelId = e.data.message.channel;
  const channel = await tx.getJson<PrivateChannelState>(rm.privateChannel(channelId));
  if (!channel || channel.channel_type === 'SavedMessages') return;
  // Apart from the channel (`lastmsg:<id>`), so the channel itself changes only when a closed DM reopens.
  tx.setJson(rm.lastMessage(channelId), e.data.message._id);
  if (channel.channel_type === 'DirectMessage' && !channel.active) {
    tx.setJson(rm.privateChannel(channelId), { ...channel, active: true });
    tx.emit(to(channel.recipients, channelId), { type: 'ChannelUpdate', id: channelId, data: { active: true }, clear: [] });
  }
}

export const privateChannelsProjection: Projection = {
  name: 'privateChannels',
  handles: [...Object.keys(privateChannelEvents), 'MessageSent'],
  async apply(e, tx) {
    if (e.type === 'MessageSent') {
      if (e.stream.startsWith(MESSAGE_STREAM)) await onMessageSent(e, tx);
      return;
    }
    if (!e.stream.startsWith(CHANNEL_STREAM)) return;
    const channelId = e.stream.slice(CHANNEL_STREAM.length);
    const before = await tx.getJson<PrivateChannelState>(rm.privateChannel(channelId));
    const after = evolvePrivateChannel(before, e, e.revision);
    if (after) tx.setJson(rm.privateChannel(channelId), after);
    else tx.del(rm.privateChannel(channelId));
    switch (e.type) {
      case 'PrivateChannelOpened':
      case 'GroupCreated': {
        const users = recipientsOf(after!);
        for (const u of users) tx.sadd(rm.userPrivateChannels(u), channelId);
        if (e.type === 'PrivateChannelOpened') {
          const [a, b] = users.length === 1 ? [users[0]!, users[0]!] : [users[0]!, users[1]!];
          tx.setJson(rm.dmPair(a, b), channelId);
        }
        tx.emit(to(users, channelId), { type: 'ChannelCreate', ...presentPrivateChannel(after!) });
        return;
      }
      case 'DirectMessageActiveSet':
        if (after) tx.emit(to(recipientsOf(after), channelId), { type: 'ChannelUpdate', id: channelId, data: { active: e.data.active }, clear: [] });
        return;
      case 'GroupMemberAdded': {
        if (!before || !after) return;
        tx.sadd(rm.userPrivateChannels(e.data.userId), channelId);
        tx.emit(to(recipientsOf(before), channelId), { type: 'ChannelGroupJoin', id: channelId, user: e.data.userId });
        tx.emit(to([e.data.userId], channelId), { type: 'ChannelCreate', ...presentPrivateChannel(after) });
        return;
      }
      case 'GroupMemberRemoved':
        if (!before) return;
        tx.srem(rm.userPrivateChannels(e.data.userId), channelId);
        tx.emit(to(recipientsOf(before), channelId), { type: 'ChannelGroupLeave', id: channelId, user: e.data.userId });
        return;
      case 'GroupEdited':
        if (after) tx.emit(to(recipientsOf(after), channelId), { type: 'ChannelUpdate', id: channelId, data: e.data.data, clear: e.data.remove });
        return;
      case 'GroupPermissionsSet':
        if (after) tx.emit(to(recipientsOf(after), channelId), { type: 'ChannelUpdate', id: channelId, data: { permissions: e.data.permissions }, clear: [] });
        return;
      case 'GroupInviteCreated':
        tx.setJson(rm.invite(e.data.code), { type: 'Group', _id: e.data.code, creator: e.data.creator, channel: channelId });
        tx.sadd(rm.groupInvites(channelId), e.data.code);
        return;
      case 'GroupInviteDeleted':
        tx.del(rm.invite(e.data.code));
        tx.srem(rm.groupInvites(channelId), e.data.code);
        return;
      case 'GroupDeleted':
        for (const code of await tx.smembers(rm.groupInvites(channelId))) tx.del(rm.invite(code));
        tx.del(rm.groupInvites(channelId));
        for (const u of e.data.recipients) tx.srem(rm.userPrivateChannels(u), channelId);
        tx.del(rm.channelHistory(channelId));
        tx.del(rm.lastMessage(channelId));
        tx.emit(to(e.data.recipients, channelId), { type: 'ChannelDelete', id: channelId });
        return;
      default:
        return;
    }
  },
};
