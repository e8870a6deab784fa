/** The bots each user owns: `bots:<ownerId>` = `{ids, revision}` from the owner's `bots-<ownerId>` stream. */
import { rm } from '../src/readmodel/keys.ts';
import type { Projection } from './types.ts';

/** A user's owned bots, in creation order, with the revision of `bots-<ownerId>` the next change expects. */
export interface OwnedBots {
  ids: string[];
  revision: number;
}

export const botsProjection: Projection = {
  name: 'bots',
  handles: ['BotOwned', 'BotDisowned'],
  async apply(e, tx) {
    if (!e.stream.startsWith('bots-')) return;
    const ownerId = e.stream.slice('bots-'.length);
    const before = (await tx.getJson<OwnedBots>(rm.ownedBots(ownerId))) ?? { ids: [], revision: -1 };
    let ids = before.ids;
    if (e.type === 'BotOwned' && !ids.includes(e.data.botId)) ids = [...ids, e.data.botId];
    if (e.type === 'BotDisowned') ids = ids.filter((id) => id !== e.data.botId);
    tx.setJson(rm.ownedBots(ownerId), { ids, revision: e.revision } satisfies OwnedBots);
  },
};
