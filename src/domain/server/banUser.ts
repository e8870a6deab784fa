/** BanUser: PUT /servers/:id/bans/:user (reference §3.5). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission, requireElevatedOver } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { CallerContext } from './caller.ts';
import { memberRanking } from './permissions.ts';
import type { ServerView } from './state.ts';

/** Input of BanUser. */
export interface BanUser {
  userId: string;
  reason?: string | undefined;
}

/**
 * Oneself → 400 CannotRemoveYourself; the owner → 400 InvalidOperation; BanMembers; a member must rank below
 * the caller (403 NotElevated) and is removed (MemberLeft, reason Ban); then UserBanned (a non-member can be
 * banned too).
 */
export function decideBanUser(cmd: BanUser, view: ServerView, ctx: CallerContext): DomainEvent[] {
  if (cmd.userId === ctx.caller.userId) throw new AppError({ type: 'CannotRemoveYourself' });
  if (cmd.userId === view.server.owner) throw new AppError({ type: 'InvalidOperation' });
  requirePermission(ctx.caller.permissions, Permission.BanMembers);
  const events: DomainEvent[] = [];
  const target = Object.hasOwn(view.members, cmd.userId) ? view.members[cmd.userId] : undefined;
  if (target) {
    requireElevatedOver(ctx.caller.ranking, memberRanking(view.server, target));
    events.push({ type: 'MemberLeft', data: { userId: cmd.userId, reason: 'Ban' } });
  }
  events.push({ type: 'UserBanned', data: { userId: cmd.userId, ...(cmd.reason !== undefined ? { reason: cmd.reason } : {}) } });
  return events;
}
