/** UnbanUser: DELETE /servers/:id/bans/:user (reference §3.5). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { CallerContext } from './caller.ts';
import type { ServerView } from './state.ts';

/** Input of UnbanUser. */
export interface UnbanUser {
  userId: string;
}

/** BanMembers; a user who is not banned → 404 NotFound. */
export function decideUnbanUser(cmd: UnbanUser, view: ServerView, ctx: CallerContext): DomainEvent[] {
  requirePermission(ctx.caller.permissions, Permission.BanMembers);
  if (!Object.hasOwn(view.bans, cmd.userId)) throw new AppError({ type: 'NotFound' });
  return [{ type: 'UserUnbanned', data: { userId: cmd.userId } }];
}
