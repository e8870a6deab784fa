// GET /users/:user_id/flags — {flags} (public, as Stoat; an unknown user has flags 0).
import type { UserProfile } from '../../../domain/account/state.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute } from '../../route.ts';
import { targetUserId } from './target.ts';

export default defineRoute({
  method: 'GET',
  path: '/users/:user_id/flags',
  auth: 'none',
  async handler({ deps, caller, params }) {
    const id = targetUserId(params.user_id, caller);
    const user = await deps.readModels.getJson<UserProfile>(rm.user(id));
    return { flags: user?.flags ?? 0 };
  },
});
