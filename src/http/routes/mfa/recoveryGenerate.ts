// PATCH /auth/mfa/recovery — with a validated MFA ticket: ten new recovery codes (the old ones stop working).
import { newRecoveryCodes, sealRecoveryCodes } from '../../../domain/account/mfa.ts';
import { defineRoute } from '../../route.ts';
import { loadAccount } from '../auth/accountLoad.ts';
import { requireValidatedTicket } from '../auth/accountTools.ts';

export default defineRoute({
  method: 'PATCH',
  path: '/auth/mfa/recovery',
  auth: 'session',
  async handler({ deps, caller, meta, ctx }) {
    const stream = `account-${caller.userId}`;
    const codes = newRecoveryCodes();
    await deps.executor.execute(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      const consumed = requireValidatedTicket(deps, ctx, state);
      const events = [consumed, { type: 'RecoveryCodesGenerated' as const, data: { codes: sealRecoveryCodes(deps.secrets.totpKey, codes) } }];
      return { writes: [{ stream, scope: caller.userId, expected: state.revision, events }], result: undefined };
    });
    return codes;
  },
});
