// Shared by the auth routes: load the caller's account state or fail with InvalidSession.
import { AppError } from '../../../errors.ts';
import type { AccountState } from '../../../domain/account/state.ts';
import { rm } from '../../../readmodel/keys.ts';
import type { AppDeps } from '../../deps.ts';

/** The caller's account state (its session exists, so the account does). */
export async function loadAccount(deps: AppDeps, userId: string): Promise<AccountState> {
  const state = await deps.readModels.getJson<AccountState>(rm.account(userId));
  if (!state) throw new AppError({ type: 'InvalidSession' });
  return state;
}
