// GET /bots/:bot — FetchBotResponse {bot, user} of a bot the caller owns (another's → 404; a bot caller → IsBot).
import { defineRoute } from '../../route.ts';
import { loadOwnBot, presentBot, presentBotUser } from './load.ts';

export default defineRoute({
  method: 'GET',
  path: '/bots/:bot',
  auth: 'user',
  noBots: true,
  async handler({ deps, caller, params }) {
    const bot = await loadOwnBot(deps, caller, params.bot!);
    return { bot: presentBot(deps, bot), user: await presentBotUser(deps, bot, caller.userId) };
  },
});
