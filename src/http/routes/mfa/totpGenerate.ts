// POST /auth/mfa/totp — with a validated MFA ticket: a new TOTP secret {secret} (base32), pending until
// PUT /auth/mfa/totp confirms it with a code. 400 TotpAlreadyEnabled while TOTP is on.
import { AppError } from '../../../errors.ts';
import { mfaEnabled, newTotpSecret, sealTotpSecret } from '../../../domain/account/mfa.ts';
import { defineRoute } from '../../route.ts';
import { loadAccount } from '../auth/accountLoad.ts';
import { requireValidatedTicket } from '../auth/accountTools.ts';

export default defineRoute({
  method: 'POST',
  path: '/auth/mfa/totp',
  auth: 'session',
  async handler({ deps, caller, meta, ctx }) {
    const stream = `account-${caller.userId}`;
    const secret = newTotpSecret();
    await deps.executor.execute(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      const consumed = requireValidatedTicket(deps, ctx, state);
      if (mfaEnabled(state)) throw new AppError({ type: 'TotpAlreadyEnabled' });
      const events = [consumed, { type: 'TotpSecretGenerated' as const, data: { secret: sealTotpSecret(deps.secrets.totpKey, secret) } }];
      return { writes: [{ stream, scope: caller.userId, expected: state.revision, events }], result: undefined };
    });
    return { secret };
  },
});
