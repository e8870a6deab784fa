// POST /auth/account/disable — with a validated MFA ticket (X-MFA-Ticket): the account can no longer log in
// (login answers {result: "Disabled", user_id}); every session is revoked and its sockets closed.
import { decideRevokeAll } from '../../../domain/account/commands.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { loadAccount } from './accountLoad.ts';
import { requireValidatedTicket } from './accountTools.ts';

export default defineRoute({
  method: 'POST',
  path: '/auth/account/disable',
  auth: 'session',
  async handler({ deps, caller, meta, ctx }) {
    const stream = `account-${caller.userId}`;
    await deps.executor.execute(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      const consumed = requireValidatedTicket(deps, ctx, state);
      const events = [consumed, { type: 'AccountDisabled' as const, data: {} }, ...decideRevokeAll(state, null)];
      return { writes: [{ stream, scope: caller.userId, expected: state.revision, events }], result: undefined };
    });
    return NO_CONTENT;
  },
});
