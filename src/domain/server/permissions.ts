/**
 * From stored shapes to the permission engine (`src/permissions/calculate.ts`): the permission subject of a
 * user in a server, their server-level and channel-level values and their ranking. Pure: the clock is a
 * parameter (a timeout counts while it lies after `nowMs`).
 */
import {
  channelPermissions,
  serverPermissions,
  subjectRanking,
  type ChannelOverrides,
  type Override,
  type PermissionSubject,
  type SubjectRole,
} from '../../permissions/calculate.ts';
import type { MemberObject, OverrideField, ServerChannelObject } from '../models.ts';
import type { ServerState } from './state.ts';
import { setOwn } from '../../own.ts';

/** A stored `{a, d}` as an engine override. */
export function toOverride(field: OverrideField): Override {
  return { allow: BigInt(field.a), deny: BigInt(field.d) };
}

/** An engine override as stored `{a, d}` (values hold defined bits only, so they are safe integers). */
export function toOverrideField(o: Override): OverrideField {
  return { a: Number(o.allow), d: Number(o.deny) };
}

/** True while the member's timeout lies in the future. */
export function isTimedOut(member: Pick<MemberObject, 'timeout'> | null | undefined, nowMs: number): boolean {
  return member?.timeout !== undefined && Date.parse(member.timeout) > nowMs;
}

/** The member's roles that still exist on the server, with their overrides and ranks. */
export function memberRoles(server: ServerState, member: Pick<MemberObject, 'roles'> | null | undefined): SubjectRole[] {
  const out: SubjectRole[] = [];
  for (const id of member?.roles ?? []) {
    if (!Object.hasOwn(server.roles, id)) continue;
    const role = server.roles[id]!;
    out.push({ id, rank: role.rank, ...toOverride(role.permissions) });
  }
  return out;
}

/** The permission subject of `userId` (member or not) in `server` at time `nowMs`. */
export function permissionSubject(server: ServerState, userId: string, member: MemberObject | null | undefined, nowMs: number): PermissionSubject {
  return {
    isOwner: server.owner === userId,
    isMember: member !== null && member !== undefined,
    serverDefault: BigInt(server.default_permissions),
    memberRoles: memberRoles(server, member),
    canPublish: member?.can_publish !== false,
    canReceive: member?.can_receive !== false,
    timedOut: isTimedOut(member, nowMs),
  };
}

/** The overrides of a server channel, for the engine. */
export function channelOverrides(channel: Pick<ServerChannelObject, 'default_permissions' | 'role_permissions'>): ChannelOverrides {
  const roleOverrides: Record<string, Override> = {};
  for (const [id, o] of Object.entries(channel.role_permissions ?? {})) setOwn(roleOverrides, id, toOverride(o));
  return {
    channelDefault: channel.default_permissions ? toOverride(channel.default_permissions) : undefined,
    channelRoleOverrides: roleOverrides,
  };
}

/** Server-level permissions of a user (DESIGN §4: no channel steps, no ViewChannel gate; owner GrantAllSafe). */
export function serverPermissionsOf(server: ServerState, userId: string, member: MemberObject | null | undefined, nowMs: number): bigint {
  return serverPermissions(permissionSubject(server, userId, member, nowMs));
}

/** Channel permissions of a user (the spec's eight steps; owner GrantAllSafe). */
export function channelPermissionsOf(
  server: ServerState,
  userId: string,
  member: MemberObject | null | undefined,
  channel: Pick<ServerChannelObject, 'default_permissions' | 'role_permissions'>,
  nowMs: number,
): bigint {
  return channelPermissions(permissionSubject(server, userId, member, nowMs), channelOverrides(channel));
}

/** Ranking for rank checks: −Infinity for the owner, the best rank of the member's roles, +Infinity without roles. */
export function rankingOf(server: ServerState, userId: string, member: MemberObject | null | undefined): number {
  return subjectRanking({ isOwner: server.owner === userId, memberRoles: memberRoles(server, member) });
}

/** Ranking of a member as a target of kick/ban/edit (Revolt's `get_ranking`: the owner is not special here). */
export function memberRanking(server: ServerState, member: MemberObject | null | undefined): number {
  return subjectRanking({ isOwner: false, memberRoles: memberRoles(server, member) });
}
