// PATCH /auth/account/reset_password {token, password, remove_sessions} — sets a new password with a mailed
// reset token (single-use: the change clears it; 401 InvalidToken when unknown, used or expired).
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { decideRevokeAll } from '../../../domain/account/commands.ts';
import { hashPassword, tokenUserId } from '../../../domain/account/secrets.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { accountOf, tokenMatches } from './accountTools.ts';

export default defineRoute({
  method: 'PATCH',
  path: '/auth/account/reset_password',
  auth: 'none',
  body: z.strictObject({ token: z.string().max(128), password: z.string().max(1024), remove_sessions: z.boolean().nullish() }),
  async handler({ deps, meta, body }) {
    const userId = tokenUserId(body.token);
    if (!userId) throw new AppError({ type: 'InvalidToken' });
    if (new TextEncoder().encode(body.password).length < 8) throw new AppError({ type: 'ShortPassword' });
    const passwordHash = await hashPassword(body.password);
    const stream = `account-${userId}`;
    await deps.executor.execute({ ...meta, actor: userId }, [stream], async () => {
      const state = await accountOf(deps, userId);
      if (!state || !tokenMatches(deps, state.passwordReset, body.token)) throw new AppError({ type: 'InvalidToken' });
      const events = [
        { type: 'PasswordChanged' as const, data: { passwordHash, viaReset: true } },
        ...(body.remove_sessions ? decideRevokeAll(state, null) : []),
      ];
      return { writes: [{ stream, scope: userId, expected: state.revision, events }], result: undefined };
    });
    return NO_CONTENT;
  },
});
