// GET /custom/emoji/:emoji_id — the Emoji (members of its server only, DESIGN §4 "security").
import { defineRoute } from '../../route.ts';
import { emojiAccess } from './load.ts';

export default defineRoute({
  method: 'GET',
  path: '/custom/emoji/:emoji_id',
  auth: 'user',
  async handler(rc) {
    return (await emojiAccess(rc.deps, rc.params.emoji_id!, rc.caller.userId)).emoji;
  },
});
