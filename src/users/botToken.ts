/** Bot tokens (`X-Bot-Token`, and a bot's `Authenticate` on the gateway) resolved to their bot user. */
import { botSessionId } from '../../projections/accounts.ts';
import { hashToken, sameDigest } from '../domain/account/secrets.ts';
import type { AccountState } from '../domain/account/state.ts';
import { sanctionActive, type SanctionState } from '../domain/moderation/state.ts';
import type { Caller } from '../http/route.ts';
import { rm } from '../readmodel/keys.ts';
import type { ReadModels } from '../readmodel/reader.ts';

/**
 * The bot a token belongs to, or null: looked up by the token's SHA-256, then the stored hash is compared with
 * it in constant time and the bot must still exist (a reset or a deletion removed the old hash's entry).
 * A bot also stops working while a sanction stands on it or on its owner, and once its owner's account is
 * disabled or deleted. Those facts are read from Redis on every call (never from an API process's fact cache),
 * so a sanction projected once holds on every process; a lifted or expired one lets the token work again.
 */
export async function resolveBotToken(deps: { readModels: ReadModels; now: () => number }, token: string): Promise<Caller | null> {
  const tokenHash = hashToken(token);
  const entry = await deps.readModels.getJson<{ userId: string }>(rm.botToken(tokenHash));
  if (!entry) return null;
  const account = await deps.readModels.getJson<AccountState>(rm.account(entry.userId));
  if (!account?.bot || account.deleted || !sameDigest(account.bot.tokenHash, tokenHash)) return null;
  const owner = account.bot.owner;
  const [botSanction, ownerSanction, ownerAccount] = await Promise.all([
    deps.readModels.getJson<SanctionState>(rm.sanction(entry.userId)),
    deps.readModels.getJson<SanctionState>(rm.sanction(owner)),
    deps.readModels.getJson<AccountState>(rm.account(owner)),
  ]);
  const now = deps.now();
  if (sanctionActive(botSanction, now) || sanctionActive(ownerSanction, now)) return null;
  if (!ownerAccount || ownerAccount.disabled || ownerAccount.deleted) return null;
  return { userId: entry.userId, sessionId: botSessionId(entry.userId), tokenHash, bot: { owner } };
}
