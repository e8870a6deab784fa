// GET /admin/users/:user_id — an account's sanction standing and instance role (staff only).
import { AppError } from '../../../errors.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute } from '../../route.ts';
import { presentSanction } from './sanction.ts';
import { callerRole, instanceRole, loadSanction, pathId, staffOnly } from './staff.ts';

export default defineRoute({
  method: 'GET',
  path: '/admin/users/:user_id',
  auth: 'user',
  authorize: staffOnly('moderator'),
  async handler(rc) {
    await callerRole(rc);
    const userId = pathId(rc.params.user_id);
    if (!(await rc.deps.readModels.getJson(rm.account(userId)))) throw new AppError({ type: 'NotFound' });
    return { ...presentSanction(userId, await loadSanction(rc.deps, userId)), role: await instanceRole(rc.deps, userId) };
  },
});
