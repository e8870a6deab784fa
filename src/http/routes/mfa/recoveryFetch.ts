// POST /auth/mfa/recovery — with a validated MFA ticket: the unused recovery codes.
import { recoveryCodes } from '../../../domain/account/mfa.ts';
import { defineRoute } from '../../route.ts';
import { loadAccount } from '../auth/accountLoad.ts';
import { requireValidatedTicket } from '../auth/accountTools.ts';

export default defineRoute({
  method: 'POST',
  path: '/auth/mfa/recovery',
  auth: 'session',
  async handler({ deps, caller, meta, ctx }) {
    const stream = `account-${caller.userId}`;
    const { result } = await deps.executor.execute(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      const consumed = requireValidatedTicket(deps, ctx, state);
      return { writes: [{ stream, scope: caller.userId, expected: state.revision, events: [consumed] }], result: recoveryCodes(deps.secrets.totpKey, state).map((c) => c.code) };
    });
    return result;
  },
});
