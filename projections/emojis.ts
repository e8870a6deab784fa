/**
 * Custom emoji from the server streams: `emoji:<id>` (for the routes that only know the emoji id) and the
 * hash `server:<id>:emojis`. The server's own read model counts them (`ServerState.emojis`, projection
 * `servers`). Emits EmojiCreate / EmojiUpdate / EmojiDelete on the server route (reference §9).
 */
import type { EmojiObject } from '../src/domain/models.ts';
import { rm } from '../src/readmodel/keys.ts';
import { SERVER_STREAM } from './servers.ts';
import type { Projection } from './types.ts';

export const emojisProjection: Projection = {
  name: 'emojis',
  handles: ['EmojiCreated', 'EmojiEdited', 'EmojiDeleted', 'ServerDeleted'],
  async apply(e, tx) {
    if (!e.stream.startsWith(SERVER_STREAM)) return;
    const serverId = e.stream.slice(SERVER_STREAM.length);
    const route = { kind: 'server', serverId } as const;
    switch (e.type) {
      case 'EmojiCreated':
        tx.setJson(rm.emoji(e.data.emoji._id), e.data.emoji);
        tx.hsetJson(rm.serverEmojis(serverId), e.data.emoji._id, e.data.emoji);
        tx.emit(route, { type: 'EmojiCreate', ...e.data.emoji });
        return;
      case 'EmojiEdited': {
        const before = await tx.getJson<EmojiObject>(rm.emoji(e.data.emojiId));
        if (!before) return;
        const after = { ...before, name: e.data.name };
        tx.setJson(rm.emoji(after._id), after);
        tx.hsetJson(rm.serverEmojis(serverId), after._id, after);
        tx.emit(route, { type: 'EmojiUpdate', id: after._id, data: { name: after.name } });
        return;
      }
      case 'EmojiDeleted':
        tx.del(rm.emoji(e.data.emojiId));
        tx.hdel(rm.serverEmojis(serverId), e.data.emojiId);
        tx.emit(route, { type: 'EmojiDelete', id: e.data.emojiId });
        return;
      case 'ServerDeleted': {
        const emojis = await tx.hgetallJson<EmojiObject>(rm.serverEmojis(serverId));
        for (const id of emojis.keys()) tx.del(rm.emoji(id));
        tx.del(rm.serverEmojis(serverId));
        return;
      }
      default:
        return;
    }
  },
};
