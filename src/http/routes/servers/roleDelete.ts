// DELETE /servers/:server_id/roles/:role_id — deletes a role (ManageRole; rank check) → 204.
import { callerFromServer } from '../../../access.ts';
import { decideDeleteRole } from '../../../domain/server/deleteRole.ts';
import { onServer } from '../../command.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/servers/:server_id/roles/:role_id',
  auth: 'user',
  permissions: ['ManageRole'],
  async handler(rc) {
    await onServer(rc, rc.params.server_id!, (a) =>
      decideDeleteRole({ roleId: rc.params.role_id! }, { server: a.server, members: {}, bans: {} }, { caller: callerFromServer(a, rc.caller.userId) }),
    );
    return NO_CONTENT;
  },
});
