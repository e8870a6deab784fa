/** SetRolePermissions: PUT /servers/:id/permissions/:role_id (reference §3.5, §4.4). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission, requireCanGrant, requireElevatedOver, type Override } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { CallerContext } from './caller.ts';
import { toOverride, toOverrideField } from './permissions.ts';
import type { ServerView } from './state.ts';

/** Input of SetRolePermissions: a parsed override (defined bits only). */
export interface SetRolePermissions {
  roleId: string;
  permissions: Override;
}

/**
 * Revolt's order: unknown role → 404 NotFound; ManagePermissions; a role at or above the caller's ranking →
 * 403 NotElevated; newly granted or un-denied bits the caller lacks → 403 CannotGiveMissingPermissions.
 */
export function decideSetRolePermissions(cmd: SetRolePermissions, view: ServerView, ctx: CallerContext): DomainEvent[] {
  const role = Object.hasOwn(view.server.roles, cmd.roleId) ? view.server.roles[cmd.roleId] : undefined;
  if (!role) throw new AppError({ type: 'NotFound' });
  requirePermission(ctx.caller.permissions, Permission.ManagePermissions);
  requireElevatedOver(ctx.caller.ranking, role.rank);
  requireCanGrant(ctx.caller.permissions, toOverride(role.permissions), cmd.permissions);
  return [{ type: 'RolePermissionsSet', data: { roleId: cmd.roleId, permissions: toOverrideField(cmd.permissions) } }];
}
