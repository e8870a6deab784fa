// DELETE /admin/users/:user_id — delete an account for abuse (admins): deleted as its owner would delete it,
// and Stoat's UserPlatformWipe (flags: Deleted 2) to everyone who shares something with the user (204).
import { decideAccountDeletion, checkSanctionTarget } from '../../../domain/moderation/decide.ts';
import { INSTANCE_SCOPE, modActionStream } from '../../../domain/moderation/events.ts';
import { newId } from '../../../ids.ts';
import { botsStream } from '../../../domain/bot/events.ts';
import { AppError } from '../../../errors.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { accountOf } from '../auth/accountTools.ts';
import { deletionWrites } from '../auth/accountDeletion.ts';
import { callerRole, instanceRole, pathId, ReasonBody, staffOnly } from './staff.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/admin/users/:user_id',
  auth: 'user',
  authorize: staffOnly('admin'),
  body: ReasonBody,
  async handler(rc) {
    const role = await callerRole(rc, 'admin');
    const userId = pathId(rc.params.user_id);
    const actionStream = modActionStream(newId(rc.deps.now()));
    await rc.deps.executor.execute({ ...rc.meta, reason: rc.body.reason }, [`account-${userId}`, botsStream(userId)], async () => {
      const state = await accountOf(rc.deps, userId);
      if (!state) throw new AppError({ type: 'NotFound' });
      checkSanctionTarget(rc.caller.userId, role, userId, await instanceRole(rc.deps, userId));
      const events = decideAccountDeletion(state, { userId, reason: rc.body.reason });
      // The deletion keeps the account's servers, DMs, groups and relationships in the read models, so the hub
      // finds everyone to wipe the user for whenever the moderation record projects.
      const writes = [...(await deletionWrites(rc.deps, state, [])), { stream: actionStream, scope: INSTANCE_SCOPE, expected: 'no_stream' as const, events }];
      return { writes, result: undefined };
    });
    return NO_CONTENT;
  },
});
