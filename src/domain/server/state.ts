/**
 * The server aggregate's state (one `evolve` per part): the server itself (read model `server:<id>`,
 * Revolt's Server shape plus the stream revision), its members (`server:<id>:members`) and its bans
 * (`server:<id>:bans`). Projections apply these same functions; decisions see a `ServerView`.
 */
import type { DomainEvent } from '../events.ts';
import type { FileObject } from '../shared.ts';
import type { CategoryObject, MemberObject, RoleObject, ServerBanObject, SystemMessagesObject } from '../models.ts';
import { own, setOwn } from '../../own.ts';

/** The stored server: Revolt's Server (reference §8) plus the revision of `server-<id>` it reflects. */
export interface ServerState {
  _id: string;
  owner: string;
  name: string;
  description?: string;
  /** Channel ids, in creation order. */
  channels: string[];
  categories?: CategoryObject[];
  system_messages?: SystemMessagesObject;
  /** Roles by id (kept even when empty; presenting omits an empty map). */
  roles: Record<string, RoleObject>;
  /** Permission value every member starts from. */
  default_permissions: number;
  /** Server icon (an `icons` upload). */
  icon?: FileObject;
  /** Server banner (a `banners` upload). */
  banner?: FileObject;
  nsfw?: true;
  analytics?: boolean;
  /** Stoat's server flags (1 Verified, 2 Official), set by instance admins. */
  flags?: number;
  /** Listed in discovery (set by instance admins). */
  discoverable?: boolean;
  /** Ids of the server's custom emoji, oldest first; omitted when none (not part of Revolt's Server). */
  emojis?: string[];
  /** Revision of the `server-<id>` stream this state reflects (the expected revision of the next write). */
  revision: number;
}

/** What a decision about a server sees: the server and the members and bans it loaded. */
export interface ServerView {
  server: ServerState;
  /** Members by user id (only those the command needs, or all in tests). */
  members: Record<string, MemberObject>;
  /** Bans by user id (only those the command needs, or all in tests). */
  bans: Record<string, ServerBanObject>;
}

/** Applies one event of `server-<id>` to the server; null once deleted (or before creation). */
export function evolveServer(state: ServerState | null, e: DomainEvent, revision: number): ServerState | null {
  if (e.type === 'ServerCreated') {
    const s: ServerState = {
      _id: e.data.server._id,
      owner: e.data.server.owner,
      name: e.data.server.name,
      channels: e.data.channels.map((c) => c._id),
      roles: {},
      default_permissions: e.data.server.default_permissions,
      revision,
    };
    if (e.data.server.description !== undefined) s.description = e.data.server.description;
    if (e.data.server.nsfw) s.nsfw = true;
    return s;
  }
  if (!state) return null;
  const s: ServerState = { ...state, revision };
  switch (e.type) {
    case 'ServerEdited': {
      for (const field of e.data.remove) {
        if (field === 'Description') delete s.description;
        if (field === 'Categories') delete s.categories;
        if (field === 'SystemMessages') delete s.system_messages;
        if (field === 'Icon') delete s.icon;
        if (field === 'Banner') delete s.banner;
      }
      const d = e.data.data;
      if (d.name !== undefined) s.name = d.name;
      if (d.description !== undefined) s.description = d.description;
      if (d.categories !== undefined) s.categories = d.categories;
      if (d.system_messages !== undefined) s.system_messages = d.system_messages;
      if (d.analytics !== undefined) s.analytics = d.analytics;
      if (d.icon !== undefined) s.icon = d.icon;
      if (d.banner !== undefined) s.banner = d.banner;
      if (d.flags !== undefined) s.flags = d.flags;
      if (d.discoverable !== undefined) s.discoverable = d.discoverable;
      return s;
    }
    case 'ServerDefaultPermissionsSet':
      s.default_permissions = e.data.permissions;
      return s;
    case 'ServerDeleted':
      return null;
    case 'ChannelCreated':
      s.channels = [...s.channels, e.data.channel._id];
      return s;
    case 'ChannelDeleted':
      return withoutChannel(s, e.data.channelId);
    case 'RoleCreated':
      s.roles = { ...s.roles, [e.data.roleId]: e.data.role };
      return s;
    case 'RoleEdited': {
      const cur = own(s.roles, e.data.roleId);
      if (!cur) return s;
      const role: RoleObject = { ...cur };
      if (e.data.remove.includes('Colour')) delete role.colour;
      if (e.data.remove.includes('Icon')) delete role.icon;
      if (e.data.data.icon !== undefined) role.icon = e.data.data.icon;
      if (e.data.data.name !== undefined) role.name = e.data.data.name;
      if (e.data.data.colour !== undefined) role.colour = e.data.data.colour;
      if (e.data.data.hoist === true) role.hoist = true;
      if (e.data.data.hoist === false) delete role.hoist;
      s.roles = { ...s.roles, [e.data.roleId]: role };
      return s;
    }
    case 'RolePermissionsSet': {
      const cur = own(s.roles, e.data.roleId);
      if (cur) s.roles = { ...s.roles, [e.data.roleId]: { ...cur, permissions: e.data.permissions } };
      return s;
    }
    case 'RoleDeleted': {
      const { [e.data.roleId]: _gone, ...rest } = s.roles;
      s.roles = rest;
      return s;
    }
    case 'EmojiCreated':
      s.emojis = [...(s.emojis ?? []), e.data.emoji._id];
      return s;
    case 'EmojiDeleted': {
      const emojis = (s.emojis ?? []).filter((id) => id !== e.data.emojiId);
      if (emojis.length > 0) s.emojis = emojis;
      else delete s.emojis;
      return s;
    }
    case 'RoleRanksSet': {
      const roles: Record<string, RoleObject> = { ...s.roles };
      e.data.ranks.forEach((id, rank) => {
        const cur = own(roles, id);
        if (cur) setOwn(roles, id, { ...cur, rank });
      });
      s.roles = roles;
      return s;
    }
    default:
      return s;
  }
}

