// PATCH /auth/account/change/email {email, current_password} — with mail on, mails a confirmation link to the
// new address (the move happens when it is used); with mail off, moves at once. Wrong password → 401, counted
// with login's lockout; while locked, 403 LockedOut even with the right one.
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { decideFailedAttempt, isLockedOut } from '../../../domain/account/commands.ts';
import { emailDigest, verifyPassword } from '../../../domain/account/secrets.ts';
import type { Write } from '../../../commands.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { normaliseEmail } from './accountCreate.ts';
import { loadAccount } from './accountLoad.ts';
import { emailKey, newMailToken, sendLinkMail } from './accountTools.ts';

export default defineRoute({
  method: 'PATCH',
  path: '/auth/account/change/email',
  auth: 'session',
  body: z.strictObject({ email: z.string().max(320), current_password: z.string().max(1024) }),
  async handler({ deps, caller, meta, body }) {
    const email = normaliseEmail(body.email);
    const key = emailKey(deps, email);
    const stream = `account-${caller.userId}`;
    const newStream = `email-${key}`;
    const mail = deps.mail ? newMailToken(deps, caller.userId) : null;
    const { result } = await deps.executor.execute(meta, [stream, newStream], async (): Promise<{ writes: Write[]; result: AppError | undefined }> => {
      const state = await loadAccount(deps, caller.userId);
      const now = deps.now();
      if (isLockedOut(state, now)) throw new AppError({ type: 'LockedOut' });
      if (!(await verifyPassword(body.current_password, state.passwordHash))) {
        return { writes: [{ stream, scope: caller.userId, expected: state.revision, events: [decideFailedAttempt(state, now)] }], result: new AppError({ type: 'InvalidCredentials' }) };
      }
      if (state.verification?.kind === 'Pending') throw new AppError({ type: 'UnverifiedAccount' });
      if (mail) {
        return { writes: [{ stream, scope: caller.userId, expected: state.revision, events: [{ type: 'EmailChangeRequested', data: { email, emailKey: key, ...mail.pending } }] }], result: undefined };
      }
      const [last] = await deps.store.readStream(newStream, { direction: 'backwards', maxCount: 1 });
      if ((last && last.type !== 'EmailReleased') || (await deps.store.streamRevision(`email-${emailDigest(email)}`)) >= 0) {
        throw new AppError({ type: 'IncorrectData', with: 'email' });
      }
      const writes: Write[] = [
        { stream: newStream, scope: caller.userId, expected: last ? last.revision : 'no_stream', events: [{ type: 'EmailClaimed', data: { userId: caller.userId } }] },
        { stream, scope: caller.userId, expected: state.revision, events: [{ type: 'EmailChanged', data: { email, emailKey: key } }] },
      ];
      if (state.emailKey) writes.push({ stream: `email-${state.emailKey}`, scope: caller.userId, expected: 'any', events: [{ type: 'EmailReleased', data: { userId: caller.userId } }] });
      return { writes, result: undefined };
    });
    if (result) throw result;
    if (mail) await sendLinkMail(deps, 'change', email, mail.token);
    return NO_CONTENT;
  },
});
