/** SetServerDefaultPermissions: PUT /servers/:id/permissions/default (reference §3.5, §4.4). */
import { Permission, toNumber } from '../../permissions/bits.ts';
import { require as requirePermission, requireCanGrantValue } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { CallerContext } from './caller.ts';
import type { ServerView } from './state.ts';

/** Input of SetServerDefaultPermissions: a parsed value (defined bits only). */
export interface SetServerDefaultPermissions {
  permissions: bigint;
}

/** ManagePermissions, and the caller must hold every bit it sets (403 CannotGiveMissingPermissions). */
export function decideSetServerDefaultPermissions(cmd: SetServerDefaultPermissions, _view: ServerView, ctx: CallerContext): DomainEvent[] {
  requirePermission(ctx.caller.permissions, Permission.ManagePermissions);
  requireCanGrantValue(ctx.caller.permissions, cmd.permissions);
  return [{ type: 'ServerDefaultPermissionsSet', data: { permissions: toNumber(cmd.permissions) } }];
}
