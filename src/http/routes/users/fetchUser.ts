// GET /users/:user_id — a User (404 NotFound when unknown).
import { AppError } from '../../../errors.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute } from '../../route.ts';
import { presentUser, viewerRelations } from './present.ts';

export default defineRoute({
  method: 'GET',
  path: '/users/:user_id',
  auth: 'user',
  async handler({ deps, caller, params }) {
    const id = params.user_id === '@me' ? caller.userId : params.user_id!;
    const profile = await deps.readModels.getJson<UserProfile>(rm.user(id));
    if (!profile) throw new AppError({ type: 'NotFound' });
    const [online, relations] = await Promise.all([deps.readModels.online([id]), viewerRelations(deps.readModels, caller.userId)]);
    return presentUser(profile, caller.userId, online.has(id), relations.get(id));
  },
});
