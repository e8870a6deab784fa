// POST /auth/session/login — {email, password} or {mfa_ticket, mfa_response}: {result:"Success", _id, user_id,
// token, name, last_seen}, {result:"MFA", ticket, allowed_methods} or {result:"Disabled", user_id}.
//
// An unknown email is answered exactly like a wrong password (issue 17 item 7): the password is hashed
// against a stand-in hash, failures are counted on a `login-<keyed email digest>` stream with the same
// lockout steps, and the answer is the same 401 InvalidCredentials (403 LockedOut once locked).
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { newId } from '../../../ids.ts';
import { decideFailedAttempt, decideLogin } from '../../../domain/account/commands.ts';
import { allowedMethods, mfaEnabled } from '../../../domain/account/mfa.ts';
import { checkMfaResponse, MfaResponse } from '../../../domain/account/mfaResponse.ts';
import { dummyPasswordHash, hashToken, newSessionToken, tokenUserId, verifyPassword } from '../../../domain/account/secrets.ts';
import type { AccountState } from '../../../domain/account/state.ts';
import type { DomainEvent } from '../../../domain/events.ts';
import type { AppDeps } from '../../deps.ts';
import type { CommandMeta } from '../../../commands.ts';
import { defineRoute } from '../../route.ts';
import { normaliseEmail } from './accountCreate.ts';
import { accountOf, emailKey, findAccountByEmail, findTicket, newTicket } from './accountTools.ts';
import { sanctionActive, type SanctionState } from '../../../domain/moderation/state.ts';
import { rm } from '../../../readmodel/keys.ts';

const Body = z.strictObject({
  email: z.string().max(320).optional(),
  password: z.string().max(1024).optional(),
  mfa_ticket: z.string().max(128).optional(),
  mfa_response: MfaResponse.nullish(),
  friendly_name: z.string().max(72).nullish(),
});

// The stand-in hash is made at load, not by the first unknown-email login (that one would answer slower).
void dummyPasswordHash();

type Outcome =
  | { kind: 'fail'; error: AppError }
  | { kind: 'session'; sessionId: string; token: string; userId: string }
  | { kind: 'mfa'; ticket: string; methods: string[] }
  | { kind: 'disabled'; userId: string };

/** A failed attempt on an account: LoginFailed with the lockout it triggers. */
function failed(state: Pick<AccountState, 'attempts'>, now: Date): DomainEvent {
  return decideFailedAttempt(state, now.getTime());
}

function lockedOut(lockedUntil: string | null, now: Date): boolean {
  return lockedUntil !== null && Date.parse(lockedUntil) > now.getTime();
}

/** A login with an email no account has: the same work, the same lockout, the same answers. */
async function unknownLogin(deps: AppDeps, meta: CommandMeta, key: string, password: string): Promise<Outcome> {
  const stream = `login-${key}`;
  const { result } = await deps.executor.execute({ ...meta, actor: null }, [stream], async () => {
    const passwordOk = await verifyPassword(password, await dummyPasswordHash());
    const [last] = await deps.store.readStream(stream, { direction: 'backwards', maxCount: 1 });
    const prior = last?.type === 'LoginFailed' ? (last.data as { attempts: number; lockedUntil: string | null }) : { attempts: 0, lockedUntil: null };
    const now = deps.executor.now();
    if (lockedOut(prior.lockedUntil, now)) return { writes: [], result: new AppError({ type: 'LockedOut' }) };
    void passwordOk; // never true: nothing to log in to
    return {
      writes: [{ stream, scope: key, expected: last ? last.revision : 'no_stream', events: [failed(prior, now)] }],
      result: new AppError({ type: 'InvalidCredentials' }),
    };
  });
  return { kind: 'fail', error: result };
}

export default defineRoute({
  method: 'POST',
  path: '/auth/session/login',
  auth: 'none',
  body: Body,
  async handler({ body, deps, meta }) {
    const name = body.friendly_name ?? 'Unknown';
    let outcome: Outcome;
    if (body.mfa_ticket !== undefined) {
      if (body.email !== undefined || body.password !== undefined) throw new AppError({ type: 'FailedValidation', error: 'either email and password, or mfa_ticket' });
      outcome = await ticketLogin(deps, meta, body.mfa_ticket, body.mfa_response ?? null, name);
    } else {
      if (body.email === undefined || body.password === undefined) throw new AppError({ type: 'FailedValidation', error: 'email and password are required' });
      outcome = await passwordLogin(deps, meta, body.email, body.password, name);
    }
    switch (outcome.kind) {
      case 'fail':
        throw outcome.error;
      case 'mfa':
        return { result: 'MFA', ticket: outcome.ticket, allowed_methods: outcome.methods };
      case 'disabled':
        return { result: 'Disabled', user_id: outcome.userId };
      case 'session':
        return { result: 'Success', _id: outcome.sessionId, user_id: outcome.userId, token: outcome.token, name, last_seen: new Date(deps.now()).toISOString() };
    }
  },
});

/** Whether instance moderation has the account suspended or banned now. */
async function sanctioned(deps: AppDeps, userId: string): Promise<boolean> {
  return sanctionActive(await deps.readModels.getJson<SanctionState>(rm.sanction(userId)), deps.now());
}

