/**
 * Events of bots (Stoat's `Bot`). A bot is a user: its own events are on its `account-<botId>` stream (scope
 * = the bot id), so the accounts projection keeps its user profile (`bot: {owner}`) and its token index. The
 * owner's `bots-<ownerId>` stream (scope = the owner) lists the bots a user owns; the per-user bot limit is
 * decided on its revision. Tokens enter the log only encrypted (`token`) and as their SHA-256 (`tokenHash`).
 */
import { z } from 'zod';

/** The stream of a user's owned bots. */
export function botsStream(ownerId: string): string {
  return `bots-${ownerId}`;
}

export const botEvents = {
  /** A bot user was created (stream `account-<botId>`); `token` is encrypted under the configured key. */
  BotCreated: z.object({
    /** The bot's (and its user's) id. */
    id: z.string(),
    owner: z.string(),
    username: z.string(),
    discriminator: z.string(),
    /** The token, encrypted under `ServiceSecrets.tokenKey` (never plain in the log). */
    token: z.string(),
    /** SHA-256 (hex) of the token: how `X-Bot-Token` is looked up. */
    tokenHash: z.string(),
  }),
  /** Bot settings changed (only the given fields); `remove: ["InteractionsURL"]` clears the URL. */
  BotEdited: z.object({
    public: z.boolean().optional(),
    analytics: z.boolean().optional(),
    interactions_url: z.string().optional(),
    remove: z.array(z.enum(['InteractionsURL'])).default([]),
  }),
  /** The token was replaced (`remove: ["Token"]`): the old one stops working, the bot's sockets are closed. */
  BotTokenReset: z.object({ token: z.string(), tokenHash: z.string() }),
  /** The bot was deleted: its token stops working, its user is shown as deleted. */
  BotDeleted: z.object({}),
  /** A user came to own a bot (stream `bots-<ownerId>`). */
  BotOwned: z.object({ botId: z.string() }),
  /** A user's bot was deleted (stream `bots-<ownerId>`). */
  BotDisowned: z.object({ botId: z.string() }),
};
