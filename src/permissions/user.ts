/**
 * Permissions of one user over another (Stoat's `calculate_user_permissions`) and the fixed channel
 * permission values of DMs, groups and Saved Notes (Stoat's `DEFAULT_PERMISSION_*`). Pure; BigInt bits.
 */
import { Permission } from './bits.ts';

/** Stoat's UserPermission bits. */
export const UserPermission = {
  Access: 1n << 0n,
  ViewProfile: 1n << 1n,
  SendMessage: 1n << 2n,
  Invite: 1n << 3n,
} as const;

/** Every user permission (what a friend, or oneself, gets). */
export const ALL_USER_PERMISSIONS = UserPermission.Access | UserPermission.ViewProfile | UserPermission.SendMessage | UserPermission.Invite;

/** ViewChannel + ReadMessageHistory. */
export const DEFAULT_PERMISSION_VIEW_ONLY = Permission.ViewChannel | Permission.ReadMessageHistory;

/** Stoat's DEFAULT_PERMISSION: view only plus sending, invites, embeds, uploads and voice. */
export const DEFAULT_PERMISSION =
  DEFAULT_PERMISSION_VIEW_ONLY |
  Permission.SendMessage |
  Permission.InviteOthers |
  Permission.SendEmbeds |
  Permission.UploadFiles |
  Permission.Connect |
  Permission.Speak |
  Permission.Listen |
  Permission.Video;

/** A DM between users who may message each other, and a group member's default without a group value. */
export const DEFAULT_PERMISSION_DIRECT_MESSAGE = DEFAULT_PERMISSION | Permission.ManageChannel | Permission.React | Permission.Masquerade;

/** What one user knows about another for the calculation. */
export interface UserPermissionFacts {
  /** The two are the same user. */
  same: boolean;
  /** How the viewer stands with the other user. */
  relationship: 'None' | 'User' | 'Friend' | 'Outgoing' | 'Incoming' | 'Blocked' | 'BlockedOther';
  /** They share a server, a group or a DM. Only consulted when the relationship does not decide. */
  mutual: boolean;
  /** The other user (the target) is a bot. */
  targetIsBot: boolean;
  /** The viewer is a bot. */
  viewerIsBot: boolean;
}

/**
 * Stoat's order: oneself and friends get everything; a block either way leaves Access only; a pending
 * request gives Access; a mutual connection, or a bot target, gives Access + ViewProfile; a mutual connection
 * with a bot on either side adds SendMessage. The one user-permission rule of the service (BigInt bits).
 */
export function userPermissions(f: UserPermissionFacts): bigint {
  if (f.same || f.relationship === 'User' || f.relationship === 'Friend') return ALL_USER_PERMISSIONS;
  if (f.relationship === 'Blocked' || f.relationship === 'BlockedOther') return UserPermission.Access;
  let value = f.relationship === 'Incoming' || f.relationship === 'Outgoing' ? UserPermission.Access : 0n;
  if (f.mutual || f.targetIsBot) value = UserPermission.Access | UserPermission.ViewProfile;
  if (f.mutual && (f.viewerIsBot || f.targetIsBot)) value |= UserPermission.SendMessage;
  return value;
}

/** Whether the relationship alone decides (no mutual-connection lookup needed). */
export function relationshipDecides(relationship: UserPermissionFacts['relationship']): boolean {
  return relationship === 'User' || relationship === 'Friend' || relationship === 'Blocked' || relationship === 'BlockedOther';
}

/** Which user permission a 403 names (Stoat's `MissingUserPermission`). */
export function userPermissionName(bit: bigint): string {
  for (const [name, value] of Object.entries(UserPermission)) if (value === bit) return name;
  return 'Access';
}
