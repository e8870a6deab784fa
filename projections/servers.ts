/**
 * Servers, members, bans and invites from the `server-<id>` streams: `server:<id>` (with the stream
 * revision, so it handles every event of the stream), `server:<id>:members`, `server:<id>:bans`,
 * `server:<id>:invites`, `invite:<code>` and each member's `user:<id>:servers`. Emits the server-scoped
 * client events (reference §9); channel keys and channel events belong to `projections/channels.ts`.
 */
import { channelPermissionsOf } from '../src/domain/server/permissions.ts';
import { evolveMember, evolveServer, presentServer, type ServerState } from '../src/domain/server/state.ts';
import type { ChannelState } from '../src/domain/channel/state.ts';
import { presentChannel } from '../src/domain/channel/state.ts';
import type { EmojiObject, InviteObject, MemberObject } from '../src/domain/models.ts';
import type { StoredEvent } from '../src/domain/events.ts';
import { Permission } from '../src/permissions/bits.ts';
import { has } from '../src/permissions/calculate.ts';
import { rm } from '../src/readmodel/keys.ts';
import type { Projection, ProjectionTx } from './types.ts';
import { moderationOf } from '../src/domain/server/joinServer.ts';

/** Prefix of the server streams. */
export const SERVER_STREAM = 'server-';

/** The channels of a server that a user can see (ViewChannel), as Revolt Channel objects. */
async function visibleChannels(tx: ProjectionTx, server: ServerState, userId: string, member: MemberObject, nowMs: number) {
  const out = [];
  for (const id of server.channels) {
    const channel = await tx.getJson<ChannelState>(rm.channel(id));
    if (!channel) continue;
    if (has(channelPermissionsOf(server, userId, member, channel, nowMs), Permission.ViewChannel)) out.push(presentChannel(channel));
  }
  return out;
}

/** Removes every key of a deleted server and its members' memberships. */
async function deleteServer(tx: ProjectionTx, serverId: string): Promise<void> {
  const members = await tx.hgetallJson<MemberObject>(rm.serverMembers(serverId));
  for (const userId of members.keys()) tx.srem(rm.userServers(userId), serverId);
  for (const code of await tx.smembers(rm.serverInvites(serverId))) tx.del(rm.invite(code));
  tx.del(rm.serverInvites(serverId));
  tx.del(rm.serverMembers(serverId));
  tx.del(rm.serverBans(serverId));
  tx.del(rm.serverDeparted(serverId));
  tx.del(rm.server(serverId));
}

/** Deletes the invites that point at a deleted channel. */
async function deleteChannelInvites(tx: ProjectionTx, serverId: string, channelId: string): Promise<void> {
  for (const code of await tx.smembers(rm.serverInvites(serverId))) {
    const invite = await tx.getJson<InviteObject>(rm.invite(code));
    if (invite === null || invite.channel === channelId) {
      tx.del(rm.invite(code));
      tx.srem(rm.serverInvites(serverId), code);
    }
  }
}

async function applyMemberEvent(tx: ProjectionTx, e: StoredEvent, server: ServerState): Promise<void> {
  const serverId = server._id;
  const route = { kind: 'server', serverId } as const;
  switch (e.type) {
    case 'MemberJoined': {
      const member = e.data.member;
      const userId = member._id.user;
      tx.hsetJson(rm.serverMembers(serverId), userId, member);
      tx.hdel(rm.serverDeparted(serverId), userId);
      tx.sadd(rm.userServers(userId), serverId);
      tx.emit(route, { type: 'ServerMemberJoin', id: serverId, user: userId, member });
      // A just-joined member has no roles (a timeout carried back keeps ViewChannel), so the event's own time is as good as any clock.
      const channels = await visibleChannels(tx, server, userId, member, Date.parse(e.metadata.at));
      const emojis = [...(await tx.hgetallJson<EmojiObject>(rm.serverEmojis(serverId))).values()].sort((a, b) => (a._id < b._id ? -1 : 1));
      // Voice states belong to the voice feature, which fills them in.
      tx.emit({ kind: 'user', userId }, { type: 'ServerCreate', id: serverId, server: presentServer(server), channels, emojis, voice_states: [] });
      return;
    }
    case 'MemberEdited': {
      const before = await tx.hgetJson<MemberObject>(rm.serverMembers(serverId), e.data.userId);
      const after = evolveMember(before, e);
      if (!after) return;
      tx.hsetJson(rm.serverMembers(serverId), e.data.userId, after);
      tx.emit(route, {
        type: 'ServerMemberUpdate',
        id: { server: serverId, user: e.data.userId },
        data: e.data.data,
        clear: e.data.remove,
      });
      return;
    }
    case 'MemberLeft': {
      const gone = await tx.hgetJson<MemberObject>(rm.serverMembers(serverId), e.data.userId);
      const kept = gone ? moderationOf(gone) : undefined;
      if (kept) tx.hsetJson(rm.serverDeparted(serverId), e.data.userId, kept);
      tx.hdel(rm.serverMembers(serverId), e.data.userId);
      tx.srem(rm.userServers(e.data.userId), serverId);
      tx.emit(route, { type: 'ServerMemberLeave', id: serverId, user: e.data.userId, reason: e.data.reason });
      return;
    }
    case 'UserBanned':
      tx.hsetJson(rm.serverBans(serverId), e.data.userId, {
        _id: { server: serverId, user: e.data.userId },
        ...(e.data.reason !== undefined ? { reason: e.data.reason } : {}),
      });
      return;
    case 'UserUnbanned':
      tx.hdel(rm.serverBans(serverId), e.data.userId);
      return;
    default:
      return;
  }
}

