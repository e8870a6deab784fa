// POST /auth/session/logout — closes the caller's session (204).
import { decideRevokeSession } from '../../../domain/account/commands.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { loadAccount } from './accountLoad.ts';
import { own } from '../../../own.ts';

export default defineRoute({
  method: 'POST',
  path: '/auth/session/logout',
  auth: 'session',
  async handler({ deps, caller, meta }) {
    const stream = `account-${caller.userId}`;
    await deps.executor.execute(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      if (!own(state.sessions, caller.sessionId)) return { writes: [], result: undefined };
      return {
        writes: [{ stream, scope: caller.userId, expected: state.revision, events: decideRevokeSession(state, caller.sessionId) }],
        result: undefined,
      };
    });
    return NO_CONTENT;
  },
});
