/**
 * Relationships: `relations:<userId>` (RelationsState with the `relations-<id>` revision). Each
 * `RelationshipChanged` is on its user's own stream (scope = that user), so this projection only ever touches
 * its own partition's keys. Emits `UserRelationship` to the user; the gateway fills in the other user's
 * profile at delivery (it lives in another partition).
 */
import { RELATIONS_STREAM } from '../src/domain/relationship/events.ts';
import { emptyRelations, evolveRelations, type RelationsState } from '../src/domain/relationship/state.ts';
import { rm } from '../src/readmodel/keys.ts';
import type { Projection } from './types.ts';

export const relationshipsProjection: Projection = {
  name: 'relationships',
  handles: ['RelationshipChanged'],
  async apply(e, tx) {
    if (e.type !== 'RelationshipChanged' || !e.stream.startsWith(RELATIONS_STREAM)) return;
    const userId = e.stream.slice(RELATIONS_STREAM.length);
    const before = (await tx.getJson<RelationsState>(rm.relations(userId))) ?? emptyRelations(userId);
    tx.setJson(rm.relations(userId), evolveRelations(before, e, e.revision));
    tx.emit({ kind: 'user', userId }, { type: 'UserRelationship', id: userId, user: { _id: e.data.other }, status: e.data.status });
  },
};
