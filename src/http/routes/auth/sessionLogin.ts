// POST /auth/session/login — opens a session: {result:"Success", _id, user_id, token, name, last_seen}.
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { newId } from '../../../ids.ts';
import { decideLogin } from '../../../domain/account/commands.ts';
import { emailDigest, hashToken, newSessionToken, verifyPassword } from '../../../domain/account/secrets.ts';
import type { AccountState } from '../../../domain/account/state.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute } from '../../route.ts';
import { normaliseEmail } from './accountCreate.ts';
import { sanctionActive, type SanctionState } from '../../../domain/moderation/state.ts';

const Body = z.strictObject({
  email: z.string().max(320),
  password: z.string().max(1024),
  friendly_name: z.string().max(72).nullish(),
});

export default defineRoute({
  method: 'POST',
  path: '/auth/session/login',
  auth: 'none',
  body: Body,
  async handler({ body, deps, meta }) {
    let email: string;
    try {
      email = normaliseEmail(body.email);
    } catch {
      throw new AppError({ type: 'InvalidCredentials' });
    }
    const userId = await deps.readModels.getJson<string>(rm.accountByEmail(emailDigest(email)));
    if (!userId) throw new AppError({ type: 'InvalidCredentials' });
    const stream = `account-${userId}`;
    const token = newSessionToken();
    const sessionId = newId();
    const name = body.friendly_name ?? 'Unknown';
    const { result } = await deps.executor.execute({ ...meta, actor: userId }, [stream], async () => {
      const state = await deps.readModels.getJson<AccountState>(rm.account(userId));
      if (!state) throw new AppError({ type: 'InvalidCredentials' });
      const passwordOk = await verifyPassword(body.password, state.passwordHash);
      const d = decideLogin(state, { now: deps.executor.now(), passwordOk, sessionId, tokenHash: hashToken(token), name });
      // A suspended or banned account (instance moderation) opens no session: 403 LockedOut (the nearest type of
      // Stoat's authentication errors), said only after the right password.
      if (d.ok && sanctionActive(await deps.readModels.getJson<SanctionState>(rm.sanction(userId)), deps.now())) {
        throw new AppError({ type: 'LockedOut' });
      }
      return { writes: [{ stream, scope: userId, expected: state.revision, events: d.events }], result: d.ok };
    });
    if (!result) throw new AppError({ type: 'InvalidCredentials' });
    return { result: 'Success', _id: sessionId, user_id: userId, token, name, last_seen: new Date(deps.now()).toISOString() };
  },
});
