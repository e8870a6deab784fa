/** SetRoleRanks: PATCH /servers/:id/roles/ranks (reference §3.5). */
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission, requireCanReorderRoles } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { CallerContext } from './caller.ts';
import type { ServerView } from './state.ts';

/** Input of SetRoleRanks: every role id, highest first. */
export interface SetRoleRanks {
  ranks: string[];
}

/** ManageRole; the list must hold every role once (400 InvalidOperation); roles at or above the caller may not move (403 NotElevated). */
export function decideSetRoleRanks(cmd: SetRoleRanks, view: ServerView, ctx: CallerContext): DomainEvent[] {
  requirePermission(ctx.caller.permissions, Permission.ManageRole);
  const roles = Object.values(view.server.roles).map((r) => ({ id: r._id, rank: r.rank }));
  requireCanReorderRoles(ctx.caller.ranking, roles, cmd.ranks);
  return [{ type: 'RoleRanksSet', data: { ranks: [...cmd.ranks] } }];
}
