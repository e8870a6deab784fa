/** Accounts, sessions and user profiles: `account:<id>`, `account:email:<digest>`, `session:<hash>`, `user:<id>`. */
import { evolveAccount, type AccountState } from '../src/domain/account/state.ts';
import { emailDigest } from '../src/domain/account/secrets.ts';
import { rm } from '../src/readmodel/keys.ts';
import type { Projection } from './types.ts';

/** Session record looked up by token hash on every authenticated request. */
export interface SessionRecord {
  sessionId: string;
  userId: string;
  name: string;
}

export const accountsProjection: Projection = {
  name: 'accounts',
  handles: [
    'AccountCreated',
    'LoginFailed',
    'SessionCreated',
    'SessionRenamed',
    'SessionRevoked',
    'PasswordChanged',
    'UserOnboarded',
    'UserEdited',
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
        tx.setJson(rm.accountByEmail(emailDigest(e.data.email)), userId);
        break;
      case 'SessionCreated':
        tx.setJson(rm.session(e.data.tokenHash), { sessionId: e.data.sessionId, userId, name: e.data.name } satisfies SessionRecord);
        break;
      case 'SessionRenamed': {
        const s = after.sessions[e.data.sessionId];
        if (s) tx.setJson(rm.session(s.tokenHash), { sessionId: e.data.sessionId, userId, name: s.name } satisfies SessionRecord);
        break;
      }
      case 'SessionRevoked': {
        const s = before?.sessions[e.data.sessionId];
        if (s) tx.del(rm.session(s.tokenHash));
        // Internal to the gateway (never forwarded): the session's sockets get Logout and are closed.
        tx.emit({ kind: 'user', userId }, { type: 'DeleteSession', user_id: userId, session_id: e.data.sessionId });
        break;
      }
      case 'UserOnboarded':
      case 'UserEdited':
        if (after.user) {
          tx.setJson(rm.user(userId), after.user);
          tx.emit({ kind: 'userPresence', userId }, { type: 'UserUpdate', id: userId, data: after.user, clear: e.type === 'UserEdited' ? e.data.remove : [] });
        }
        break;
      default:
        break;
    }
  },
};