async function passwordLogin(deps: AppDeps, meta: CommandMeta, rawEmail: string, password: string, name: string): Promise<Outcome> {
  let email: string;
  try {
    email = normaliseEmail(rawEmail);
  } catch {
    // Not an address at all: no account can have it; the same hashing work, the same answer.
    await verifyPassword(password, await dummyPasswordHash());
    throw new AppError({ type: 'InvalidCredentials' });
  }
  const found = await findAccountByEmail(deps, email);
  if (!found) return unknownLogin(deps, meta, emailKey(deps, email), password);
  const userId = found.userId;
  const stream = `account-${userId}`;
  const token = newSessionToken();
  const sessionId = newId();
  const { result } = await deps.executor.execute({ ...meta, actor: userId }, [stream], async (): Promise<{ writes: { stream: string; scope: string; expected: number; events: DomainEvent[] }[]; result: Outcome }> => {
    const state = await accountOf(deps, userId);
    if (!state) return { writes: [], result: { kind: 'fail', error: new AppError({ type: 'InvalidCredentials' }) } };
    const passwordOk = await verifyPassword(password, state.passwordHash);
    const now = deps.executor.now();
    const write = (events: DomainEvent[]) => [{ stream, scope: userId, expected: state.revision, events }];
    // Lockout first (whatever the password), then the password, as decideLogin always did.
    const d = (() => {
      try {
        return decideLogin(state, { now, passwordOk, sessionId, tokenHash: hashToken(token), name });
      } catch (err) {
        return err as AppError;
      }
    })();
    if (d instanceof AppError) return { writes: [], result: { kind: 'fail', error: d } };
    if (!d.ok) return { writes: write(d.events), result: { kind: 'fail', error: new AppError({ type: 'InvalidCredentials' }) } };
    if (state.verification?.kind === 'Pending') return { writes: [], result: { kind: 'fail', error: new AppError({ type: 'UnverifiedAccount' }) } };
    if (state.disabled) return { writes: [], result: { kind: 'disabled', userId } };
    // A suspended or banned account (instance moderation) opens no session: 403 LockedOut (the nearest type of
    // Stoat's authentication errors), said only after the right password.
    if (await sanctioned(deps, userId)) return { writes: [], result: { kind: 'fail', error: new AppError({ type: 'LockedOut' }) } };
    if (mfaEnabled(state)) {
      const t = newTicket(deps, userId, { validated: false, authorised: false });
      return { writes: write([t.event]), result: { kind: 'mfa', ticket: t.token, methods: allowedMethods(state) } };
    }
    return { writes: write(d.events), result: { kind: 'session', sessionId, token, userId } };
  });
  return result;
}

async function ticketLogin(deps: AppDeps, meta: CommandMeta, ticket: string, response: MfaResponse | null, name: string): Promise<Outcome> {
  const userId = tokenUserId(ticket);
  if (!userId) throw new AppError({ type: 'InvalidToken' });
  const stream = `account-${userId}`;
  const token = newSessionToken();
  const sessionId = newId();
  const { result } = await deps.executor.execute({ ...meta, actor: userId }, [stream], async (): Promise<{ writes: { stream: string; scope: string; expected: number; events: DomainEvent[] }[]; result: Outcome }> => {
    const state = await accountOf(deps, userId);
    const t = state ? findTicket(deps, state, ticket) : null;
    if (!state || !t) return { writes: [], result: { kind: 'fail', error: new AppError({ type: 'InvalidToken' }) } };
    const now = deps.executor.now();
    const write = (events: DomainEvent[]) => [{ stream, scope: userId, expected: state.revision, events }];
    // Lockout applies to the second factor as to the password.
    if (lockedOut(state.lockedUntil, now)) return { writes: [], result: { kind: 'fail', error: new AppError({ type: 'LockedOut' }) } };
    let extra: DomainEvent[] = [];
    if (!t.ticket.authorised) {
      if (!response) return { writes: [], result: { kind: 'fail', error: new AppError({ type: 'InvalidToken' }) } };
      try {
        extra = (await checkMfaResponse(state, response, { totpKey: deps.secrets.totpKey, now: now.getTime() })).events;
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        const countable = err.body.type === 'InvalidToken' || err.body.type === 'InvalidCredentials';
        return { writes: countable ? write([failed(state, now)]) : [], result: { kind: 'fail', error: err } };
      }
    }
    if (state.disabled) return { writes: write([{ type: 'MfaTicketConsumed', data: { ticketId: t.id } }]), result: { kind: 'disabled', userId } };
    if (await sanctioned(deps, userId)) return { writes: [], result: { kind: 'fail', error: new AppError({ type: 'LockedOut' }) } };
    return {
      writes: write([
        { type: 'MfaTicketConsumed', data: { ticketId: t.id } },
        ...extra,
        { type: 'SessionCreated', data: { sessionId, tokenHash: hashToken(token), name } },
      ]),
      result: { kind: 'session', sessionId, token, userId },
    };
  });
  return result;
}
