// DELETE /custom/emoji/:emoji_id — 204 (its creator, or ManageCustomisation).
import { callerFromServer } from '../../../access.ts';
import { decideDeleteEmoji } from '../../../domain/server/deleteEmoji.ts';
import { onEmoji } from './onEmoji.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/custom/emoji/:emoji_id',
  auth: 'user',
  permissions: ['ManageCustomisation'],
  async handler(rc) {
    const { deps } = rc;
    const emojiId = rc.params.emoji_id!;
    await onEmoji(rc, emojiId, (emoji, a) =>
      decideDeleteEmoji({ emoji }, { server: a.server, members: {}, bans: {} }, { caller: callerFromServer(a, rc.caller.userId) }),
    );
    return NO_CONTENT;
  },
});
