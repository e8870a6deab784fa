// GET /servers/:server_id/emojis — the server's custom emoji, oldest first (members only).
import { serverAccess } from '../../../access.ts';
import type { EmojiObject } from '../../../domain/models.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute } from '../../route.ts';

export default defineRoute({
  method: 'GET',
  path: '/servers/:server_id/emojis',
  auth: 'user',
  async handler(rc) {
    const serverId = rc.params.server_id!;
    await serverAccess(rc.deps, serverId, rc.caller.userId);
    const emojis = await rc.deps.readModels.hgetallJson<EmojiObject>(rm.serverEmojis(serverId));
    return [...emojis.values()].sort((a, b) => (a._id < b._id ? -1 : a._id > b._id ? 1 : 0));
  },
});
