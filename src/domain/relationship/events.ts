/**
 * Events of the relationship aggregate: stream `relations-<userId>` (one per user: how that user stands with
 * every other user), scope = the user id. A change between two users appends one `RelationshipChanged` to
 * each of their two streams in one atomic `appendMany`, each decided on the revision of both streams, so two
 * users acting on each other at the same moment are decided one after the other (the later one re-reads).
 */
import { z } from 'zod';

/** Stoat's RelationshipStatus as stored (`User` is never stored: it is the viewer themself). */
export const RelationshipStatus = z.enum(['None', 'Friend', 'Outgoing', 'Incoming', 'Blocked', 'BlockedOther']);
/** A stored relationship status. */
export type RelationshipStatus = z.infer<typeof RelationshipStatus>;

export const relationshipEvents = {
  /** How `userId` (the stream's user) stands with `other` from now on (`None` removes the entry). */
  RelationshipChanged: z.object({ userId: z.string(), other: z.string(), status: RelationshipStatus }),
};

/** Stream of a user's relationships. */
export const relationsStream = (userId: string) => `relations-${userId}`;
/** Prefix of the relationship streams. */
export const RELATIONS_STREAM = 'relations-';
