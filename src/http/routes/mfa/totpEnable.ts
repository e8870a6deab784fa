// PUT /auth/mfa/totp {totp_code} — confirms the pending TOTP secret with a current code: two-factor login is
// on (204), with recovery codes if it had none. No pending secret → 400 InvalidOperation; a wrong code → 401 InvalidToken.
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { checkTotp, newRecoveryCodes, sealRecoveryCodes } from '../../../domain/account/mfa.ts';
import type { DomainEvent } from '../../../domain/events.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { loadAccount } from '../auth/accountLoad.ts';

export default defineRoute({
  method: 'PUT',
  path: '/auth/mfa/totp',
  auth: 'session',
  body: z.strictObject({ totp_code: z.string().max(16) }),
  async handler({ deps, caller, meta, body }) {
    const stream = `account-${caller.userId}`;
    await deps.executor.execute(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      if (state.totp?.status === 'Enabled') throw new AppError({ type: 'TotpAlreadyEnabled' });
      if (!state.totp) throw new AppError({ type: 'InvalidOperation' });
      const step = checkTotp(deps.secrets.totpKey, state.totp.secret, body.totp_code.trim(), deps.now(), state.totp.lastStep);
      if (step === null) throw new AppError({ type: 'InvalidToken' });
      // The confirming code is used up too: it cannot log in or make a ticket afterwards.
      const events: DomainEvent[] = [{ type: 'TotpEnabled', data: {} }, { type: 'TotpCodeUsed', data: { step } }];
      // Recovery codes exist from the start, so a lost authenticator never locks the owner out.
      if (!state.recovery) events.push({ type: 'RecoveryCodesGenerated', data: { codes: sealRecoveryCodes(deps.secrets.totpKey, newRecoveryCodes()) } });
      return { writes: [{ stream, scope: caller.userId, expected: state.revision, events }], result: undefined };
    });
    return NO_CONTENT;
  },
});
