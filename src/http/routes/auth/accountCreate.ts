// POST /auth/account/create — registers an account (204; an email already in use also answers 204).
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { newId } from '../../../ids.ts';
import { emailDigest, hashPassword } from '../../../domain/account/secrets.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';

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

export default defineRoute({
  method: 'POST',
  path: '/auth/account/create',
  auth: 'none',
  body: Body,
  async handler({ body, deps, meta }) {
    const email = normaliseEmail(body.email);
    if (new TextEncoder().encode(body.password).length < 8) throw new AppError({ type: 'ShortPassword' });
    const passwordHash = await hashPassword(body.password);
    const emailStream = `email-${emailDigest(email)}`;
    const userId = newId();
    await deps.executor.execute({ ...meta, actor: userId }, [emailStream], async () => {
      // Registered already: Revolt answers 204 without saying so (no account enumeration).
      if ((await deps.store.streamRevision(emailStream)) >= 0) return { writes: [], result: undefined };
      return {
        result: undefined,
        writes: [
          { stream: emailStream, scope: userId, expected: 'no_stream', events: [{ type: 'EmailClaimed', data: { userId } }] },
          {
            stream: `account-${userId}`,
            scope: userId,
            expected: 'no_stream',
            events: [{ type: 'AccountCreated', data: { userId, email, passwordHash } }],
          },
        ],
      };
    });
    return NO_CONTENT;
  },
});
