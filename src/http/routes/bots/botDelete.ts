// DELETE /bots/:target — deletes a bot the caller owns → 204 (its token stops working; its sockets are closed).
import { botsStream } from '../../../domain/bot/events.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { botDeletionWrites, loadOwnBot } from './load.ts';

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
      return { result: undefined, writes: await botDeletionWrites(deps, caller.userId, [bot]) };
    });
    return NO_CONTENT;
  },
});
