// GET /custom/emoji/:emoji_id — the Emoji (public, as in Stoat: clients render custom emoji of servers the viewer is not in).
import { AppError } from '../../../errors.ts';
import { isFileId } from '../../params.ts';
import type { EmojiObject } from '../../../domain/models.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute } from '../../route.ts';

export default defineRoute({
  method: 'GET',
  path: '/custom/emoji/:emoji_id',
  auth: 'none',
  async handler(rc) {
    const id = rc.params.emoji_id!;
    // An emoji's id is its upload's id.
    if (!isFileId(id)) throw new AppError({ type: 'NotFound' });
    const emoji = await rc.deps.readModels.getJson<EmojiObject>(rm.emoji(id));
    if (!emoji) throw new AppError({ type: 'NotFound' });
    return emoji;
  },
});
