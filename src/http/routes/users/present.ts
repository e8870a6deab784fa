/** Revolt-shaped User objects (reference §8) from the stored profile. */
import type { AccountState, UserProfile } from '../../../domain/account/state.ts';

/** The caller's own user: relationship "User", online. */
export function presentSelf(state: AccountState): Record<string, unknown> {
  if (!state.user) throw new Error('presentSelf before onboarding');
  return { ...state.user, relationship: 'User', online: true };
}

/** Another user as seen by the caller. */
export function presentUser(profile: UserProfile, viewerId: string, online = false): Record<string, unknown> {
  if (profile._id === viewerId) return { ...profile, relationship: 'User', online: true };
  return { ...profile, relationship: 'None', online };
}
