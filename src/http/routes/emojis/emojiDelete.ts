// DELETE /custom/emoji/:emoji_id — 204 (its creator, or ManageCustomisation).
import { callerFromServer } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import { decideDeleteEmoji } from '../../../domain/server/deleteEmoji.ts';
import type { EmojiObject } from '../../../domain/models.ts';
import { rm } from '../../../readmodel/keys.ts';
import { onServer } from '../../command.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/custom/emoji/:emoji_id',
  auth: 'user',
  permissions: ['ManageCustomisation'],
  async handler(rc) {
    const { deps } = rc;
    const emojiId = rc.params.emoji_id!;
    // An emoji never changes server, so its server can be read before the decision.
    const known = await deps.readModels.getJson<EmojiObject>(rm.emoji(emojiId));
    if (!known) throw new AppError({ type: 'NotFound' });
    await onServer(rc, known.parent.id, async (a) => {
      const emoji = await deps.readModels.getJson<EmojiObject>(rm.emoji(emojiId));
      if (!emoji) throw new AppError({ type: 'NotFound' });
      return decideDeleteEmoji({ emoji }, { server: a.server, members: {}, bans: {} }, { caller: callerFromServer(a, rc.caller.userId) });
    });
    return NO_CONTENT;
  },
});
