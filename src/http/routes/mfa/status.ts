// GET /auth/mfa/ — MultiFactorStatus: which second factors the account has.
import { mfaEnabled, remainingRecovery } from '../../../domain/account/mfa.ts';
import { defineRoute } from '../../route.ts';
import { loadAccount } from '../auth/accountLoad.ts';

export default defineRoute({
  method: 'GET',
  path: '/auth/mfa/',
  auth: 'session',
  async handler({ deps, caller }) {
    const state = await loadAccount(deps, caller.userId);
    return {
      email_otp: false,
      trusted_handover: false,
      email_mfa: false,
      totp_mfa: mfaEnabled(state),
      security_key_mfa: false,
      recovery_active: remainingRecovery(state) > 0,
    };
  },
});
