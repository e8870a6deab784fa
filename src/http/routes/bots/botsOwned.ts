// GET /bots/@me — OwnedBotsResponse {bots, users}, both sorted by id.
import { rm } from '../../../readmodel/keys.ts';
import type { OwnedBots } from '../../../../projections/bots.ts';
import { defineRoute } from '../../route.ts';
import { loadBot, presentBot, presentBotUser, type BotAccount } from './load.ts';

export default defineRoute({
  method: 'GET',
  path: '/bots/@me',
  auth: 'user',
  async handler({ deps, caller }) {
    const owned = await deps.readModels.getJson<OwnedBots>(rm.ownedBots(caller.userId));
    const ids = [...(owned?.ids ?? [])].sort();
    const bots = (await Promise.all(ids.map((id) => loadBot(deps, id)))).filter((b): b is BotAccount => b !== null && b.bot.owner === caller.userId);
    return {
      bots: bots.map((b) => presentBot(deps, b)),
      users: await Promise.all(bots.map((b) => presentBotUser(deps, b, caller.userId))),
    };
  },
});
