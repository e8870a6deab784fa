/**
 * The private channel aggregate's state (read model `pchannel:<id>`): the channel as served plus the revision
 * of `channel-<id>`. One `evolve` for the projection and the decider tests.
 */
import type { DomainEvent } from '../events.ts';
import type { PrivateChannelObject } from './events.ts';

/** A stored private channel with the revision of its stream. */
export type PrivateChannelState = PrivateChannelObject & { revision: number };

/** Who belongs to a private channel (Saved Notes: its user). */
export function recipientsOf(c: PrivateChannelObject): string[] {
  return c.channel_type === 'SavedMessages' ? [c.user] : c.recipients;
}

/** Applies one event of `channel-<id>`; null once the group is deleted. */
export function evolvePrivateChannel(state: PrivateChannelState | null, e: DomainEvent, revision: number): PrivateChannelState | null {
  switch (e.type) {
    case 'PrivateChannelOpened':
    case 'GroupCreated':
      return { ...e.data.channel, revision };
    case 'GroupDeleted':
      return null;
    default:
      break;
  }
  if (!state) return null;
  const s = { ...state, revision } as PrivateChannelState;
  switch (e.type) {
    case 'DirectMessageActiveSet':
      if (s.channel_type === 'DirectMessage') s.active = e.data.active;
      return s;
    case 'GroupMemberAdded':
      if (s.channel_type === 'Group' && !s.recipients.includes(e.data.userId)) s.recipients = [...s.recipients, e.data.userId];
      return s;
    case 'GroupMemberRemoved':
      if (s.channel_type === 'Group') s.recipients = s.recipients.filter((u) => u !== e.data.userId);
      return s;
    case 'GroupEdited':
      if (s.channel_type !== 'Group') return s;
      for (const f of e.data.remove) {
        if (f === 'Description') delete s.description;
        if (f === 'Icon') delete s.icon;
      }
      if (e.data.data.name !== undefined) s.name = e.data.data.name;
      if (e.data.data.description !== undefined) s.description = e.data.data.description;
      if (e.data.data.icon !== undefined) s.icon = e.data.data.icon;
      if (e.data.data.owner !== undefined) s.owner = e.data.data.owner;
      if (e.data.data.nsfw === true) s.nsfw = true;
      if (e.data.data.nsfw === false) delete s.nsfw;
      return s;
    case 'GroupPermissionsSet':
      if (s.channel_type === 'Group') s.permissions = e.data.permissions;
      return s;
    default:
      return s;
  }
}

/** The channel as clients get it (no revision). */
export function presentPrivateChannel(s: PrivateChannelState): PrivateChannelObject {
  const { revision: _revision, ...channel } = s;
  return channel as PrivateChannelObject;
}