/** The server without a channel: out of `channels`, every category and the system-message settings. */
function withoutChannel(s: ServerState, channelId: string): ServerState {
  s.channels = s.channels.filter((id) => id !== channelId);
  if (s.categories) s.categories = s.categories.map((c) => ({ ...c, channels: c.channels.filter((id) => id !== channelId) }));
  if (s.system_messages) {
    const sm: SystemMessagesObject = {};
    for (const [k, v] of Object.entries(s.system_messages) as Array<[keyof SystemMessagesObject, string]>) {
      if (v !== channelId) setOwn(sm, k, v);
    }
    s.system_messages = sm;
  }
  return s;
}

/** Applies one server-stream event to one member (the member named by the event, or every member for `RoleDeleted`). */
export function evolveMember(member: MemberObject | null, e: DomainEvent): MemberObject | null {
  if (e.type === 'MemberJoined') return e.data.member;
  if (!member) return null;
  switch (e.type) {
    case 'MemberEdited': {
      const m: MemberObject = { ...member };
      for (const field of e.data.remove) {
        if (field === 'Nickname') delete m.nickname;
        if (field === 'Avatar') delete m.avatar;
        if (field === 'Roles') delete m.roles;
        if (field === 'Timeout') delete m.timeout;
        if (field === 'CanPublish') delete m.can_publish;
        if (field === 'CanReceive') delete m.can_receive;
      }
      const d = e.data.data;
      if (d.nickname !== undefined) m.nickname = d.nickname;
      if (d.avatar !== undefined) m.avatar = d.avatar;
      if (d.roles !== undefined) {
        if (d.roles.length > 0) m.roles = d.roles;
        else delete m.roles;
      }
      if (d.timeout !== undefined) m.timeout = d.timeout;
      if (d.can_publish === false) m.can_publish = false;
      if (d.can_publish === true) delete m.can_publish;
      if (d.can_receive === false) m.can_receive = false;
      if (d.can_receive === true) delete m.can_receive;
      return m;
    }
    case 'RoleDeleted': {
      if (!member.roles?.includes(e.data.roleId)) return member;
      const m: MemberObject = { ...member };
      const roles = member.roles.filter((id) => id !== e.data.roleId);
      if (roles.length > 0) m.roles = roles;
      else delete m.roles;
      return m;
    }
    case 'MemberLeft':
    case 'ServerDeleted':
      return null;
    default:
      return member;
  }
}

/** The user a member-scoped server event is about, or undefined for server-wide events. */
export function memberEventUser(e: DomainEvent): string | undefined {
  switch (e.type) {
    case 'MemberJoined':
      return e.data.member._id.user;
    case 'MemberEdited':
    case 'MemberLeft':
    case 'UserBanned':
    case 'UserUnbanned':
      return e.data.userId;
    default:
      return undefined;
  }
}

/** Applies one event to the view a decision sees (tests build views from events with it). */
export function evolveView(view: ServerView | null, e: DomainEvent, revision: number): ServerView | null {
  const server = evolveServer(view?.server ?? null, e, revision);
  if (!server) return null;
  const members = { ...(view?.members ?? {}) };
  const bans = { ...(view?.bans ?? {}) };
  if (e.type === 'RoleDeleted') {
    for (const [id, m] of Object.entries(members)) setOwn(members, id, evolveMember(m, e)!);
  }
  const userId = memberEventUser(e);
  if (userId !== undefined) {
    const m = evolveMember(own(members, userId) ?? null, e);
    if (m) setOwn(members, userId, m);
    else delete members[userId];
    if (e.type === 'UserBanned') {
      setOwn(bans, userId, { _id: { server: server._id, user: userId }, ...(e.data.reason !== undefined ? { reason: e.data.reason } : {}) });
    }
    if (e.type === 'UserUnbanned') delete bans[userId];
  }
  return { server, members, bans };
}

/** Revolt's Server JSON from the stored state (no revision or emoji ids; `roles` omitted when empty). */
export function presentServer(s: ServerState): Record<string, unknown> {
  const { revision: _revision, emojis: _emojis, roles, ...rest } = s;
  return Object.keys(roles).length > 0 ? { ...rest, roles } : rest;
}
