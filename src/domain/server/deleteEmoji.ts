/** DeleteEmoji: DELETE /custom/emoji/:id (reference §3.9; DESIGN §4 "mentions and emoji"). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { EmojiObject } from '../models.ts';
import type { CallerContext } from './caller.ts';
import type { ServerView } from './state.ts';

/** Input of DeleteEmoji: the stored emoji. */
export interface DeleteEmoji {
  emoji: EmojiObject;
}

/** The emoji must be the server's (404 NotFound); its creator may delete it, anyone else needs ManageCustomisation. */
export function decideDeleteEmoji(cmd: DeleteEmoji, view: ServerView, ctx: CallerContext): DomainEvent[] {
  if (!(view.server.emojis ?? []).includes(cmd.emoji._id)) throw new AppError({ type: 'NotFound' });
  if (cmd.emoji.creator_id !== ctx.caller.userId) requirePermission(ctx.caller.permissions, Permission.ManageCustomisation);
  return [{ type: 'EmojiDeleted', data: { emojiId: cmd.emoji._id } }];
}
