// POST /auth/account/delete — with a validated MFA ticket: mails a confirmation link (PUT /auth/account/delete
// confirms it). With mail off, the account is deleted at once (Stoat schedules it without a mail).
import type { DomainEvent } from '../../../domain/events.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { loadAccount } from './accountLoad.ts';
import { newMailToken, requireValidatedTicket, sendLinkMail } from './accountTools.ts';
import { deletionWrites } from './accountDeletion.ts';
import { botsStream } from '../../../domain/bot/events.ts';

export default defineRoute({
  method: 'POST',
  path: '/auth/account/delete',
  auth: 'session',
  async handler({ deps, caller, meta, ctx }) {
    const stream = `account-${caller.userId}`;
    const mail = deps.mail ? newMailToken(deps, caller.userId) : null;
    const { result: to } = await deps.executor.execute(meta, [stream, botsStream(caller.userId)], async () => {
      const state = await loadAccount(deps, caller.userId);
      const consumed = requireValidatedTicket(deps, ctx, state);
      if (!mail) return { writes: await deletionWrites(deps, state, [consumed]), result: null };
      const events: DomainEvent[] = [consumed, { type: 'AccountDeletionRequested', data: mail.pending }];
      return { writes: [{ stream, scope: caller.userId, expected: state.revision, events }], result: state.email };
    });
    if (mail && to) await sendLinkMail(deps, 'deletion', to, mail.token);
    return NO_CONTENT;
  },
});
