// PUT /custom/emoji/:emoji_id — {name, parent: {type: "Server", id}, nsfw?} → Emoji (ManageCustomisation; at most 100 per server).
import { z } from 'zod';
import { callerFromServer } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import { decideCreateEmoji, EMOJI_LIMIT } from '../../../domain/server/createEmoji.ts';
import type { EmojiObject } from '../../../domain/models.ts';
import { claimFile, fileStream } from '../../../files.ts';
import { rm } from '../../../readmodel/keys.ts';
import { onServer } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { idString } from '../../schemas.ts';

/** An emoji name (Stoat's RE_EMOJI: lowercase letters, digits and _, 1 to 32). */
export const emojiName = z.string().min(1).max(32).regex(/^[a-z0-9_]+$/, 'lowercase letters, digits and _ only');

export default defineRoute({
  method: 'PUT',
  path: '/custom/emoji/:emoji_id',
  auth: 'user',
  body: z.strictObject({
    name: emojiName,
    parent: z.discriminatedUnion('type', [z.strictObject({ type: z.literal('Server'), id: idString }), z.strictObject({ type: z.literal('Detached') })]),
    nsfw: z.boolean().nullish(),
  }),
  permissions: ['ManageCustomisation'],
  async handler(rc) {
    const { body, deps } = rc;
    const emojiId = rc.params.emoji_id!;
    // Revolt: a detached emoji cannot be created.
    if (body.parent.type !== 'Server') throw new AppError({ type: 'InvalidOperation' });
    const serverId = body.parent.id;
    await onServer(
      rc,
      serverId,
      async (a) => {
        const view = { server: a.server, members: {}, bans: {} };
        const ctx = { caller: callerFromServer(a, rc.caller.userId), emojiLimit: EMOJI_LIMIT };
        // Every check first, so that a refused create does not consume the upload; `:emoji_id` is the upload.
        decideCreateEmoji({ emojiId, name: body.name, nsfw: false, animated: false }, view, ctx);
        const claim = await claimFile(deps, { fileId: emojiId, tag: 'emojis', userId: rc.caller.userId, usedFor: { type: 'Emoji', id: emojiId } });
        const animated = claim.file.content_type === 'image/gif';
        return { events: decideCreateEmoji({ emojiId, name: body.name, nsfw: body.nsfw ?? false, animated }, view, ctx), also: [claim.write] };
      },
      { lock: [fileStream(emojiId)] },
    );
    const emoji = await deps.readModels.getJson<EmojiObject>(rm.emoji(emojiId));
    if (!emoji) throw new AppError({ type: 'NotFound' });
    return emoji;
  },
});
