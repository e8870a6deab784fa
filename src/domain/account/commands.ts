/** Decisions of the account aggregate: pure functions of (command, state, ctx). */
import { AppError } from '../../errors.ts';
import type { DomainEvent } from '../events.ts';
import type { AccountState } from './state.ts';
import { own } from '../../own.ts';
import { renderableName, UNRENDERABLE_NAME } from '../../text.ts';

/** Lockout after the n-th consecutive failure (Revolt: 3rd → 1 min, 4th → 5 min, 5th and later → 1 h). */
export function lockoutMs(attempts: number): number | null {
  if (attempts >= 5) return 60 * 60_000;
  if (attempts === 4) return 5 * 60_000;
  if (attempts === 3) return 60_000;
  return null;
}

/** Whether the account is locked out at `now` (ms). */
export function isLockedOut(state: Pick<AccountState, 'lockedUntil'>, now: number): boolean {
  return state.lockedUntil !== null && Date.parse(state.lockedUntil) > now;
}

/**
 * A wrong password or second factor, at login or confirming an operation with a session (password change,
 * email change, username change, MFA ticket): one more consecutive failure, with the lockout it triggers.
 */
export function decideFailedAttempt(state: Pick<AccountState, 'attempts'>, now: number): DomainEvent {
  const attempts = state.attempts + 1;
  const ms = lockoutMs(attempts);
  return { type: 'LoginFailed', data: { attempts, lockedUntil: ms === null ? null : new Date(now + ms).toISOString() } };
}

/** Whether a refusal of a password or second factor counts as a failed attempt (a wrong one, not a disallowed method). */
export function countsAsFailedAttempt(err: unknown): err is AppError {
  return err instanceof AppError && (err.body.type === 'InvalidCredentials' || err.body.type === 'InvalidToken');
}

/** Context of a login decision. */
export interface LoginContext {
  now: Date;
  passwordOk: boolean;
  sessionId: string;
  tokenHash: string;
  name: string;
}

/**
 * Login: a locked account is refused whatever the password (403 LockedOut); a wrong password records a
 * failure (and maybe a lockout); a right one opens a session.
 */
export function decideLogin(state: AccountState, ctx: LoginContext): { events: DomainEvent[]; ok: boolean } {
  if (state.lockedUntil && Date.parse(state.lockedUntil) > ctx.now.getTime()) {
    throw new AppError({ type: 'LockedOut' });
  }
  if (!ctx.passwordOk) {
    const attempts = state.attempts + 1;
    const ms = lockoutMs(attempts);
    const lockedUntil = ms === null ? null : new Date(ctx.now.getTime() + ms).toISOString();
    return { events: [{ type: 'LoginFailed', data: { attempts, lockedUntil } }], ok: false };
  }
  return {
    events: [{ type: 'SessionCreated', data: { sessionId: ctx.sessionId, tokenHash: ctx.tokenHash, name: ctx.name } }],
    ok: true,
  };
}

/** Revokes one session; an unknown id is 404 NotFound. */
export function decideRevokeSession(state: AccountState, sessionId: string): DomainEvent[] {
  if (!own(state.sessions, sessionId)) throw new AppError({ type: 'NotFound' });
  return [{ type: 'SessionRevoked', data: { sessionId } }];
}

/** Revokes every session, optionally keeping one. */
export function decideRevokeAll(state: AccountState, keep: string | null): DomainEvent[] {
  return Object.keys(state.sessions)
    .filter((id) => id !== keep)
    .map((sessionId) => ({ type: 'SessionRevoked', data: { sessionId } }) as DomainEvent);
}

const BLOCKED_EXACT = new Set(['admin', 'revolt', 'stoat']);
const BLOCKED_PARTS = ['```', 'discord.gg', 'rvlt.gg', 'guilded.gg', 'stt.gg', 'revolt.chat', 'stoat.chat', 'http://', 'https://'];

/**
 * Revolt's username rules (reference §3.3): 2–32 characters of letters, digits, `_`, `.`, `-`; names that
 * impersonate the service or carry links are refused (400 InvalidUsername). The name is NFKC-normalised
 * first (compatibility forms such as full-width letters fold to plain ones), case kept.
 */
export function normaliseUsername(raw: string): string {
  if (!renderableName(raw)) throw new AppError({ type: 'FailedValidation', error: `username ${UNRENDERABLE_NAME}` });
  const name = raw.normalize('NFKC');
  const length = [...name].length;
  if (length < 2 || length > 32 || !/^(\p{L}|[\d_.-])+$/u.test(name)) {
    throw new AppError({ type: 'FailedValidation', error: 'username must be 2–32 letters, digits, "_", "." or "-"' });
  }
  const lower = name.toLowerCase();
  if (BLOCKED_EXACT.has(lower) || BLOCKED_PARTS.some((p) => lower.includes(p))) {
    throw new AppError({ type: 'InvalidUsername' });
  }
  return name;
}

/** Discriminators never handed out (reference §3.3). */
function excluded(d: string): boolean {
  return d === '0123' || d === '1234' || d === '1488' || /^(\d)\1{3}$/.test(d);
}

/** Picks a free discriminator in 0002–9998 at random; 409 UsernameTaken when none is free. */
export function pickDiscriminator(used: ReadonlySet<string>, random: () => number): string {
  const start = 2 + Math.floor(random() * 9997);
  for (let i = 0; i < 9997; i++) {
    const n = 2 + ((start - 2 + i) % 9997);
    const d = String(n).padStart(4, '0');
    if (!used.has(d) && !excluded(d)) return d;
  }
  throw new AppError({ type: 'UsernameTaken' });
}

/** The discriminators of a username taken now, from its uniqueness stream (claims minus releases). */
export function discriminatorsInUse(events: ReadonlyArray<{ type: string; data: unknown }>): Set<string> {
  const holder = new Map<string, string>();
  for (const e of events) {
    const d = e.data as { userId: string; discriminator: string };
    if (e.type === 'UsernameClaimed') holder.set(d.discriminator, d.userId);
    else if (e.type === 'UsernameReleased' && holder.get(d.discriminator) === d.userId) holder.delete(d.discriminator);
  }
  return new Set(holder.keys());
}

/**
 * A username change (Stoat's `update_username`): the same name in another case keeps the discriminator;
 * another name keeps it when it is free there (and not an excluded one), else a free one is picked at random
 * (409 UsernameTaken when none is). The same name exactly changes nothing.
 */
export function decideUsernameChange(
  current: { username: string; discriminator: string },
  username: string,
  used: ReadonlySet<string>,
  random: () => number,
): { discriminator: string; sameName: boolean; unchanged: boolean } {
  if (current.username.toLowerCase() === username.toLowerCase()) {
    return { discriminator: current.discriminator, sameName: true, unchanged: current.username === username };
  }
  const keep = !used.has(current.discriminator) && !excluded(current.discriminator);
  return { discriminator: keep ? current.discriminator : pickDiscriminator(used, random), sameName: false, unchanged: false };
}

/** Onboarding: only once (403 AlreadyOnboarded). */
export function decideOnboard(state: AccountState, username: string, discriminator: string): DomainEvent[] {
  if (state.user) throw new AppError({ type: 'AlreadyOnboarded' });
  return [{ type: 'UserOnboarded', data: { username, discriminator } }];
}
