// PATCH /bots/:target — DataEditBot {name?, public?, analytics?, interactions_url?, remove?: ["Token" | "InteractionsURL"]} → BotWithUserResponse.
import { z } from 'zod';
import type { Write } from '../../../commands.ts';
import { decideUsernameChange, discriminatorsInUse, normaliseUsername } from '../../../domain/account/commands.ts';
import type { DomainEvent } from '../../../domain/events.ts';
import { AppError } from '../../../errors.ts';
import { defineRoute } from '../../route.ts';
import { loadOwnBot, newBotToken, presentBot, presentBotUser } from './load.ts';

const Body = z.strictObject({
  name: z.string().max(128).nullish(),
  public: z.boolean().nullish(),
  analytics: z.boolean().nullish(),
  interactions_url: z.string().min(1).max(2048).nullish(),
  remove: z.array(z.enum(['Token', 'InteractionsURL'])).max(2).nullish(),
});

export default defineRoute({
  method: 'PATCH',
  path: '/bots/:target',
  auth: 'user',
  body: Body,
  async handler({ deps, caller, meta, body, params }) {
    const botId = params.target!;
    const username = body.name == null ? undefined : normaliseUsername(body.name);
    const first = await loadOwnBot(deps, caller, botId);
    const accountStream = `account-${botId}`;
    const names = username === undefined ? [] : [`username-${username.toLowerCase()}`, `username-${first.user.username.toLowerCase()}`];
    await deps.executor.execute(meta, [...new Set([accountStream, ...names])], async () => {
      const bot = await loadOwnBot(deps, caller, botId);
      const writes: Write[] = [];
      const events: DomainEvent[] = [];
      if (username !== undefined) {
        const newStream = `username-${username.toLowerCase()}`;
        const oldStream = `username-${bot.user.username.toLowerCase()}`;
        const claims = await deps.store.readStream(newStream);
        const change = decideUsernameChange(bot.user, username, discriminatorsInUse(claims), Math.random);
        if (!change.unchanged) {
          if (!change.sameName) {
            const released = await deps.store.readStream(oldStream);
            writes.push(
              { stream: newStream, scope: botId, expected: claims.length === 0 ? 'no_stream' : claims.length - 1, events: [{ type: 'UsernameClaimed', data: { userId: botId, username, discriminator: change.discriminator } }] },
              { stream: oldStream, scope: botId, expected: released.length === 0 ? 'no_stream' : released.length - 1, events: [{ type: 'UsernameReleased', data: { userId: botId, discriminator: bot.user.discriminator } }] },
            );
          }
          events.push({ type: 'UsernameChanged', data: { username, discriminator: change.discriminator } });
        }
      }
      const remove = body.remove ?? [];
      const fields = {
        ...(body.public != null ? { public: body.public } : {}),
        ...(body.analytics != null ? { analytics: body.analytics } : {}),
        ...(body.interactions_url != null ? { interactions_url: body.interactions_url } : {}),
      };
      const cleared = remove.filter((r): r is 'InteractionsURL' => r === 'InteractionsURL');
      if (Object.keys(fields).length > 0 || cleared.length > 0) events.push({ type: 'BotEdited', data: { ...fields, remove: cleared } });
      if (remove.includes('Token')) {
        const t = newBotToken(deps.secrets.tokenKey);
        events.push({ type: 'BotTokenReset', data: { token: t.token, tokenHash: t.tokenHash } });
      }
      if (events.length > 0) writes.push({ stream: accountStream, scope: botId, expected: bot.revision, events });
      return { writes, result: undefined };
    });
    const bot = await loadOwnBot(deps, caller, botId).catch(() => null);
    if (!bot) throw new AppError({ type: 'NotFound' });
    return { ...presentBot(deps, bot), user: await presentBotUser(deps, bot, caller.userId) };
  },
});
