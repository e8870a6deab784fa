// Shared by the auth routes: load the caller's account state or fail with InvalidSession; confirm its password under login's lockout.
import { AppError } from '../../../errors.ts';
import type { CommandMeta } from '../../../commands.ts';
import { decideFailedAttempt, isLockedOut } from '../../../domain/account/commands.ts';
import { verifyPassword } from '../../../domain/account/secrets.ts';
import type { AccountState } from '../../../domain/account/state.ts';
import { rm } from '../../../readmodel/keys.ts';
import type { AppDeps } from '../../deps.ts';

/** The caller's account state (its session exists, so the account does). */
export async function loadAccount(deps: AppDeps, userId: string): Promise<AccountState> {
  const state = await deps.readModels.getJson<AccountState>(rm.account(userId));
  if (!state) throw new AppError({ type: 'InvalidSession' });
  return state;
}

/**
 * Checks the caller's password confirming an operation, under login's lockout: refused while locked, even
 * the right password (403 LockedOut, or `locked` for routes whose documented errors have no LockedOut); a
 * wrong one is appended as a failed attempt (`LoginFailed`, which may lock) and answered 401
 * InvalidCredentials. Resolves with the account state the password was checked against.
 */
export async function confirmPassword(
  deps: AppDeps,
  meta: CommandMeta,
  userId: string,
  password: string,
  locked: 'LockedOut' | 'InvalidCredentials' = 'LockedOut',
): Promise<AccountState> {
  const stream = `account-${userId}`;
  const { result } = await deps.executor.execute(meta, [stream], async () => {
    const state = await loadAccount(deps, userId);
    const now = deps.now();
    if (isLockedOut(state, now)) throw new AppError({ type: locked });
    if (await verifyPassword(password, state.passwordHash)) return { writes: [], result: state };
    return { writes: [{ stream, scope: userId, expected: state.revision, events: [decideFailedAttempt(state, now)] }], result: null };
  });
  if (!result) throw new AppError({ type: 'InvalidCredentials' });
  return result;
}
