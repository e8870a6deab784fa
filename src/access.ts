/**
 * Access to servers and channels for every feature (servers, messages, emoji, voice, gateway, audit): one
 * place that turns "user U wants server S / channel C" into the stored objects and the user's permission
 * value, with the membership rule of DESIGN §4 "security" built in — a missing server or channel and a
 * server the user is not a member of look the same (404 NotFound), so nobody learns about another server.
 *
 * Permission values come from the one engine (`src/permissions/calculate.ts`):
 * - `serverAccess(...).permissions` — server-level (DESIGN §4: server default → role overrides in rank
 *   order → can_publish / can_receive → timeout; no ViewChannel gate; the owner gets GrantAllSafe). Use it
 *   for ManageServer, ManageRole, KickMembers, BanMembers, TimeoutMembers, ManageCustomisation … checks.
 * - `channelAccess(...).permissions` — the spec's eight steps for the channel (owner GrantAllSafe). Use it
 *   for everything done in a channel (ViewChannel, SendMessage, Connect, Listen …).
 * A timeout counts while it lies after `deps.now()`.
 *
 * Read order matters for optimistic concurrency: the server (which carries the revision a write expects) is
 * read before the member, so a decision never pairs a newer revision with older facts.
 *
 * Typical use inside a command plan:
 * ```ts
 * const a = await channelAccess(deps, channelId, caller.userId);
 * requirePermission(a.permissions, Permission.ViewChannel);
 * requirePermission(a.permissions, Permission.SendMessage);
 * ```
 */
import { AppError } from './errors.ts';
import type { AppDeps } from './http/deps.ts';
import { presentChannel, type ChannelState } from './domain/channel/state.ts';
import { withLastMessages } from './readmodel/lastMessages.ts';
import type { MemberObject, ServerChannelObject } from './domain/models.ts';
import type { CallerFacts } from './domain/server/caller.ts';
import { channelPermissionsOf, rankingOf, serverPermissionsOf } from './domain/server/permissions.ts';
import type { ServerState } from './domain/server/state.ts';
import { GRANT_ALL_SAFE, Permission } from './permissions/bits.ts';
import { has } from './permissions/calculate.ts';
import { DEFAULT_PERMISSION_DIRECT_MESSAGE, DEFAULT_PERMISSION_VIEW_ONLY } from './permissions/user.ts';
import { statusOf, type RelationsState } from './domain/relationship/state.ts';
import { recipientsOf, type PrivateChannelState } from './domain/private/state.ts';
import { rm } from './readmodel/keys.ts';

export { requirePermission, requireAll } from './permissions/calculate.ts';
export { Permission };

/** What the access helpers need: the read models and the clock (ms). */
export type AccessDeps = Pick<AppDeps, 'readModels' | 'now'>;

/** A member's access to a server. */
export interface ServerAccess {
  /** The stored server (Revolt's Server plus `revision`, the expected revision of a write to `server-<id>`). */
  server: ServerState;
  /** The caller's member object. */
  member: MemberObject;
  /** Server-level permission value (GrantAllSafe for the owner). */
  permissions: bigint;
  /** Ranking for rank checks: −Infinity for the owner, the best rank of the caller's roles, +Infinity without roles. */
  ranking: number;
  /** The caller owns the server. */
  isOwner: boolean;
}

/** A member's access to a server channel. */
export interface ChannelAccess {
  /** A server channel. */
  kind: 'server';
  /** Partition scope of the channel's streams and messages: its server id. */
  scope: string;
  /** The stored channel (Stoat's TextChannel plus `revision`, the expected revision of `channel-<id>`; -1 = no stream yet). */
  channel: ChannelState;
  /** The channel's server. */
  server: ServerState;
  /** The caller's member object. */
  member: MemberObject;
  /** Channel permission value (the spec's eight steps; GrantAllSafe for the owner; 0 without ViewChannel). */
  permissions: bigint;
  /** The caller owns the server. */
  isOwner: boolean;
}

