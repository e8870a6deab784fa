// PUT /auth/mfa/ticket — {password} | {totp_code} | {recovery_code}: a validated MFA ticket (MFATicket) for
// the operations Stoat guards with one (X-MFA-Ticket). The methods allowed are the account's (GET /auth/mfa/methods).
import { AppError } from '../../../errors.ts';
import { checkMfaResponse, MfaResponse } from '../../../domain/account/mfaResponse.ts';
import { defineRoute } from '../../route.ts';
import { loadAccount } from '../auth/accountLoad.ts';
import { newTicket, presentTicket } from '../auth/accountTools.ts';

export default defineRoute({
  method: 'PUT',
  path: '/auth/mfa/ticket',
  auth: 'session',
  body: MfaResponse,
  async handler({ deps, caller, meta, body }) {
    const stream = `account-${caller.userId}`;
    const { result } = await deps.executor.execute(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      if (state.lockedUntil && Date.parse(state.lockedUntil) > deps.now()) throw new AppError({ type: 'LockedOut' });
      const checked = await checkMfaResponse(state, body, { totpKey: deps.secrets.totpKey, now: deps.now() });
      const t = newTicket(deps, caller.userId, { validated: true, authorised: false });
      return {
        writes: [{ stream, scope: caller.userId, expected: state.revision, events: [...checked.events, t.event] }],
        result: presentTicket(t.id, caller.userId, t.token, { validated: true, authorised: false }),
      };
    });
    return result;
  },
});
