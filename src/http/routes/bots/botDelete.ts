// DELETE /bots/:target — deletes a bot the caller owns → 204 (its token stops working; its sockets are closed).
import { botsStream } from '../../../domain/bot/events.ts';
import { rm } from '../../../readmodel/keys.ts';
import type { OwnedBots } from '../../../../projections/bots.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { loadOwnBot } from './load.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/bots/:target',
  auth: 'user',
  async handler({ deps, caller, meta, params }) {
    const botId = params.target!;
    const first = await loadOwnBot(deps, caller, botId);
    const nameStream = `username-${first.user.username.toLowerCase()}`;
    const ownedStream = botsStream(caller.userId);
    await deps.executor.execute(meta, [`account-${botId}`, nameStream, ownedStream], async () => {
      const bot = await loadOwnBot(deps, caller, botId);
      const owned = (await deps.readModels.getJson<OwnedBots>(rm.ownedBots(caller.userId))) ?? { ids: [], revision: -1 };
      const claims = await deps.store.readStream(`username-${bot.user.username.toLowerCase()}`);
      return {
        result: undefined,
        writes: [
          { stream: `account-${botId}`, scope: botId, expected: bot.revision, events: [{ type: 'BotDeleted', data: {} }] },
          {
            stream: `username-${bot.user.username.toLowerCase()}`,
            scope: botId,
            expected: claims.length === 0 ? 'no_stream' : claims.length - 1,
            events: [{ type: 'UsernameReleased', data: { userId: botId, discriminator: bot.user.discriminator } }],
          },
          { stream: ownedStream, scope: caller.userId, expected: owned.revision < 0 ? 'no_stream' : owned.revision, events: [{ type: 'BotDisowned', data: { botId } }] },
        ],
      };
    });
    return NO_CONTENT;
  },
});
