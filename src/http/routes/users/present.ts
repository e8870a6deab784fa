/** Revolt-shaped User objects (reference §8) from the stored profile, with presence. */
import { userObject, type AccountState, type UserProfile } from '../../../domain/account/state.ts';
import type { ReadModels } from '../../../readmodel/reader.ts';
import type { RelationsState } from '../../../domain/relationship/state.ts';
import { rm } from '../../../readmodel/keys.ts';

/** How the viewer stands with each other user (one read); absent = None. */
export async function viewerRelations(readModels: ReadModels, viewerId: string): Promise<ReadonlyMap<string, string>> {
  const state = await readModels.getJson<RelationsState>(rm.relations(viewerId));
  return new Map(Object.entries(state?.relations ?? {}));
}

/** The caller's own user: relationship "User", online. */
export function presentSelf(state: AccountState): Record<string, unknown> {
  if (!state.user) throw new Error('presentSelf before onboarding');
  return { ...userObject(state.user), relationship: 'User', online: true };
}

/**
 * A profile as others see it: an Invisible user's `status.presence` is left out (as Stoat does; others see
 * them offline, never "Invisible"); an emptied status is left out too; `profile` never (`userObject`).
 */
export function profileForOthers<T extends { status?: { text?: string; presence?: string } | undefined; profile?: unknown }>(stored: T): Omit<T, 'profile'> {
  const profile = userObject(stored);
  if (profile.status?.presence !== 'Invisible') return profile;
  const { presence: _hidden, ...status } = profile.status;
  const { status: _status, ...rest } = profile;
  return (Object.keys(status).length > 0 ? { ...rest, status } : rest) as Omit<T, 'profile'>;
}

/** Another user as seen by the caller; an Invisible user is offline to everyone else. */
export function presentUser(profile: UserProfile, viewerId: string, online: boolean, relationship = 'None'): Record<string, unknown> {
  if (profile._id === viewerId) return { ...userObject(profile), relationship: 'User', online: true };
  return { ...profileForOthers(profile), relationship, online: online && profile.status?.presence !== 'Invisible' };
}

/** Users as seen by the caller, with their presence (one Redis read for all of them); unknown ones left out. */
export async function presentUsers(readModels: ReadModels, profiles: ReadonlyArray<UserProfile | null>, viewerId: string): Promise<Record<string, unknown>[]> {
  const known = profiles.filter((p): p is UserProfile => p !== null);
  const [online, relations] = await Promise.all([readModels.online(known.map((p) => p._id)), viewerRelations(readModels, viewerId)]);
  return known.map((p) => presentUser(p, viewerId, online.has(p._id), relations.get(p._id)));
}
