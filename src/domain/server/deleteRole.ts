/** DeleteRole: DELETE /servers/:id/roles/:role_id (reference §3.5). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission, requireElevatedOver } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { CallerContext } from './caller.ts';
import type { ServerView } from './state.ts';

/** Input of DeleteRole. */
export interface DeleteRole {
  roleId: string;
}

/** ManageRole; unknown role → 404 NotFound; a role at or above the caller's ranking → 403 NotElevated. */
export function decideDeleteRole(cmd: DeleteRole, view: ServerView, ctx: CallerContext): DomainEvent[] {
  requirePermission(ctx.caller.permissions, Permission.ManageRole);
  const role = Object.hasOwn(view.server.roles, cmd.roleId) ? view.server.roles[cmd.roleId] : undefined;
  if (!role) throw new AppError({ type: 'NotFound' });
  requireElevatedOver(ctx.caller.ranking, role.rank);
  return [{ type: 'RoleDeleted', data: { roleId: cmd.roleId } }];
}
