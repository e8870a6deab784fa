// POST /auth/account/create — registers an account (204; an email already in use also answers 204).
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { newId } from '../../../ids.ts';
import { emailDigest, hashPassword } from '../../../domain/account/secrets.ts';
import { decryptSecret } from '../../../personal/cipher.ts';
import type { Write } from '../../../commands.ts';
import type { AppDeps } from '../../deps.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { checkCaptcha } from './captcha.ts';
import { emailKey, findAccountByEmail, newMailToken, sendLinkMail } from './accountTools.ts';

const Body = z.strictObject({
  email: z.string().max(320),
  password: z.string().max(1024),
  invite: z.string().max(128).nullish(),
  captcha: z.string().max(4096).nullish(),
});

/** Lower-cased, trimmed email; IncorrectData when it does not look like one. */
export function normaliseEmail(raw: string): string {
  const email = raw.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) throw new AppError({ type: 'IncorrectData', with: 'email' });
  return email;
}

/** The stream of an account invite: named by the SHA-256 of its code (the code itself is a secret). */
export function accountInviteStream(code: string): string {
  return `accountinvite-${createHash('sha256').update(code).digest('hex')}`;
}

/**
 * With INVITE_ONLY, the write that uses up the invite (Stoat's account invites are single-use):
 * none given → 400 MissingInvite; unknown or used → 400 InvalidInvite. A code of ACCOUNT_INVITES is valid
 * until used; a created one (`npm run accounts -- invite create`) has its `AccountInviteCreated`.
 */
async function useInvite(deps: AppDeps, code: string | null | undefined, userId: string): Promise<Write | null> {
  if (!deps.config.inviteOnly) return null;
  if (!code) throw new AppError({ type: 'MissingInvite' });
  const stream = accountInviteStream(code);
  const events = await deps.store.readStream(stream);
  const fixed = deps.config.accountInvites.includes(code);
  const created = events.some((e) => e.type === 'AccountInviteCreated' && decryptSecret(deps.secrets.totpKey, 'invite', (e.data as { code: string }).code) === code);
  if ((!fixed && !created) || events.some((e) => e.type === 'AccountInviteUsed')) throw new AppError({ type: 'InvalidInvite' });
  return { stream, scope: userId, expected: events.length === 0 ? 'no_stream' : events.length - 1, events: [{ type: 'AccountInviteUsed', data: { userId } }] };
}

export default defineRoute({
  method: 'POST',
  path: '/auth/account/create',
  auth: 'none',
  body: Body,
  async handler({ body, deps, meta }) {
    await checkCaptcha(deps, body.captcha);
    const email = normaliseEmail(body.email);
    if (new TextEncoder().encode(body.password).length < 8) throw new AppError({ type: 'ShortPassword' });
    const passwordHash = await hashPassword(body.password);
    const key = emailKey(deps, email);
    const emailStream = `email-${key}`;
    const userId = newId();
    const mail = deps.mail ? newMailToken(deps, userId) : null;
    const { result: created } = await deps.executor.execute({ ...meta, actor: userId }, [emailStream], async () => {
      const invite = await useInvite(deps, body.invite, userId);
      const claims = await deps.store.readStream(emailStream, { direction: 'backwards', maxCount: 1 });
      const last = claims[0];
      // Registered already (here, or under the plain digest of older accounts): Revolt answers 204 without
      // saying so (no account enumeration).
      if ((last && last.type !== 'EmailReleased') || (await deps.store.streamRevision(`email-${emailDigest(email)}`)) >= 0) {
        return { writes: [], result: false };
      }
      return {
        result: true,
        writes: [
          ...(invite ? [invite] : []),
          { stream: emailStream, scope: userId, expected: last ? last.revision : 'no_stream', events: [{ type: 'EmailClaimed', data: { userId } }] },
          {
            stream: `account-${userId}`,
            scope: userId,
            expected: 'no_stream',
            events: [
              { type: 'AccountCreated', data: { userId, email, passwordHash, emailKey: key } },
              ...(mail ? [{ type: 'EmailVerificationStarted' as const, data: mail.pending }] : []),
            ],
          },
        ],
      };
    });
    if (created && mail) await sendLinkMail(deps, 'verify', email, mail.token);
    if (!created && deps.mail) {
      // As Stoat: a sign-up with a registered email re-sends the verification, or a password reset, to its owner.
      void resendToOwner(deps, email, meta).catch((err: unknown) => deps.log.warn({ err }, 'resend on duplicate sign-up failed'));
    }
    return NO_CONTENT;
  },
});

async function resendToOwner(deps: AppDeps, email: string, meta: { actor: string | null; requestId: string }): Promise<void> {
  const state = await findAccountByEmail(deps, email);
  if (!state) return;
  const stream = `account-${state.userId}`;
  const { token, pending } = newMailToken(deps, state.userId);
  const pendingVerify = state.verification?.kind === 'Pending';
  await deps.executor.execute({ ...meta, actor: null }, [stream], async () => ({
    result: undefined,
    writes: [{ stream, scope: state.userId, expected: 'any', events: [pendingVerify ? { type: 'EmailVerificationStarted', data: pending } : { type: 'PasswordResetRequested', data: pending }] }],
  }));
  await sendLinkMail(deps, pendingVerify ? 'verify' : 'reset', email, token);
}
