/**
 * React, Unreact and ClearReactions: PUT / DELETE /channels/:id/messages/:mid/reactions/:emoji and
 * DELETE …/reactions (reference §3.9; DESIGN §4 "reactions": at most 20 distinct emoji per message, held by
 * the message stream's expected revision).
 */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { requireAll, require as requirePermission } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import { emojiKind } from './emoji.ts';
import { MESSAGE_LIMITS } from './sendMessage.ts';
import type { MessageState } from './state.ts';
import { own } from '../../own.ts';

/** Context of a reaction command. */
export interface ReactionContext {
  userId: string;
  /** The caller's channel permission value. */
  permissions: bigint;
  /** Custom emoji ids of the message's server. */
  emojis: ReadonlySet<string>;
}

/** The emoji must be a Unicode emoji (400 InvalidOperation otherwise) or a custom emoji of the server (404 NotFound). */
export function requireEmoji(emoji: string, emojis: ReadonlySet<string>): void {
  const kind = emojiKind(emoji);
  if (kind === 'invalid') throw new AppError({ type: 'InvalidOperation' });
  if (kind === 'custom' && !emojis.has(emoji)) throw new AppError({ type: 'NotFound' });
}

/**
 * ViewChannel and React; a restricted message only takes its listed emoji; a 21st distinct emoji is 400
 * InvalidOperation (more users on an existing one are fine); reacting twice changes nothing.
 */
export function decideReact(message: MessageState, emoji: string, ctx: ReactionContext): DomainEvent[] {
  requireAll(ctx.permissions, Permission.ViewChannel, Permission.React);
  requireEmoji(emoji, ctx.emojis);
  if (message.interactions?.restrict_reactions && !(message.interactions.reactions ?? []).includes(emoji)) {
    throw new AppError({ type: 'InvalidOperation' });
  }
  const users = own(message.reactions, emoji);
  if (users?.includes(ctx.userId)) return [];
  if (users === undefined && Object.keys(message.reactions ?? {}).length >= MESSAGE_LIMITS.reactions) {
    throw new AppError({ type: 'InvalidOperation' });
  }
  return [{ type: 'MessageReacted', data: { channel: message.channel, userId: ctx.userId, emoji } }];
}

/** Input of Unreact: whose reaction goes, or all of this emoji. */
export interface Unreact {
  emoji: string;
  /** Another user's reaction (needs ManageMessages). */
  userId?: string | undefined;
  /** Every user's reaction with this emoji (needs ManageMessages). */
  removeAll: boolean;
}

/**
 * ViewChannel and React; ManageMessages with `user_id` or `remove_all`. Removing a reaction that is not there
 * is 404 NotFound; `remove_all` of an emoji nobody used changes nothing.
 */
export function decideUnreact(message: MessageState, cmd: Unreact, ctx: Omit<ReactionContext, 'emojis'>): DomainEvent[] {
  requireAll(ctx.permissions, Permission.ViewChannel, Permission.React);
  if (cmd.userId !== undefined || cmd.removeAll) requirePermission(ctx.permissions, Permission.ManageMessages);
  const users = own(message.reactions, cmd.emoji);
  if (cmd.removeAll) return users ? [{ type: 'MessageReactionRemoved', data: { channel: message.channel, emoji: cmd.emoji } }] : [];
  const target = cmd.userId ?? ctx.userId;
  if (!users?.includes(target)) throw new AppError({ type: 'NotFound' });
  return [{ type: 'MessageUnreacted', data: { channel: message.channel, userId: target, emoji: cmd.emoji } }];
}

/** ViewChannel and ManageMessages; removes every reaction (nothing to remove changes nothing). */
export function decideClearReactions(message: MessageState, ctx: Pick<ReactionContext, 'permissions'>): DomainEvent[] {
  requireAll(ctx.permissions, Permission.ViewChannel, Permission.ManageMessages);
  if (!message.reactions) return [];
  return [{ type: 'MessageReactionsCleared', data: { channel: message.channel } }];
}
