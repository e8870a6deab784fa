// PUT /auth/mfa/ticket — {password} | {totp_code} | {recovery_code}: a validated MFA ticket (MFATicket) for
// the operations Stoat guards with one (X-MFA-Ticket). The methods allowed are the account's (GET /auth/mfa/methods).
// Under login's lockout: a wrong answer counts as a failed login; while locked, even the right one is 403 LockedOut.
import { AppError } from '../../../errors.ts';
import { countsAsFailedAttempt, decideFailedAttempt, isLockedOut } from '../../../domain/account/commands.ts';
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
    const { result } = await deps.executor.execute<AppError | ReturnType<typeof presentTicket>>(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      const now = deps.now();
      if (isLockedOut(state, now)) throw new AppError({ type: 'LockedOut' });
      let checked;
      try {
        checked = await checkMfaResponse(state, body, { totpKey: deps.secrets.totpKey, now });
      } catch (err) {
        if (!countsAsFailedAttempt(err)) throw err;
        return { writes: [{ stream, scope: caller.userId, expected: state.revision, events: [decideFailedAttempt(state, now)] }], result: err };
      }
      const t = newTicket(deps, caller.userId, { validated: true, authorised: false });
      return {
        writes: [{ stream, scope: caller.userId, expected: state.revision, events: [...checked.events, t.event] }],
        result: presentTicket(t.id, caller.userId, t.token, { validated: true, authorised: false }),
      };
    });
    if (result instanceof AppError) throw result;
    return result;
  },
});