export const serversProjection: Projection = {
  name: 'servers',
  handles: 'all',
  async apply(e, tx) {
    if (!e.stream.startsWith(SERVER_STREAM)) return;
    const serverId = e.stream.slice(SERVER_STREAM.length);
    const before = await tx.getJson<ServerState>(rm.server(serverId));
    const after = evolveServer(before, e, e.revision);
    if (!after) {
      if (before && e.type === 'ServerDeleted') {
        await deleteServer(tx, serverId);
        tx.emit({ kind: 'server', serverId }, { type: 'ServerDelete', id: serverId });
      }
      return;
    }
    tx.setJson(rm.server(serverId), after);
    const route = { kind: 'server', serverId } as const;
    switch (e.type) {
      case 'ServerEdited':
        tx.emit(route, { type: 'ServerUpdate', id: serverId, data: e.data.data, clear: e.data.remove });
        return;
      case 'ServerDefaultPermissionsSet':
        tx.emit(route, { type: 'ServerUpdate', id: serverId, data: { default_permissions: e.data.permissions }, clear: [] });
        return;
      case 'ChannelCreated':
        tx.emit(route, { type: 'ServerUpdate', id: serverId, data: { channels: after.channels }, clear: [] });
        return;
      case 'ChannelDeleted': {
        await deleteChannelInvites(tx, serverId, e.data.channelId);
        const data: Record<string, unknown> = { channels: after.channels };
        if (after.categories) data.categories = after.categories;
        if (after.system_messages) data.system_messages = after.system_messages;
        tx.emit(route, { type: 'ServerUpdate', id: serverId, data, clear: [] });
        return;
      }
      case 'RoleCreated':
        tx.emit(route, { type: 'ServerRoleUpdate', id: serverId, role_id: e.data.roleId, data: e.data.role, clear: [] });
        return;
      case 'RoleEdited':
        tx.emit(route, { type: 'ServerRoleUpdate', id: serverId, role_id: e.data.roleId, data: e.data.data, clear: e.data.remove });
        return;
      case 'RolePermissionsSet':
        tx.emit(route, {
          type: 'ServerRoleUpdate',
          id: serverId,
          role_id: e.data.roleId,
          data: { permissions: e.data.permissions },
          clear: [],
        });
        return;
      case 'RoleDeleted': {
        const members = await tx.hgetallJson<MemberObject>(rm.serverMembers(serverId));
        for (const [userId, member] of members) {
          const next = evolveMember(member, e);
          if (next && next !== member) tx.hsetJson(rm.serverMembers(serverId), userId, next);
        }
        tx.emit(route, { type: 'ServerRoleDelete', id: serverId, role_id: e.data.roleId });
        return;
      }
      case 'RoleRanksSet':
        tx.emit(route, { type: 'ServerRoleRanksUpdate', id: serverId, ranks: e.data.ranks });
        return;
      case 'InviteCreated':
        tx.setJson(rm.invite(e.data.invite._id), e.data.invite);
        tx.sadd(rm.serverInvites(serverId), e.data.invite._id);
        return;
      case 'InviteDeleted':
        tx.del(rm.invite(e.data.code));
        tx.srem(rm.serverInvites(serverId), e.data.code);
        return;
      default:
        await applyMemberEvent(tx, e, after);
    }
  },
};
