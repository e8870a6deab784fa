/** DeleteInvite: DELETE /invites/:code (reference §3.8). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { InviteObject } from '../models.ts';
import type { CallerContext } from './caller.ts';
import type { ServerView } from './state.ts';

/** Input of DeleteInvite: the stored invite (undefined when the code is unknown). */
export interface DeleteInvite {
  invite: InviteObject | undefined;
}

/** Unknown code → 404 NotFound; its creator may delete it, anyone else needs ManageServer. */
export function decideDeleteInvite(cmd: DeleteInvite, _view: ServerView, ctx: CallerContext): DomainEvent[] {
  if (!cmd.invite) throw new AppError({ type: 'NotFound' });
  if (cmd.invite.creator !== ctx.caller.userId) requirePermission(ctx.caller.permissions, Permission.ManageServer);
  return [{ type: 'InviteDeleted', data: { code: cmd.invite._id } }];
}
