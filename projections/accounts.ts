/** Accounts, sessions and user profiles: `account:<id>`, `account:email:<digest>`, `session:<hash>`, `user:<id>`. */
import { evolveAccount, userObject, type AccountState } from '../src/domain/account/state.ts';
import { emailDigest } from '../src/domain/account/secrets.ts';
import { rm } from '../src/readmodel/keys.ts';
import type { Projection, ProjectionTx } from './types.ts';
import type { OwnedBots } from './bots.ts';
import { own } from '../src/own.ts';

/** The session id every request and socket of a bot carries (its token is its only session). */
export function botSessionId(botId: string): string {
  return `bot:${botId}`;
}

/**
 * Closes the sockets of the bots `userId` owns, and its own if it is a bot (the gateway sends them Logout):
 * a sanction on the user or the owner's disabled account stops those tokens (`src/users/botToken.ts`).
 * Reads the owner's `bots:<id>` and `account:<id>`, both in the user's partition.
 */
export async function endBotSockets(tx: ProjectionTx, userId: string): Promise<void> {
  const account = await tx.getJson<AccountState>(rm.account(userId));
  const owned = await tx.getJson<OwnedBots>(rm.ownedBots(userId));
  const ids = [...(account?.bot ? [userId] : []), ...(owned?.ids ?? [])];
  for (const botId of ids) tx.emit({ kind: 'user', userId: botId }, { type: 'DeleteSession', user_id: botId, session_id: botSessionId(botId) });
}

/** Session record looked up by token hash on every authenticated request. */
export interface SessionRecord {
  sessionId: string;
  userId: string;
  name: string;
  /** The account has a user (onboarding done): saves user routes a second lookup. */
  onboarded?: boolean;
}

function sessionRecord(userId: string, sessionId: string, name: string, state: AccountState): SessionRecord {
  return { sessionId, userId, name, ...(state.user ? { onboarded: true } : {}) };
}

export const accountsProjection: Projection = {
  name: 'accounts',
  handles: [
    'AccountCreated',
    'LoginFailed',
    'SessionCreated',
    'SessionRenamed',
    'SessionRevoked',
    'PushSubscribed',
    'PushUnsubscribed',
    'PolicyChangesAcknowledged',
    'PasswordChanged',
    'UserOnboarded',
    'UserEdited',
    'EmailVerificationStarted',
    'EmailVerified',
    'EmailChangeRequested',
    'EmailChanged',
    'PasswordResetRequested',
    'AccountDisabled',
    'AccountDeletionRequested',
    'AccountDeleted',
    'MfaTicketCreated',
    'MfaTicketConsumed',
    'TotpSecretGenerated',
    'TotpEnabled',
    'TotpDisabled',
    'RecoveryCodesGenerated',
    'RecoveryCodeUsed',
    'UsernameChanged',
    'TotpCodeUsed',
    'BotCreated',
    'BotEdited',
    'BotTokenReset',
    'BotDeleted',
  ],
  async apply(e, tx) {
    if (!e.stream.startsWith('account-')) return;
    const userId = e.stream.slice('account-'.length);
    const before = await tx.getJson<AccountState>(rm.account(userId));
    const after = evolveAccount(before, e, e.revision);
    if (!after) return;
    tx.setJson(rm.account(userId), after);
    switch (e.type) {
      case 'AccountCreated':
        // A rebuild after deletion reads no email (its key is destroyed): nothing to index.
        if (after.emailKey || after.email) tx.setJson(rm.accountByEmail(after.emailKey ?? emailDigest(after.email)), userId);
        break;
      case 'EmailChanged':
        if (before?.emailKey || before?.email) tx.del(rm.accountByEmail(before.emailKey ?? emailDigest(before.email)));
        tx.setJson(rm.accountByEmail(e.data.emailKey), userId);
        break;
      case 'AccountDeleted':
        if (before?.emailKey || before?.email) tx.del(rm.accountByEmail(before.emailKey ?? emailDigest(before.email)));
        for (const [sessionId, sess] of Object.entries(before?.sessions ?? {})) {
          tx.del(rm.session(sess.tokenHash));
          tx.emit({ kind: 'user', userId }, { type: 'DeleteSession', user_id: userId, session_id: sessionId });
        }
        if (after.user) {
          tx.setJson(rm.user(userId), after.user);
          tx.emit({ kind: 'userPresence', userId }, {
            type: 'UserUpdate',
            id: userId,
            data: { username: after.user.username, discriminator: after.user.discriminator, flags: after.user.flags },
            clear: ['Avatar', 'StatusText', 'StatusPresence', 'ProfileContent', 'ProfileBackground', 'DisplayName'],
          });
        }
        break;
      case 'AccountDisabled':
        await endBotSockets(tx, userId);
        break;
      case 'BotCreated':
        tx.setJson(rm.botToken(e.data.tokenHash), { userId });
        if (after.user) tx.setJson(rm.user(userId), after.user);
        break;
      case 'BotTokenReset':
      case 'BotDeleted':
        if (before?.bot) tx.del(rm.botToken(before.bot.tokenHash));
        if (e.type === 'BotTokenReset') tx.setJson(rm.botToken(e.data.tokenHash), { userId });
        // Internal to the gateway: the bot's sockets (all opened with the old token) get Logout and close.
        tx.emit({ kind: 'user', userId }, { type: 'DeleteSession', user_id: userId, session_id: botSessionId(userId) });
        if (e.type === 'BotDeleted' && after.user) {
          tx.setJson(rm.user(userId), after.user);
          tx.emit({ kind: 'userPresence', userId }, {
            type: 'UserUpdate',
            id: userId,
            data: { username: after.user.username, discriminator: after.user.discriminator, flags: after.user.flags },
            clear: ['Avatar', 'StatusText', 'StatusPresence', 'ProfileContent', 'ProfileBackground', 'DisplayName'],
          });
        }
        break;
      case 'SessionCreated':
        tx.setJson(rm.session(e.data.tokenHash), sessionRecord(userId, e.data.sessionId, e.data.name, after));
        break;
      case 'SessionRenamed': {
        const s = own(after.sessions, e.data.sessionId);
        if (s) tx.setJson(rm.session(s.tokenHash), sessionRecord(userId, e.data.sessionId, s.name, after));
        break;
      }
      case 'SessionRevoked': {
        const s = own(before?.sessions, e.data.sessionId);
        if (s) tx.del(rm.session(s.tokenHash));
        // Internal to the gateway (never forwarded): the session's sockets get Logout and are closed.
        tx.emit({ kind: 'user', userId }, { type: 'DeleteSession', user_id: userId, session_id: e.data.sessionId });
        break;
      }
      case 'UserOnboarded':
      case 'UsernameChanged':
      case 'UserEdited':
        if (e.type === 'UserOnboarded') {
          for (const [sessionId, sess] of Object.entries(after.sessions)) tx.setJson(rm.session(sess.tokenHash), sessionRecord(userId, sessionId, sess.name, after));
        }
        if (after.user) {
          tx.setJson(rm.user(userId), after.user);
          tx.emit({ kind: 'userPresence', userId }, { type: 'UserUpdate', id: userId, data: userObject(after.user), clear: e.type === 'UserEdited' ? e.data.remove : [] });
        }
        break;
      default:
        break;
    }
  },
};
