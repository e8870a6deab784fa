/** CreateEmoji: PUT /custom/emoji/:id with parent {type: "Server", id} (reference §3.9; spec "Custom emoji"). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { EmojiObject } from '../models.ts';
import type { CallerContext } from './caller.ts';
import type { ServerView } from './state.ts';

/** Most custom emoji per server (spec "Limits"). */
export const EMOJI_LIMIT = 100;

/** Input of CreateEmoji. */
export interface CreateEmoji {
  /** The id of the `emojis` upload, which becomes the emoji's id. */
  emojiId: string;
  name: string;
  nsfw: boolean;
  /** The upload is a GIF. */
  animated: boolean;
}

/** Context of CreateEmoji: the caller (server-level value) and the per-server limit. */
export interface CreateEmojiContext extends CallerContext {
  emojiLimit: number;
}

/** ManageCustomisation; at most `emojiLimit` emoji (400 TooManyEmoji); an id is used once (400 InvalidOperation). */
export function decideCreateEmoji(cmd: CreateEmoji, view: ServerView, ctx: CreateEmojiContext): DomainEvent[] {
  requirePermission(ctx.caller.permissions, Permission.ManageCustomisation);
  const existing = view.server.emojis ?? [];
  if (existing.includes(cmd.emojiId)) throw new AppError({ type: 'InvalidOperation' });
  if (existing.length >= ctx.emojiLimit) throw new AppError({ type: 'TooManyEmoji', max: ctx.emojiLimit });
  const emoji: EmojiObject = {
    _id: cmd.emojiId,
    parent: { type: 'Server', id: view.server._id },
    creator_id: ctx.caller.userId,
    name: cmd.name,
  };
  if (cmd.animated) emoji.animated = true;
  if (cmd.nsfw) emoji.nsfw = true;
  return [{ type: 'EmojiCreated', data: { emoji } }];
}
