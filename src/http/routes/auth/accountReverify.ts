// POST /auth/account/reverify {email, captcha} — sends a new verification mail to an unverified account
// (204 whatever the email, so it reveals nothing; 400 OperationFailed when mail is off).
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { checkCaptcha } from './captcha.ts';
import { normaliseEmail } from './accountCreate.ts';
import { findAccountByEmail, newMailToken, sendLinkMail } from './accountTools.ts';

export default defineRoute({
  method: 'POST',
  path: '/auth/account/reverify',
  auth: 'none',
  body: z.strictObject({ email: z.string().max(320), captcha: z.string().max(4096).nullish() }),
  async handler({ deps, meta, body }) {
    await checkCaptcha(deps, body.captcha);
    if (!deps.mail) throw new AppError({ type: 'OperationFailed' });
    const email = normaliseEmail(body.email);
    const found = await findAccountByEmail(deps, email);
    if (!found || found.verification?.kind !== 'Pending') return NO_CONTENT;
    const stream = `account-${found.userId}`;
    const { token, pending } = newMailToken(deps, found.userId);
    const { result: sent } = await deps.executor.execute({ ...meta, actor: null }, [stream], async () => {
      const state = await findAccountByEmail(deps, email);
      if (!state || state.verification?.kind !== 'Pending') return { writes: [], result: false };
      return { writes: [{ stream, scope: state.userId, expected: state.revision, events: [{ type: 'EmailVerificationStarted', data: pending }] }], result: true };
    });
    if (sent) await sendLinkMail(deps, 'verify', email, token);
    return NO_CONTENT;
  },
});
