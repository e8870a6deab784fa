/**
 * The permission engine (spec "Resolution of channel permissions", DESIGN §4 "permissions", reference §4.3,
 * §4.4, §3.5): pure functions over plain data. Callers build the subject from read models and pass the
 * facts that need a clock (`timedOut`) already decided.
 */
import { AppError } from '../errors.ts';
import { ALLOW_IN_TIMEOUT, GRANT_ALL_SAFE, Permission, permissionName } from './bits.ts';
import { own } from '../own.ts';

/** An allow/deny pair, applied as `(value | allow) & ~deny`. */
export interface Override {
  /** Bits granted. */
  readonly allow: bigint;
  /** Bits revoked (after the grant). */
  readonly deny: bigint;
}

/** One of the member's roles with its server-level override; a lower `rank` is a higher role. */
export interface SubjectRole extends Override {
  /** Role id (also the key of channel role overrides). */
  readonly id: string;
  /** Position in the server's role order; 0 is the top role. */
  readonly rank: number;
}

/** Everything the calculation needs to know about one user in one server. */
export interface PermissionSubject {
  /** The user owns the server (GrantAllSafe, every rank check passes). */
  readonly isOwner: boolean;
  /** The user is a member of the server (non-members get 0). */
  readonly isMember: boolean;
  /** The server's default permissions. */
  readonly serverDefault: bigint;
  /** The member's roles that still exist on the server, with their server-level overrides. */
  readonly memberRoles: readonly SubjectRole[];
  /** Member's can_publish (false revokes Speak and Video). */
  readonly canPublish: boolean;
  /** Member's can_receive (false revokes Listen). */
  readonly canReceive: boolean;
  /** The member's timeout lies in the future (decided by the caller's clock). */
  readonly timedOut: boolean;
}

/** A server channel's overrides. */
export interface ChannelOverrides {
  /** The channel's default permission override, if set. */
  readonly channelDefault?: Override | undefined;
  /** Channel overrides by role id; only the member's roles count. */
  readonly channelRoleOverrides: Readonly<Record<string, Override>>;
}

/** Ranking of a member without roles (Revolt's i64::MAX): below every role. */
export const NO_RANKING = Number.POSITIVE_INFINITY;

/** Ranking used for the server owner (Revolt's i64::MIN): above every role and member. */
export const OWNER_RANKING = Number.NEGATIVE_INFINITY;

/** `(value | allow) & ~deny`. */
export function applyOverride(value: bigint, override: Override): bigint {
  return (value | override.allow) & ~override.deny;
}

/**
 * The member's roles in application order: rank descending, so the lowest rank number comes last and wins.
 * Equal ranks (not produced by our rank writes) are ordered by id descending, so the result never depends on
 * the caller's order.
 */
