/** The relationship aggregate's state (read model `relations:<userId>`): other user → status, plus the stream revision. */
import type { DomainEvent } from '../events.ts';
import type { RelationshipStatus } from './events.ts';

/** A user's relationships. `relations` holds no `None` entries. */
export interface RelationsState {
  userId: string;
  /** Other user id → status (read with `statusOf`: never index it with a client-chosen key). */
  relations: Record<string, RelationshipStatus>;
  /** Revision of `relations-<userId>`; -1 while the stream is empty. */
  revision: number;
}

/** The state of a user without relationships. */
export function emptyRelations(userId: string): RelationsState {
  return { userId, relations: {}, revision: -1 };
}

/** How the state's user stands with `other` (`User` for themself). */
export function statusOf(state: RelationsState | null, other: string): RelationshipStatus | 'User' {
  if (state && state.userId === other) return 'User';
  if (!state || !Object.hasOwn(state.relations, other)) return 'None';
  return state.relations[other]!;
}

/** Applies one event of `relations-<userId>`. */
export function evolveRelations(state: RelationsState, e: DomainEvent, revision: number): RelationsState {
  if (e.type !== 'RelationshipChanged') return { ...state, revision };
  const relations = { ...state.relations };
  if (e.data.status === 'None') delete relations[e.data.other];
  else relations[e.data.other] = e.data.status;
  return { ...state, relations, revision };
}
