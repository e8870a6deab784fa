/** EditRole: PATCH /servers/:id/roles/:role_id (reference §3.5). `rank` is never changed here. */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission, requireElevatedOver } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { FileObject } from '../shared.ts';
import type { CallerContext } from './caller.ts';
import type { ServerView } from './state.ts';

/** Input of EditRole; absent fields are unchanged. */
export interface EditRole {
  roleId: string;
  name?: string | undefined;
  colour?: string | undefined;
  hoist?: boolean | undefined;
  /** The new icon: an `icons` upload the route claimed. */
  icon?: FileObject | undefined;
  remove: Array<'Colour' | 'Icon'>;
}

/** ManageRole; unknown role → 404 NotFound; a role at or above the caller's ranking → 403 NotElevated. */
export function decideEditRole(cmd: EditRole, view: ServerView, ctx: CallerContext): DomainEvent[] {
  requirePermission(ctx.caller.permissions, Permission.ManageRole);
  const role = Object.hasOwn(view.server.roles, cmd.roleId) ? view.server.roles[cmd.roleId] : undefined;
  if (!role) throw new AppError({ type: 'NotFound' });
  requireElevatedOver(ctx.caller.ranking, role.rank);
  const data: Extract<DomainEvent, { type: 'RoleEdited' }>['data']['data'] = {};
  if (cmd.name !== undefined) data.name = cmd.name;
  if (cmd.colour !== undefined) data.colour = cmd.colour;
  if (cmd.hoist !== undefined) data.hoist = cmd.hoist;
  if (cmd.icon !== undefined) data.icon = cmd.icon;
  if (Object.keys(data).length === 0 && cmd.remove.length === 0) return [];
  return [{ type: 'RoleEdited', data: { roleId: cmd.roleId, data, remove: [...new Set(cmd.remove)] } }];
}
