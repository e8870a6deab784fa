// PUT /servers/:server_id/permissions/:role_id — {permissions: {allow, deny}} → Server (ManagePermissions, rank, grant checks).
import { z } from 'zod';
import { callerFromServer } from '../../../access.ts';
import { decideSetRolePermissions } from '../../../domain/server/setRolePermissions.ts';
import { onServer } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { permissionOverride } from '../../schemas.ts';
import { currentServer } from './present.ts';

export default defineRoute({
  method: 'PUT',
  path: '/servers/:server_id/permissions/:role_id',
  auth: 'user',
  body: z.strictObject({ permissions: permissionOverride }),
  permissions: ['ManagePermissions'],
  async handler(rc) {
    const serverId = rc.params.server_id!;
    await onServer(rc, serverId, (a) =>
      decideSetRolePermissions(
        { roleId: rc.params.role_id!, permissions: rc.body.permissions },
        { server: a.server, members: {}, bans: {} },
        { caller: callerFromServer(a, rc.caller.userId) },
      ),
    );
    return currentServer(rc.deps, serverId);
  },
});
