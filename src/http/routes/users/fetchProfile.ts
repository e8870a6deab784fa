// GET /users/:user_id/profile — {content?, background?} (self; others need ViewProfile: a shared server, friends, a bot → else 403).
import { AppError, missingPermission } from '../../../errors.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import { rm } from '../../../readmodel/keys.ts';
import { UserPermission } from '../../../permissions/user.ts';
import { loadUserPermissions } from '../../../users/permissions.ts';
import { defineRoute } from '../../route.ts';
import { targetUserId } from './target.ts';

export default defineRoute({
  method: 'GET',
  path: '/users/:user_id/profile',
  auth: 'user',
  async handler({ deps, caller, params }) {
    const id = targetUserId(params.user_id, caller);
    const user = await deps.readModels.getJson<UserProfile>(rm.user(id));
    if (!user) throw new AppError({ type: 'NotFound' });
    if (id !== caller.userId && (( await loadUserPermissions(deps, caller.userId, user)) & UserPermission.ViewProfile) === 0n) {
      throw missingPermission('ViewProfile');
    }
    return user.profile ?? {};
  },
});
