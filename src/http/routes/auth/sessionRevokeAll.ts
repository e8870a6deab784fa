// DELETE /auth/session/all?revoke_self=bool — revokes every session, the caller's own only with revoke_self.
import { z } from 'zod';
import { decideRevokeAll } from '../../../domain/account/commands.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { queryBool } from '../../query.ts';
import { loadAccount } from './accountLoad.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/auth/session/all',
  auth: 'session',
  query: z.object({ revoke_self: queryBool.optional() }),
  async handler({ deps, caller, meta, query }) {
    const stream = `account-${caller.userId}`;
    await deps.executor.execute(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      const events = decideRevokeAll(state, query.revoke_self ? null : caller.sessionId);
      return { writes: [{ stream, scope: caller.userId, expected: state.revision, events }], result: undefined };
    });
    return NO_CONTENT;
  },
});