/** A recipient's access to a private channel (Saved Notes, DM, group). */
export interface PrivateChannelAccess {
  kind: 'private';
  /** Partition scope of the channel's streams and messages: the channel id itself. */
  scope: string;
  /** The stored channel (with the revision of `channel-<id>`). */
  channel: PrivateChannelState;
  /**
   * Stoat's values: Saved Notes GrantAllSafe; a DM Stoat's DM default when the users may message each other
   * (friends), else view only; a group GrantAllSafe for its owner, else view only plus the group's value.
   */
  permissions: bigint;
  /** The caller owns the group (or the Saved Notes). */
  isOwner: boolean;
}

/** Access to any channel: a server channel or a private one. */
export type AnyChannelAccess = ChannelAccess | PrivateChannelAccess;

/** The stored private channel, or null (no recipient check). */
export async function loadPrivateChannel(deps: AccessDeps, channelId: string): Promise<PrivateChannelState | null> {
  return deps.readModels.getJson<PrivateChannelState>(rm.privateChannel(channelId));
}

/** A user's relationships (empty when they never had any). */
export async function loadRelations(deps: AccessDeps, userId: string): Promise<RelationsState> {
  return (await deps.readModels.getJson<RelationsState>(rm.relations(userId))) ?? { userId, relations: {}, revision: -1 };
}

/** The channel permission value of a recipient of a private channel (pure; `relations` = the caller's, for DMs). */
export function privateChannelPermissions(channel: PrivateChannelState, userId: string, relations: RelationsState | null): bigint {
  switch (channel.channel_type) {
    case 'SavedMessages':
      return channel.user === userId ? GRANT_ALL_SAFE : 0n;
    case 'DirectMessage': {
      if (!channel.recipients.includes(userId)) return 0n;
      const other = channel.recipients.find((u) => u !== userId) ?? userId;
      // Sharing this DM is a mutual connection, so only friendship (or being the same user) allows SendMessage.
      const s = statusOf(relations, other);
      return s === 'Friend' || s === 'User' ? DEFAULT_PERMISSION_DIRECT_MESSAGE : DEFAULT_PERMISSION_VIEW_ONLY;
    }
    case 'Group':
      if (channel.owner === userId) return GRANT_ALL_SAFE;
      if (!channel.recipients.includes(userId)) return 0n;
      return DEFAULT_PERMISSION_VIEW_ONLY | BigInt(channel.permissions ?? Number(DEFAULT_PERMISSION_DIRECT_MESSAGE));
  }
}

/** A recipient's access to a private channel; 404 NotFound for anyone else. */
export async function privateChannelAccess(deps: AccessDeps, channel: PrivateChannelState, userId: string): Promise<PrivateChannelAccess> {
  if (!recipientsOf(channel).includes(userId)) throw new AppError({ type: 'NotFound' });
  const relations = channel.channel_type === 'DirectMessage' ? await loadRelations(deps, userId) : null;
  return {
    kind: 'private',
    scope: channel._id,
    channel,
    permissions: privateChannelPermissions(channel, userId, relations),
    isOwner: channel.channel_type === 'Group' ? channel.owner === userId : channel.channel_type === 'SavedMessages',
  };
}

/** The stored server, or null (no membership check: for internal use such as invites). */
export async function loadServer(deps: AccessDeps, serverId: string): Promise<ServerState | null> {
  return deps.readModels.getJson<ServerState>(rm.server(serverId));
}

/** A stored member, or null. */
export async function loadMember(deps: AccessDeps, serverId: string, userId: string): Promise<MemberObject | null> {
  return deps.readModels.hgetJson<MemberObject>(rm.serverMembers(serverId), userId);
}

/** The stored channel, or null (no membership check). */
export async function loadChannel(deps: AccessDeps, channelId: string): Promise<ChannelState | null> {
  return deps.readModels.getJson<ChannelState>(rm.channel(channelId));
}

/** Server and member in read order (server first); 404 NotFound for a missing server or a non-member. */
async function serverAndMember(deps: AccessDeps, serverId: string, userId: string): Promise<{ server: ServerState; member: MemberObject }> {
  const server = await loadServer(deps, serverId);
  if (!server) throw new AppError({ type: 'NotFound' });
  const member = await loadMember(deps, serverId, userId);
  if (!member) throw new AppError({ type: 'NotFound' });
  return { server, member };
}

