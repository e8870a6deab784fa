/** EditEmoji: PATCH /custom/emoji/:id (Stoat's emoji_edit.rs: rename, ManageCustomisation). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { EmojiObject } from '../models.ts';
import type { CallerContext } from './caller.ts';
import type { ServerView } from './state.ts';

/** Input of EditEmoji: the stored emoji and the new name (absent: nothing to change). */
export interface EditEmoji {
  emoji: EmojiObject;
  name?: string | undefined;
}

/**
 * The emoji must be the server's (404 NotFound); the caller needs ManageCustomisation, its creator too (Stoat);
 * no name, or the name it has, changes nothing.
 */
export function decideEditEmoji(cmd: EditEmoji, view: ServerView, ctx: CallerContext): DomainEvent[] {
  if (!(view.server.emojis ?? []).includes(cmd.emoji._id)) throw new AppError({ type: 'NotFound' });
  requirePermission(ctx.caller.permissions, Permission.ManageCustomisation);
  if (cmd.name === undefined || cmd.name === cmd.emoji.name) return [];
  return [{ type: 'EmojiEdited', data: { emojiId: cmd.emoji._id, name: cmd.name } }];
}
