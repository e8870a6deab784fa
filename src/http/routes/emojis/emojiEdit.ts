// PATCH /custom/emoji/:emoji_id — {name?} → Emoji (Stoat's emoji_edit.rs: rename, ManageCustomisation).
import { z } from 'zod';
import { callerFromServer } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import { decideEditEmoji } from '../../../domain/server/editEmoji.ts';
import type { EmojiObject } from '../../../domain/models.ts';
import { rm } from '../../../readmodel/keys.ts';
import { onServer } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { emojiName } from './emojiCreate.ts';

export default defineRoute({
  method: 'PATCH',
  path: '/custom/emoji/:emoji_id',
  auth: 'user',
  body: z.strictObject({ name: emojiName.nullish() }),
  permissions: ['ManageCustomisation'],
  async handler(rc) {
    const { deps, body } = rc;
    const emojiId = rc.params.emoji_id!;
    // An emoji never changes server, so its server can be read before the decision; a non-member gets 404.
    const known = await deps.readModels.getJson<EmojiObject>(rm.emoji(emojiId));
    if (!known) throw new AppError({ type: 'NotFound' });
    await onServer(rc, known.parent.id, async (a) => {
      const emoji = await deps.readModels.getJson<EmojiObject>(rm.emoji(emojiId));
      if (!emoji) throw new AppError({ type: 'NotFound' });
      return decideEditEmoji({ emoji, name: body.name ?? undefined }, { server: a.server, members: {}, bans: {} }, { caller: callerFromServer(a, rc.caller.userId) });
    });
    const emoji = await deps.readModels.getJson<EmojiObject>(rm.emoji(emojiId));
    if (!emoji) throw new AppError({ type: 'NotFound' });
    return emoji;
  },
});
