/** Custom emoji lookups shared by the emoji routes. */
import { serverAccess, type AccessDeps, type ServerAccess } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import type { EmojiObject } from '../../../domain/models.ts';
import { rm } from '../../../readmodel/keys.ts';

/** The stored emoji and the caller's access to its server; 404 NotFound for an unknown emoji or a non-member. */
export async function emojiAccess(deps: AccessDeps, emojiId: string, userId: string): Promise<{ emoji: EmojiObject; access: ServerAccess }> {
  const emoji = await deps.readModels.getJson<EmojiObject>(rm.emoji(emojiId));
  if (!emoji) throw new AppError({ type: 'NotFound' });
  const access = await serverAccess(deps, emoji.parent.id, userId);
  return { emoji, access };
}
