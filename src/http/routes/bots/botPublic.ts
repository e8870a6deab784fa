// GET /bots/:target/invite — PublicBot of a public bot, or of one's own (no session needed; else 404).
import { AppError } from '../../../errors.ts';
import { defineRoute } from '../../route.ts';
import { loadBot, presentPublicBot } from './load.ts';

export default defineRoute({
  method: 'GET',
  path: '/bots/:target/invite',
  auth: 'none',
  async handler({ deps, caller, params }) {
    const bot = await loadBot(deps, params.target!);
    if (!bot || (!bot.bot.public && caller?.userId !== bot.bot.owner)) throw new AppError({ type: 'NotFound' });
    return presentPublicBot(bot);
  },
});
