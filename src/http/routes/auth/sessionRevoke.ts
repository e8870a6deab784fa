// DELETE /auth/session/:session_id — revokes one of the caller's sessions (204; unknown id → 404).
import { decideRevokeSession } from '../../../domain/account/commands.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { loadAccount } from './accountLoad.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/auth/session/:session_id',
  auth: 'session',
  async handler({ deps, caller, meta, params }) {
    const stream = `account-${caller.userId}`;
    await deps.executor.execute(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      return {
        writes: [{ stream, scope: caller.userId, expected: state.revision, events: decideRevokeSession(state, params.session_id!) }],
        result: undefined,
      };
    });
    return NO_CONTENT;
  },
});
