/**
 * Server channels: `channel:<id>` (Stoat's TextChannel plus the `channel-<id>` revision). Created and
 * removed by server-stream events (`ServerCreated`, `ChannelCreated`, `ChannelDeleted`, `ServerDeleted`),
 * changed by every event of `channel-<id>` (so it handles every event type), cleaned of a deleted role's
 * overrides. Each message sent in it sets `lastmsg:<id>` (Stoat's `last_message_id`, kept apart so a send
 * leaves `channel:<id>` as it is; no client event: clients take it from the Message event). Emits ChannelCreate / ChannelUpdate / ChannelDelete (reference §9).
 */
import { evolveChannel, newChannelState, presentChannel, withoutRole, type ChannelState } from '../src/domain/channel/state.ts';
import type { ServerState } from '../src/domain/server/state.ts';
import { rm } from '../src/readmodel/keys.ts';
import { MESSAGE_STREAM } from '../src/domain/message/events.ts';
import { SERVER_STREAM } from './servers.ts';
import type { Projection } from './types.ts';

/** Prefix of the channel streams. */
export const CHANNEL_STREAM = 'channel-';

export const channelsProjection: Projection = {
  name: 'channels',
  handles: 'all',
  async apply(e, tx) {
    if (e.stream.startsWith(CHANNEL_STREAM)) {
      const channelId = e.stream.slice(CHANNEL_STREAM.length);
      const before = await tx.getJson<ChannelState>(rm.channel(channelId));
      if (!before) return;
      const server = await tx.getJson<ServerState>(rm.server(before.server));
      const after = evolveChannel(before, e, e.revision, (roleId) => server !== null && Object.hasOwn(server.roles, roleId));
      if (!after) return;
      tx.setJson(rm.channel(channelId), after);
      const route = { kind: 'channel', serverId: before.server, channelId } as const;
      switch (e.type) {
        case 'ChannelEdited':
          tx.emit(route, { type: 'ChannelUpdate', id: channelId, data: e.data.data, clear: e.data.remove });
          break;
        case 'ChannelDefaultPermissionsSet':
          tx.emit(route, { type: 'ChannelUpdate', id: channelId, data: { default_permissions: e.data.permissions }, clear: [] });
          break;
        case 'ChannelRolePermissionsSet':
          tx.emit(route, { type: 'ChannelUpdate', id: channelId, data: { role_permissions: after.role_permissions ?? {} }, clear: [] });
          break;
        default:
          break;
      }
      return;
    }
    if (e.type === 'MessageSent' && e.stream.startsWith(MESSAGE_STREAM)) {
      const channelId = e.data.message.channel;
      if (await tx.getJson<ChannelState>(rm.channel(channelId))) tx.setJson(rm.lastMessage(channelId), e.data.message._id);
      return;
    }
    if (!e.stream.startsWith(SERVER_STREAM)) return;
    const serverId = e.stream.slice(SERVER_STREAM.length);
    switch (e.type) {
      case 'ServerCreated':
        for (const c of e.data.channels) tx.setJson(rm.channel(c._id), newChannelState(c));
        return;
      case 'ChannelCreated': {
        const state = newChannelState(e.data.channel);
        tx.setJson(rm.channel(state._id), state);
        tx.emit({ kind: 'channel', serverId, channelId: state._id }, { type: 'ChannelCreate', ...presentChannel(state) });
        return;
      }
      case 'ChannelDeleted':
        tx.del(rm.channel(e.data.channelId));
        tx.del(rm.lastMessage(e.data.channelId));
        // The channel is gone, so no per-channel permission can be computed for it: every member is told.
        tx.emit({ kind: 'server', serverId }, { type: 'ChannelDelete', id: e.data.channelId });
        return;
      case 'RoleDeleted': {
        const server = await tx.getJson<ServerState>(rm.server(serverId));
        for (const id of server?.channels ?? []) {
          const channel = await tx.getJson<ChannelState>(rm.channel(id));
          if (!channel) continue;
          const next = withoutRole(channel, e.data.roleId);
          if (next !== channel) tx.setJson(rm.channel(id), next);
        }
        return;
      }
      case 'ServerDeleted':
        for (const id of e.data.channels) {
          tx.del(rm.channel(id));
          tx.del(rm.lastMessage(id));
        }
        return;
      default:
        return;
    }
  },
};
