/**
 * The channel aggregate's state (read model `channel:<id>`): Stoat's TextChannel shape plus the revision of
 * `channel-<id>` it reflects. It is created by the server stream's `ChannelCreated` (revision -1: the
 * channel stream has no events yet) and removed by `ChannelDeleted` / `ServerDeleted`.
 */
import type { DomainEvent } from '../events.ts';
import type { ServerChannelObject } from '../models.ts';

/** A stored server channel with the revision of its settings stream (-1 while that stream is empty). */
export type ChannelState = ServerChannelObject & {
  /** Revision of `channel-<id>`; -1 when it has no events (append with `no_stream`). */
  revision: number;
};

/** The state of a channel just created by `ChannelCreated` / `ServerCreated`. */
export function newChannelState(channel: ServerChannelObject): ChannelState {
  return { ...channel, revision: -1 };
}

/**
 * Applies one event of `channel-<id>`. A channel that no longer exists stays absent (an edit decided
 * concurrently with the deletion changes nothing). `knownRoles` filters role overrides to roles that exist.
 */
export function evolveChannel(state: ChannelState | null, e: DomainEvent, revision: number, roleExists: (roleId: string) => boolean = () => true): ChannelState | null {
  if (!state) return null;
  const s: ChannelState = { ...state, revision };
  switch (e.type) {
    case 'ChannelEdited': {
      for (const field of e.data.remove) {
        if (field === 'Description') delete s.description;
        if (field === 'Icon') delete s.icon;
        if (field === 'DefaultPermissions') delete s.default_permissions;
        if (field === 'Voice') delete s.voice;
        if (field === 'Slowmode') delete s.slowmode;
      }
      const d = e.data.data;
      if (d.name !== undefined) s.name = d.name;
      if (d.description !== undefined) s.description = d.description;
      if (d.icon !== undefined) s.icon = d.icon;
      if (d.nsfw === true) s.nsfw = true;
      if (d.nsfw === false) delete s.nsfw;
      if (d.voice !== undefined) s.voice = d.voice;
      if (d.slowmode !== undefined) s.slowmode = d.slowmode;
      return s;
    }
    case 'ChannelDefaultPermissionsSet':
      s.default_permissions = e.data.permissions;
      return s;
    case 'ChannelRolePermissionsSet':
      if (roleExists(e.data.roleId)) s.role_permissions = { ...(s.role_permissions ?? {}), [e.data.roleId]: e.data.permissions };
      return s;
    default:
      return s;
  }
}

/** The channel without a deleted role's override (server stream `RoleDeleted`; the revision is unchanged). */
export function withoutRole(state: ChannelState, roleId: string): ChannelState {
  if (!state.role_permissions || !Object.hasOwn(state.role_permissions, roleId)) return state;
  const { [roleId]: _gone, ...rest } = state.role_permissions;
  const s: ChannelState = { ...state };
  if (Object.keys(rest).length > 0) s.role_permissions = rest;
  else delete s.role_permissions;
  return s;
}

/** Revolt's Channel JSON from the stored state (no revision). */
export function presentChannel(s: ChannelState): ServerChannelObject {
  const { revision: _revision, ...channel } = s;
  return channel;
}
