/** CreateRole: POST /servers/:id/roles (reference §3.5; DESIGN §4 "roles"). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { RoleObject } from '../models.ts';
import type { CallerContext } from './caller.ts';
import type { ServerView } from './state.ts';

/** Input of CreateRole: name, colour and hoist (never rank). */
export interface CreateRole {
  roleId: string;
  name: string;
  colour?: string | undefined;
  hoist?: boolean | undefined;
}

/** Context of CreateRole. */
export interface CreateRoleContext extends CallerContext {
  /** Most roles per server (200). */
  roleLimit: number;
}

/**
 * The rank a new role gets: the lowest, i.e. the number of existing roles (Revolt), or one below the lowest
 * existing rank when deletions left that number taken, so two roles never share a rank.
 */
export function lowestRank(roles: Record<string, RoleObject>): number {
  const list = Object.values(roles);
  return Math.max(list.length, ...list.map((r) => r.rank + 1));
}

/** ManageRole; at most `roleLimit` roles (400 TooManyRoles); permissions start at {a: 0, d: 0}. */
export function decideCreateRole(cmd: CreateRole, view: ServerView, ctx: CreateRoleContext): DomainEvent[] {
  requirePermission(ctx.caller.permissions, Permission.ManageRole);
  if (Object.keys(view.server.roles).length >= ctx.roleLimit) throw new AppError({ type: 'TooManyRoles', max: ctx.roleLimit });
  const role: RoleObject = { _id: cmd.roleId, name: cmd.name, permissions: { a: 0, d: 0 }, rank: lowestRank(view.server.roles) };
  if (cmd.colour !== undefined) role.colour = cmd.colour;
  if (cmd.hoist) role.hoist = true;
  return [{ type: 'RoleCreated', data: { roleId: cmd.roleId, role } }];
}
