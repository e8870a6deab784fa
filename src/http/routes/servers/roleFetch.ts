// GET /servers/:server_id/roles/:role_id — the Role (members only; 404 when unknown).
import { AppError } from '../../../errors.ts';
import { serverAccess } from '../../../access.ts';
import { defineRoute } from '../../route.ts';
import { own } from '../../../own.ts';

export default defineRoute({
  method: 'GET',
  path: '/servers/:server_id/roles/:role_id',
  auth: 'user',
  async handler({ deps, caller, params }) {
    const a = await serverAccess(deps, params.server_id!, caller.userId);
    const id = params.role_id!;
    if (!Object.hasOwn(a.server.roles, id)) throw new AppError({ type: 'NotFound' });
    return own(a.server.roles, id);
  },
});
