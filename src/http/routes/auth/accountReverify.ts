// POST /auth/account/reverify {email, captcha} — sends a new verification mail to an unverified account
// (204 whatever the email, so it reveals nothing; 400 OperationFailed when mail is off). The answer comes first
// and is the same work for every address: the lookup and the mail (within the address's hourly budget) happen after it.
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import type { AppDeps } from '../../deps.ts';
import type { CommandMeta } from '../../../commands.ts';
import { checkCaptcha } from './captcha.ts';
import { normaliseEmail } from './accountCreate.ts';
import { findAccountByEmail, newMailToken, queueLinkMail, runAfterAnswer, takeMailBudget } from './accountTools.ts';

export default defineRoute({
  method: 'POST',
  path: '/auth/account/reverify',
  auth: 'none',
  body: z.strictObject({ email: z.string().max(320), captcha: z.string().max(4096).nullish() }),
  async handler({ deps, meta, body }) {
    await checkCaptcha(deps, body.captcha);
    if (!deps.mail) throw new AppError({ type: 'OperationFailed' });
    const email = normaliseEmail(body.email);
    runAfterAnswer(deps, 'reverify', () => sendVerification(deps, meta, email));
    return NO_CONTENT;
  },
});

/** Looks the address up and, for an unverified account, records a new token and mails it (budget permitting). */
async function sendVerification(deps: AppDeps, meta: CommandMeta, email: string): Promise<void> {
  const found = await findAccountByEmail(deps, email);
  if (!found || found.verification?.kind !== 'Pending') return;
  if (!(await takeMailBudget(deps, email))) return;
  const stream = `account-${found.userId}`;
  const { token, pending } = newMailToken(deps, found.userId);
  const { result: sent } = await deps.executor.execute({ ...meta, actor: null }, [stream], async () => {
    const state = await findAccountByEmail(deps, email);
    if (!state || state.verification?.kind !== 'Pending') return { writes: [], result: false };
    return { writes: [{ stream, scope: state.userId, expected: state.revision, events: [{ type: 'EmailVerificationStarted', data: pending }] }], result: true };
  });
  if (sent) await queueLinkMail(deps, 'verify', email, token);
}
