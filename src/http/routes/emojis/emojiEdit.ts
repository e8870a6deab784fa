// PATCH /custom/emoji/:emoji_id — {name?} → Emoji (Stoat's emoji_edit.rs: rename, ManageCustomisation).
import { z } from 'zod';
import { callerFromServer } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import { decideEditEmoji } from '../../../domain/server/editEmoji.ts';
import type { EmojiObject } from '../../../domain/models.ts';
import { rm } from '../../../readmodel/keys.ts';
import { onEmoji } from './onEmoji.ts';
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
    await onEmoji(rc, emojiId, (emoji, a) =>
      decideEditEmoji({ emoji, name: body.name ?? undefined }, { server: a.server, members: {}, bans: {} }, { caller: callerFromServer(a, rc.caller.userId) }),
    );
    const emoji = await deps.readModels.getJson<EmojiObject>(rm.emoji(emojiId));
    if (!emoji) throw new AppError({ type: 'NotFound' });
    return emoji;
  },
});
