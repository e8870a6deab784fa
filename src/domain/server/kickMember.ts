/** KickMember: DELETE /servers/:id/members/:user (reference §3.5). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission, requireElevatedOver } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { CallerContext } from './caller.ts';
import { memberRanking } from './permissions.ts';
import type { ServerView } from './state.ts';

/** Input of KickMember. */
export interface KickMember {
  userId: string;
}

/** Oneself → 400 CannotRemoveYourself; the owner → 400 InvalidOperation; KickMembers; not a member → 404; rank → NotElevated. */
export function decideKickMember(cmd: KickMember, view: ServerView, ctx: CallerContext): DomainEvent[] {
  if (cmd.userId === ctx.caller.userId) throw new AppError({ type: 'CannotRemoveYourself' });
  if (cmd.userId === view.server.owner) throw new AppError({ type: 'InvalidOperation' });
  requirePermission(ctx.caller.permissions, Permission.KickMembers);
  const target = Object.hasOwn(view.members, cmd.userId) ? view.members[cmd.userId] : undefined;
  if (!target) throw new AppError({ type: 'NotFound' });
  requireElevatedOver(ctx.caller.ranking, memberRanking(view.server, target));
  return [{ type: 'MemberLeft', data: { userId: cmd.userId, reason: 'Kick' } }];
}
