// PATCH /auth/account/change/password — {password, current_password} (204; wrong current → 401, counted with
// login's lockout; while locked, 403 LockedOut even with the right one).
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { decideFailedAttempt, isLockedOut } from '../../../domain/account/commands.ts';
import { hashPassword, verifyPassword } from '../../../domain/account/secrets.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { loadAccount } from './accountLoad.ts';

export default defineRoute({
  method: 'PATCH',
  path: '/auth/account/change/password',
  auth: 'session',
  body: z.strictObject({ password: z.string().max(1024), current_password: z.string().max(1024) }),
  async handler({ deps, caller, meta, body }) {
    if (new TextEncoder().encode(body.password).length < 8) throw new AppError({ type: 'ShortPassword' });
    const passwordHash = await hashPassword(body.password);
    const stream = `account-${caller.userId}`;
    const { result } = await deps.executor.execute(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      const now = deps.now();
      if (isLockedOut(state, now)) throw new AppError({ type: 'LockedOut' });
      if (!(await verifyPassword(body.current_password, state.passwordHash))) {
        return { writes: [{ stream, scope: caller.userId, expected: state.revision, events: [decideFailedAttempt(state, now)] }], result: new AppError({ type: 'InvalidCredentials' }) };
      }
      return { writes: [{ stream, scope: caller.userId, expected: state.revision, events: [{ type: 'PasswordChanged', data: { passwordHash } }] }], result: undefined };
    });
    if (result) throw result;
    return NO_CONTENT;
  },
});