/**
 * The caller's access to a server: the server, its member object, its server-level permissions and ranking.
 * Throws 404 NotFound when the server does not exist or the user is not a member.
 */
export async function serverAccess(deps: AccessDeps, serverId: string, userId: string): Promise<ServerAccess> {
  const { server, member } = await serverAndMember(deps, serverId, userId);
  return {
    server,
    member,
    permissions: serverPermissionsOf(server, userId, member, deps.now()),
    ranking: rankingOf(server, userId, member),
    isOwner: server.owner === userId,
  };
}

/**
 * The caller's access to a server channel: the channel, its server, the member object and the channel
 * permissions (spec's eight steps at `deps.now()`). Throws 404 NotFound when the channel does not exist or
 * the user is not a member of its server. It does not require ViewChannel: callers check the bits they need
 * (`requirePermission(a.permissions, Permission.ViewChannel)` first on channel routes → 403 MissingPermission).
 */
export async function serverChannelAccess(deps: AccessDeps, channelId: string, userId: string): Promise<ChannelAccess> {
  const channel = await loadChannel(deps, channelId);
  if (!channel) throw new AppError({ type: 'NotFound' });
  return accessToServerChannel(deps, channel, userId);
}

/**
 * The caller's access to any channel: a server channel as `serverChannelAccess` (the eight steps), else a
 * private channel (Stoat's DM / group / Saved Notes values). 404 NotFound for a missing channel, a non-member
 * of its server, or a non-recipient. Callers check the bits they need, ViewChannel first.
 */
export async function channelAccess(deps: AccessDeps, channelId: string, userId: string): Promise<AnyChannelAccess> {
  const channel = await loadChannel(deps, channelId);
  if (channel) return accessToServerChannel(deps, channel, userId);
  const priv = await loadPrivateChannel(deps, channelId);
  if (!priv) throw new AppError({ type: 'NotFound' });
  return privateChannelAccess(deps, priv, userId);
}

async function accessToServerChannel(deps: AccessDeps, channel: ChannelState, userId: string): Promise<ChannelAccess> {
  const channelId = channel._id;
  const { server, member } = await serverAndMember(deps, channel.server, userId);
  // The channel read above may predate a deletion that the server read saw: a deleted channel is gone.
  if (!server.channels.includes(channelId)) throw new AppError({ type: 'NotFound' });
  return {
    kind: 'server',
    scope: server._id,
    channel,
    server,
    member,
    permissions: channelPermissionsOf(server, userId, member, channel, deps.now()),
    isOwner: server.owner === userId,
  };
}

/** The caller facts a decision takes, from a server access (server-level value). */
export function callerFromServer(a: ServerAccess, userId: string): CallerFacts {
  return { userId, permissions: a.permissions, ranking: a.ranking, isOwner: a.isOwner };
}

/** The caller facts a decision takes, from a channel access (channel-level value, server ranking). */
export function callerFromChannel(a: ChannelAccess, userId: string): CallerFacts {
  return { userId, permissions: a.permissions, ranking: rankingOf(a.server, userId, a.member), isOwner: a.isOwner };
}

/**
 * The server's channels the user can see (ViewChannel at `deps.now()`), in the server's order, as Revolt
 * Channel objects with their `last_message_id`: what `GET /servers/:id?include_channels=true`, an invite join and the gateway's Ready and
 * ServerCreate show.
 */
export async function visibleChannels(deps: AccessDeps, server: ServerState, userId: string, member: MemberObject | null): Promise<ServerChannelObject[]> {
  const channels = await deps.readModels.mgetJson<ChannelState>(server.channels.map((id) => rm.channel(id)));
  const now = deps.now();
  const seen = channels
    .filter((c): c is ChannelState => c !== null && has(channelPermissionsOf(server, userId, member, c, now), Permission.ViewChannel))
    .map(presentChannel);
  return withLastMessages(deps.readModels, seen);
}
