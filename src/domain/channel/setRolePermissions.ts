/** SetChannelRolePermissions: PUT /channels/:id/permissions/:role_id (reference §3.6, §4.4). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission, requireCanGrant, requireElevatedOver, type Override } from '../../permissions/calculate.ts';
import type { CallerContext } from '../server/caller.ts';
import { toOverride, toOverrideField } from '../server/permissions.ts';
import type { DomainEvent } from '../events.ts';
import type { RoleObject } from '../models.ts';
import type { ChannelState } from './state.ts';

/** Input of SetChannelRolePermissions: a parsed override for one role. */
export interface SetChannelRolePermissions {
  roleId: string;
  permissions: Override;
}

/** Context: the caller's channel-level value and the role as the server stores it (undefined when unknown). */
export interface SetChannelRolePermissionsContext extends CallerContext {
  role: RoleObject | undefined;
}

/**
 * ManagePermissions in the channel; unknown role → 404 NotFound; a non-owner may not touch a role at or above
 * its ranking (403 NotElevated); newly granted bits are judged against the role's *server-level* override,
 * not the channel's current one — Stoat's behaviour (reference §3.6), kept on purpose.
 */
export function decideSetChannelRolePermissions(cmd: SetChannelRolePermissions, channel: ChannelState, ctx: SetChannelRolePermissionsContext): DomainEvent[] {
  requirePermission(ctx.caller.permissions, Permission.ManagePermissions);
  if (!ctx.role) throw new AppError({ type: 'NotFound' });
  if (!ctx.caller.isOwner) requireElevatedOver(ctx.caller.ranking, ctx.role.rank);
  requireCanGrant(ctx.caller.permissions, toOverride(ctx.role.permissions), cmd.permissions);
  return [
    {
      type: 'ChannelRolePermissionsSet',
      data: { channelId: channel._id, roleId: cmd.roleId, permissions: toOverrideField(cmd.permissions) },
    },
  ];
}
