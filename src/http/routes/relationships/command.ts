/**
 * Running a relationship change from a route: both users' relationship states are read, one pure decision
 * returns an event for each user's `relations-<id>` stream, and both are appended in one atomic
 * `appendMany`, each with the revision read. A concurrent change by either user makes the append fail and
 * the decision run again on fresh states: two users sending each other a request at the same moment end as
 * friends (the second decision sees the first request as Incoming and accepts it).
 */
import { loadRelations } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import type { RelationChange, RelationPair } from '../../../domain/relationship/decide.ts';
import { relationsStream } from '../../../domain/relationship/events.ts';
import { isUlid } from '../../../ids.ts';
import { rm } from '../../../readmodel/keys.ts';
import { expectedOf, type CommandRoute } from '../../command.ts';
import { presentUser, viewerRelations } from '../users/present.ts';

/** An existing (onboarded) user by id; a malformed or unknown id → 404 NotFound. */
export async function loadTargetUser(rc: Pick<CommandRoute, 'deps'>, userId: string): Promise<UserProfile> {
  if (!isUlid(userId)) throw new AppError({ type: 'NotFound' });
  const profile = await rc.deps.readModels.getJson<UserProfile>(rm.user(userId));
  if (!profile) throw new AppError({ type: 'NotFound' });
  return profile;
}

/** Decides a change between the caller and `targetId` and appends it to both streams atomically. */
export async function changeRelationship(rc: CommandRoute, targetId: string, decide: (pair: RelationPair) => RelationChange): Promise<void> {
  const me = rc.caller.userId;
  await rc.deps.executor.execute(rc.meta, [relationsStream(me), relationsStream(targetId)], async () => {
    const [mine, theirs] = await Promise.all([loadRelations(rc.deps, me), loadRelations(rc.deps, targetId)]);
    const c = decide({ me: mine, them: theirs });
    return {
      writes: [
        { stream: relationsStream(me), scope: me, expected: expectedOf(mine.revision), events: c.mine },
        { stream: relationsStream(targetId), scope: targetId, expected: expectedOf(theirs.revision), events: c.theirs },
      ],
      result: undefined,
    };
  });
}

/** The target as the caller now sees it (relationship and presence), Stoat's answer to every relationship route. */
export async function presentTarget(rc: Pick<CommandRoute, 'deps' | 'caller'>, profile: UserProfile): Promise<Record<string, unknown>> {
  const [online, relations] = await Promise.all([rc.deps.readModels.online([profile._id]), viewerRelations(rc.deps.readModels, rc.caller.userId)]);
  return presentUser(profile, rc.caller.userId, online.has(profile._id), relations.get(profile._id));
}
