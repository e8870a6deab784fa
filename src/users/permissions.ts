/**
 * What one user may do to another (Stoat's `calculate_user_permissions`), as a pure function over facts,
 * plus the loader of those facts: same user, the relationship (friends, requests, blocks), a mutual
 * connection (a shared server, DM or group) and whether either is a bot.
 */
import { rm } from '../readmodel/keys.ts';
import { loadPrivateChannel, loadRelations, type AccessDeps } from '../access.ts';
import { recipientsOf } from '../domain/private/state.ts';
import { statusOf } from '../domain/relationship/state.ts';

/** Stoat's user permission bits. */
export const UserPermission = {
  Access: 1,
  ViewProfile: 2,
  SendMessage: 4,
  Invite: 8,
} as const;

/** Every user permission (Stoat answers u64::MAX for these cases). */
const ALL = UserPermission.Access | UserPermission.ViewProfile | UserPermission.SendMessage | UserPermission.Invite;

/** Stoat's relationship status between the viewer and the target, from the viewer's side. */
export type RelationshipStatus = 'None' | 'User' | 'Friend' | 'Outgoing' | 'Incoming' | 'Blocked' | 'BlockedOther';

/** The facts the rule reads. */
export interface UserFacts {
  /** Viewer and target are the same user. */
  same: boolean;
  /** The viewer's relationship with the target. */
  relationship: RelationshipStatus;
  /** They share a server, a group or a DM. */
  mutual: boolean;
  /** The target is a bot. */
  targetIsBot: boolean;
  /** The viewer is a bot. */
  viewerIsBot: boolean;
}

/** Stoat's rule: self and friends get everything; blocks only Access; a mutual connection or a bot target ViewProfile. */
export function userPermissions(f: UserFacts): number {
  if (f.same) return ALL;
  let p = 0;
  switch (f.relationship) {
    case 'Friend':
      return ALL;
    case 'Blocked':
    case 'BlockedOther':
      return UserPermission.Access;
    case 'Incoming':
    case 'Outgoing':
      p = UserPermission.Access;
      break;
    default:
      break;
  }
  if (f.mutual || f.targetIsBot) p = UserPermission.Access | UserPermission.ViewProfile;
  if (f.mutual && (f.viewerIsBot || f.targetIsBot)) p |= UserPermission.SendMessage;
  return p;
}

/** Whether the two users are recipients of one DM or group (the per-user lists are hints: recipients decide). */
export async function shareChannel(deps: AccessDeps, a: string, b: string): Promise<boolean> {
  const [mine, theirs] = await Promise.all([deps.readModels.smembers(rm.userPrivateChannels(a)), deps.readModels.smembers(rm.userPrivateChannels(b))]);
  const theirSet = new Set(theirs);
  for (const channelId of mine.filter((c) => theirSet.has(c))) {
    const channel = await loadPrivateChannel(deps, channelId);
    if (channel && channel.channel_type !== 'SavedMessages') {
      const recipients = recipientsOf(channel);
      if (recipients.includes(a) && recipients.includes(b)) return true;
    }
  }
  return false;
}

/** Whether the two users are both members of some server (the server lists are hints: membership is checked). */
export async function shareServer(deps: AccessDeps, a: string, b: string): Promise<boolean> {
  const [mine, theirs] = await Promise.all([deps.readModels.smembers(rm.userServers(a)), deps.readModels.smembers(rm.userServers(b))]);
  const theirSet = new Set(theirs);
  const common = mine.filter((s) => theirSet.has(s));
  for (const serverId of common) {
    const [ma, mb] = await Promise.all([
      deps.readModels.hgetJson(rm.serverMembers(serverId), a),
      deps.readModels.hgetJson(rm.serverMembers(serverId), b),
    ]);
    if (ma && mb) return true;
  }
  return false;
}

/** Loads the facts between viewer and target (the target exists) and applies the rule. */
export async function loadUserPermissions(deps: AccessDeps, viewerId: string, target: { _id: string; bot?: unknown }): Promise<number> {
  if (viewerId === target._id) return ALL;
  const [relationship, servers, channels] = await Promise.all([
    loadRelations(deps, viewerId).then((r) => statusOf(r, target._id) as RelationshipStatus),
    shareServer(deps, viewerId, target._id),
    shareChannel(deps, viewerId, target._id),
  ]);
  const viewer = await deps.readModels.getJson<{ bot?: unknown }>(rm.user(viewerId));
  return userPermissions({
    same: false,
    relationship,
    mutual: servers || channels,
    targetIsBot: target.bot != null,
    viewerIsBot: viewer?.bot != null,
  });
}
