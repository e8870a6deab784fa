// GET /servers/:server_id/invites — [Invite] (ManageServer).
import { serverAccess } from '../../../access.ts';
import type { InviteObject } from '../../../domain/models.ts';
import { Permission } from '../../../permissions/bits.ts';
import { require as requirePermission } from '../../../permissions/calculate.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute } from '../../route.ts';

export default defineRoute({
  method: 'GET',
  path: '/servers/:server_id/invites',
  auth: 'user',
  permissions: ['ManageServer'],
  async handler({ deps, caller, params }) {
    const a = await serverAccess(deps, params.server_id!, caller.userId);
    requirePermission(a.permissions, Permission.ManageServer);
    const codes = (await deps.readModels.smembers(rm.serverInvites(a.server._id))).sort();
    const invites = await deps.readModels.mgetJson<InviteObject>(codes.map((c) => rm.invite(c)));
    return invites.filter((i): i is InviteObject => i !== null);
  },
});
