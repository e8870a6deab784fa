/** Shared by the bot routes: loading a bot and presenting it as Stoat does (`Bot`, `PublicBot`). */
import type { Write } from '../../../commands.ts';
import type { AccountState, BotState, UserProfile } from '../../../domain/account/state.ts';
import { botsStream } from '../../../domain/bot/events.ts';
import type { DomainEvent } from '../../../domain/events.ts';
import type { OwnedBots } from '../../../../projections/bots.ts';
import { AppError } from '../../../errors.ts';
import { decryptSecret, encryptSecret } from '../../../personal/cipher.ts';
import { rm } from '../../../readmodel/keys.ts';
import type { AppDeps } from '../../deps.ts';
import type { Caller } from '../../route.ts';
import { presentUser } from '../users/present.ts';
import { randomBytes, createHash } from 'node:crypto';

/** Purpose label of bot tokens under `ServiceSecrets.tokenKey`. */
const TOKEN_PURPOSE = 'bot-token';

/** A bot's account with its bot settings. */
export type BotAccount = AccountState & { bot: BotState; user: UserProfile };

/** The bot with this id (its account), or null when there is none or it was deleted. */
export async function loadBot(deps: Pick<AppDeps, 'readModels'>, botId: string): Promise<BotAccount | null> {
  const a = await deps.readModels.getJson<AccountState>(rm.account(botId));
  return a?.bot && a.user && !a.deleted ? (a as BotAccount) : null;
}

/** The caller's own bot, else 404 NotFound (Stoat answers NotFound for someone else's bot). */
export async function loadOwnBot(deps: Pick<AppDeps, 'readModels'>, caller: Caller, botId: string): Promise<BotAccount> {
  const bot = await loadBot(deps, botId);
  if (!bot || bot.bot.owner !== caller.userId) throw new AppError({ type: 'NotFound' });
  return bot;
}

/**
 * What deleting bots of one owner appends (re-read on every attempt): `BotDeleted` on each bot's account
 * stream (its token stops working, its sockets close), its username released, and one `BotDisowned` per bot
 * on `bots-<owner>`. Used by the bot delete route and by account deletion (an account's bots go with it).
 */
export async function botDeletionWrites(deps: Pick<AppDeps, 'readModels' | 'store'>, ownerId: string, bots: readonly BotAccount[]): Promise<Write[]> {
  if (bots.length === 0) return [];
  const owned = (await deps.readModels.getJson<OwnedBots>(rm.ownedBots(ownerId))) ?? { ids: [], revision: -1 };
  const writes: Write[] = [];
  for (const bot of bots) {
    const nameStream = `username-${bot.user.username.toLowerCase()}`;
    const claims = await deps.store.readStream(nameStream);
    writes.push(
      { stream: `account-${bot.userId}`, scope: bot.userId, expected: bot.revision, events: [{ type: 'BotDeleted', data: {} }] },
      {
        stream: nameStream,
        scope: bot.userId,
        expected: claims.length === 0 ? 'no_stream' : claims.length - 1,
        events: [{ type: 'UsernameReleased', data: { userId: bot.userId, discriminator: bot.user.discriminator } }],
      },
    );
  }
  const disowned: DomainEvent[] = bots.map((b) => ({ type: 'BotDisowned', data: { botId: b.userId } }));
  writes.push({ stream: botsStream(ownerId), scope: ownerId, expected: owned.revision < 0 ? 'no_stream' : owned.revision, events: disowned });
  return writes;
}

/** The live bots a user owns (deleted ones and ids without a bot account left out). */
export async function loadOwnedBots(deps: Pick<AppDeps, 'readModels'>, ownerId: string): Promise<BotAccount[]> {
  const owned = await deps.readModels.getJson<OwnedBots>(rm.ownedBots(ownerId));
  const bots = await Promise.all((owned?.ids ?? []).map((id) => loadBot(deps, id)));
  return bots.filter((b): b is BotAccount => b !== null && b.bot.owner === ownerId);
}

/** A new bot token (Stoat: 64 characters) encrypted for the log, with its SHA-256. */
export function newBotToken(key: Buffer): { plain: string; token: string; tokenHash: string } {
  const plain = randomBytes(48).toString('base64url');
  return { plain, token: encryptSecret(key, TOKEN_PURPOSE, plain), tokenHash: createHash('sha256').update(plain).digest('hex') };
}

/** Stoat's Bot object; the token is shown to its owner only (the routes that call this are the owner's). */
export function presentBot(deps: Pick<AppDeps, 'secrets'>, a: BotAccount): Record<string, unknown> {
  const b = a.bot;
  return {
    _id: a.userId,
    owner: b.owner,
    token: decryptSecret(deps.secrets.tokenKey, TOKEN_PURPOSE, b.token) ?? '',
    public: b.public,
    ...(b.analytics ? { analytics: true } : {}),
    ...(b.discoverable ? { discoverable: true } : {}),
    ...(b.interactions_url !== undefined ? { interactions_url: b.interactions_url } : {}),
  };
}

/** The bot's user as its owner sees it. */
export async function presentBotUser(deps: Pick<AppDeps, 'readModels'>, a: BotAccount, viewerId: string): Promise<Record<string, unknown>> {
  const online = await deps.readModels.online([a.userId]);
  return presentUser(a.user, viewerId, online.has(a.userId));
}

/** Stoat's PublicBot: id, username, avatar id and profile description. */
export function presentPublicBot(a: BotAccount): Record<string, unknown> {
  return {
    _id: a.userId,
    username: a.user.username,
    ...(a.user.avatar ? { avatar: a.user.avatar._id } : {}),
    ...(a.user.profile?.content !== undefined ? { description: a.user.profile.content } : {}),
  };
}
