/** Bot tokens (`X-Bot-Token`, and a bot's `Authenticate` on the gateway) resolved to their bot user. */
import { botSessionId } from '../../projections/accounts.ts';
import { hashToken, sameDigest } from '../domain/account/secrets.ts';
import type { AccountState } from '../domain/account/state.ts';
import type { Caller } from '../http/route.ts';
import { rm } from '../readmodel/keys.ts';
import type { ReadModels } from '../readmodel/reader.ts';

/**
 * The bot a token belongs to, or null: looked up by the token's SHA-256, then the stored hash is compared with
 * it in constant time and the bot must still exist (a reset or a deletion removed the old hash's entry), and so
 * must its owner: the bots of a deleted account stop working with its sessions.
 */
export async function resolveBotToken(deps: { readModels: ReadModels }, token: string): Promise<Caller | null> {
  const tokenHash = hashToken(token);
  const entry = await deps.readModels.getJson<{ userId: string }>(rm.botToken(tokenHash));
  if (!entry) return null;
  const account = await deps.readModels.getJson<AccountState>(rm.account(entry.userId));
  if (!account?.bot || account.deleted || !sameDigest(account.bot.tokenHash, tokenHash)) return null;
  const owner = await deps.readModels.getJson<AccountState>(rm.account(account.bot.owner));
  if (!owner || owner.deleted) return null;
  return { userId: entry.userId, sessionId: botSessionId(entry.userId), tokenHash, bot: { owner: account.bot.owner } };
}
