// DELETE /auth/mfa/totp — with a validated MFA ticket: two-factor login by TOTP is turned off (204).
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { loadAccount } from '../auth/accountLoad.ts';
import { requireValidatedTicket } from '../auth/accountTools.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/auth/mfa/totp',
  auth: 'session',
  async handler({ deps, caller, meta, ctx }) {
    const stream = `account-${caller.userId}`;
    await deps.executor.execute(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      const consumed = requireValidatedTicket(deps, ctx, state);
      return { writes: [{ stream, scope: caller.userId, expected: state.revision, events: [consumed, { type: 'TotpDisabled' as const, data: {} }] }], result: undefined };
    });
    return NO_CONTENT;
  },
});