export function rolesInApplicationOrder(roles: readonly SubjectRole[]): SubjectRole[] {
  return [...roles].sort((a, b) => b.rank - a.rank || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

/** Steps shared by both calculations after the overrides: can_publish, can_receive, timeout. */
function restrict(subject: PermissionSubject, value: bigint): bigint {
  if (!subject.canPublish) value &= ~(Permission.Speak | Permission.Video);
  if (!subject.canReceive) value &= ~Permission.Listen;
  if (subject.timedOut) value &= ALLOW_IN_TIMEOUT;
  return value;
}

/**
 * Server-level permissions: owner → GrantAllSafe; non-member → 0; otherwise server default → server-role
 * overrides (rank order) → can_publish → can_receive → timeout. No ViewChannel gate.
 */
export function serverPermissions(subject: PermissionSubject): bigint {
  if (subject.isOwner) return GRANT_ALL_SAFE;
  if (!subject.isMember) return 0n;
  let value = subject.serverDefault;
  for (const role of rolesInApplicationOrder(subject.memberRoles)) value = applyOverride(value, role);
  return restrict(subject, value);
}

/**
 * Permissions in a server channel, the spec's eight steps: server default → channel default override →
 * server-role overrides → channel-role overrides (the member's roles, rank order) → can_publish →
 * can_receive → timeout → no ViewChannel ⇒ 0. Owner → GrantAllSafe; non-member → 0.
 */
export function channelPermissions(subject: PermissionSubject, channel: ChannelOverrides): bigint {
  if (subject.isOwner) return GRANT_ALL_SAFE;
  if (!subject.isMember) return 0n;
  const roles = rolesInApplicationOrder(subject.memberRoles);
  let value = subject.serverDefault;
  if (channel.channelDefault !== undefined) value = applyOverride(value, channel.channelDefault);
  for (const role of roles) value = applyOverride(value, role);
  for (const role of roles) {
    // hasOwn: a role id such as "constructor" must not pick up Object.prototype members.
    if (Object.hasOwn(channel.channelRoleOverrides, role.id)) {
      const override = own(channel.channelRoleOverrides, role.id);
      if (override !== undefined) value = applyOverride(value, override);
    }
  }
  value = restrict(subject, value);
  if ((value & Permission.ViewChannel) === 0n) return 0n;
  return value;
}

/** Whether `value` holds every bit of `bits`. */
export function has(value: bigint, bits: bigint): boolean {
  return (value & bits) === bits;
}

/** Throws 403 MissingPermission naming the lowest bit of `bits` that `value` lacks. */
function requirePermission(value: bigint, bits: bigint): void {
  const missing = bits & ~value;
  if (missing === 0n) return;
  throw new AppError({ type: 'MissingPermission', permission: permissionName(missing & -missing) });
}
// Also exported as `require`; the longer local name keeps Node's global `require` unshadowed in this file.
export { requirePermission as require, requirePermission };

/** Checks each of `bits` in the order given; throws MissingPermission for the first one missing. */
export function requireAll(value: bigint, ...bits: bigint[]): void {
  for (const bit of bits) requirePermission(value, bit);
}

/** A member's ranking: the minimum rank of its roles, NO_RANKING (+Infinity) without roles. */
export function ranking(memberRoles: readonly { readonly rank: number }[]): number {
  let best = NO_RANKING;
  for (const role of memberRoles) if (role.rank < best) best = role.rank;
  return best;
}

/** The ranking to use in rank checks: OWNER_RANKING (−Infinity) for the owner, else `ranking(roles)`. */
export function subjectRanking(subject: Pick<PermissionSubject, 'isOwner' | 'memberRoles'>): number {
  return subject.isOwner ? OWNER_RANKING : ranking(subject.memberRoles);
}

/** Whether a role or member ranked `targetRank` sits strictly below `ourRanking` (a larger number). */
export function isElevatedOver(ourRanking: number, targetRank: number): boolean {
  return targetRank > ourRanking;
}

/**
 * Throws 403 NotElevated unless the target (a role's rank, or a member's ranking) is strictly below us.
 * Used for kick, ban, member edit of others, role edit/delete, role permission overrides (server and channel)
 * and each role added to a member.
 */
export function requireElevatedOver(ourRanking: number, targetRank: number): void {
  if (!isElevatedOver(ourRanking, targetRank)) throw new AppError({ type: 'NotElevated' });
}

/**
 * The role reorder rules (PATCH /servers/:id/roles/ranks): `newOrder` (highest first) must hold every role
 * exactly once (else 400 InvalidOperation); a non-owner may not change the position of any role ranked at or
 * above its own ranking (else 403 NotElevated). Positions compare the current order (rank ascending) with
 * `newOrder`.
 */
export function requireCanReorderRoles(
  ourRanking: number,
  roles: readonly { readonly id: string; readonly rank: number }[],
  newOrder: readonly string[],
): void {
  const ids = new Set(roles.map((r) => r.id));
  if (newOrder.length !== roles.length || new Set(newOrder).size !== newOrder.length || !newOrder.every((id) => ids.has(id))) {
    throw new AppError({ type: 'InvalidOperation' });
  }
  const current = [...roles].sort((a, b) => a.rank - b.rank || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  current.forEach((role, index) => {
    if (role.rank <= ourRanking && newOrder[index] !== role.id) throw new AppError({ type: 'NotElevated' });
  });
}

/**
 * Reference §4.4: may a caller holding `callerValue` replace override `current` by `next`? It must hold every
 * newly allowed bit (`~C.allow & N.allow`) and every newly un-denied bit (`C.deny & ~N.deny`); with no current
 * override, every bit of `N.allow`.
 */
export function canGrantOverride(callerValue: bigint, current: Override | undefined, next: Override): boolean {
  const needed = current === undefined ? next.allow : (~current.allow & next.allow) | (current.deny & ~next.deny);
  return has(callerValue, needed);
}

/** Throws 403 CannotGiveMissingPermissions unless `canGrantOverride` holds. */
export function requireCanGrant(callerValue: bigint, current: Override | undefined, next: Override): void {
  if (!canGrantOverride(callerValue, current, next)) throw new AppError({ type: 'CannotGiveMissingPermissions' });
}

/** Setting a plain value (server default permissions): the caller must hold every bit of it. */
export function requireCanGrantValue(callerValue: bigint, value: bigint): void {
  requireCanGrant(callerValue, undefined, { allow: value, deny: 0n });
}
