// POST /auth/account/verify/:code — uses a verification token: a new account becomes verified (answer
// {ticket}: an authorised MFA ticket that logs it in, as Stoat), a pending email move happens (204).
import { AppError } from '../../../errors.ts';
import { tokenUserId } from '../../../domain/account/secrets.ts';
import type { DomainEvent } from '../../../domain/events.ts';
import type { Write } from '../../../commands.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { accountOf, newTicket, presentTicket, tokenMatches } from './accountTools.ts';

export default defineRoute({
  method: 'POST',
  path: '/auth/account/verify/:code',
  auth: 'none',
  // A mailed token (`<user id>.<random>`), not an invite code: a malformed one is the route's InvalidToken.
  params: { code: 'token' },
  async handler({ deps, meta, params }) {
    const code = params.code!;
    const userId = code.length <= 128 ? tokenUserId(code) : null;
    if (!userId) throw new AppError({ type: 'InvalidToken' });
    const stream = `account-${userId}`;
    const pre = await accountOf(deps, userId);
    const moving = pre?.verification?.kind === 'Moving' ? pre.verification : null;
    const lock = moving ? [stream, `email-${moving.emailKey}`] : [stream];
    const { result } = await deps.executor.execute({ ...meta, actor: userId }, lock, async () => {
      const state = await accountOf(deps, userId);
      const v = state?.verification;
      if (!state || !v || !tokenMatches(deps, v, code)) throw new AppError({ type: 'InvalidToken' });
      if (v.kind === 'Pending') {
        const t = newTicket(deps, userId, { validated: false, authorised: true });
        const events: DomainEvent[] = [{ type: 'EmailVerified', data: {} }, t.event];
        return { writes: [{ stream, scope: userId, expected: state.revision, events }], result: presentTicket(t.id, userId, t.token, { validated: false, authorised: true }) };
      }
      // A move: claim the new address (it may have been taken since the request), release the old one.
      const newStream = `email-${v.emailKey}`;
      const [last] = await deps.store.readStream(newStream, { direction: 'backwards', maxCount: 1 });
      if (last && last.type !== 'EmailReleased') throw new AppError({ type: 'InvalidToken' });
      const writes: Write[] = [
        { stream: newStream, scope: userId, expected: last ? last.revision : 'no_stream', events: [{ type: 'EmailClaimed', data: { userId } }] },
        { stream, scope: userId, expected: state.revision, events: [{ type: 'EmailChanged', data: { email: v.email, emailKey: v.emailKey } }] },
      ];
      if (state.emailKey) writes.push({ stream: `email-${state.emailKey}`, scope: userId, expected: 'any', events: [{ type: 'EmailReleased', data: { userId } }] });
      return { writes, result: null };
    });
    return result === null ? NO_CONTENT : { ticket: result };
  },
});
