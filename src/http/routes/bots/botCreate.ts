// POST /bots/create — {name} → BotWithUserResponse (IsBot for a bot; BOT_LIMIT → 400 ReachedMaximumBots).
import { z } from 'zod';
import { discriminatorsInUse, normaliseUsername, pickDiscriminator } from '../../../domain/account/commands.ts';
import { botsStream } from '../../../domain/bot/events.ts';
import { AppError } from '../../../errors.ts';
import { newId } from '../../../ids.ts';
import { rm } from '../../../readmodel/keys.ts';
import type { OwnedBots } from '../../../../projections/bots.ts';
import { defineRoute } from '../../route.ts';
import { loadBot, newBotToken, presentBot, presentBotUser } from './load.ts';

export default defineRoute({
  method: 'POST',
  path: '/bots/create',
  auth: 'user',
  noBots: true,
  body: z.strictObject({ name: z.string().max(128) }),
  async handler({ deps, caller, meta, body }) {
    const username = normaliseUsername(body.name);
    const botId = newId(deps.now());
    const owner = caller.userId;
    const nameStream = `username-${username.toLowerCase()}`;
    const accountStream = `account-${botId}`;
    const ownedStream = botsStream(owner);
    const token = newBotToken(deps.secrets.tokenKey);
    await deps.executor.execute(meta, [ownedStream, nameStream, accountStream], async () => {
      // The limit is decided on the revision of the owner's bot list, so concurrent creations stop exactly at it.
      const owned = (await deps.readModels.getJson<OwnedBots>(rm.ownedBots(owner))) ?? { ids: [], revision: -1 };
      if (owned.ids.length >= deps.config.botLimit) throw new AppError({ type: 'ReachedMaximumBots' });
      const claims = await deps.store.readStream(nameStream);
      const discriminator = pickDiscriminator(discriminatorsInUse(claims), Math.random);
      return {
        result: undefined,
        writes: [
          {
            stream: nameStream,
            scope: botId,
            expected: claims.length === 0 ? 'no_stream' : claims.length - 1,
            events: [{ type: 'UsernameClaimed', data: { userId: botId, username, discriminator } }],
          },
          {
            stream: accountStream,
            scope: botId,
            expected: 'no_stream',
            events: [{ type: 'BotCreated', data: { id: botId, owner, username, discriminator, token: token.token, tokenHash: token.tokenHash } }],
          },
          { stream: ownedStream, scope: owner, expected: owned.revision < 0 ? 'no_stream' : owned.revision, events: [{ type: 'BotOwned', data: { botId } }] },
        ],
      };
    });
    const bot = await loadBot(deps, botId);
    if (!bot) throw new AppError({ type: 'InternalError' });
    return { ...presentBot(deps, bot), user: await presentBotUser(deps, bot, owner) };
  },
});
