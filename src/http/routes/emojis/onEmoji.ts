// Shared by the emoji edit and delete routes: the decision runs on the emoji's server with the emoji read fresh.
import type { ServerAccess } from '../../../access.ts';
import type { EmojiObject } from '../../../domain/models.ts';
import { AppError } from '../../../errors.ts';
import { rm } from '../../../readmodel/keys.ts';
import { onServer, type CommandRoute, type Decision } from '../../command.ts';

/**
 * Runs `decide` on the server of emoji `emojiId` (404 when it does not exist; a non-member gets 404 from the
 * server access). An emoji never changes server, so its server can be read before the decision; the emoji
 * itself is read again inside it, after any conflict.
 */
export async function onEmoji(rc: CommandRoute, emojiId: string, decide: (emoji: EmojiObject, access: ServerAccess) => Decision | Promise<Decision>): Promise<void> {
  const known = await rc.deps.readModels.getJson<EmojiObject>(rm.emoji(emojiId));
  if (!known) throw new AppError({ type: 'NotFound' });
  await onServer(rc, known.parent.id, async (a) => {
    const emoji = await rc.deps.readModels.getJson<EmojiObject>(rm.emoji(emojiId));
    if (!emoji) throw new AppError({ type: 'NotFound' });
    return decide(emoji, a);
  });
}
