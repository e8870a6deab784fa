// PUT /servers/:server_id/permissions/default — {permissions: value} → Server (ManagePermissions; only bits the caller holds).
import { z } from 'zod';
import { callerFromServer } from '../../../access.ts';
import { decideSetServerDefaultPermissions } from '../../../domain/server/setDefaultPermissions.ts';
import { onServer } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { permissionValue } from '../../schemas.ts';
import { currentServer } from './present.ts';

export default defineRoute({
  method: 'PUT',
  path: '/servers/:server_id/permissions/default',
  auth: 'user',
  body: z.strictObject({ permissions: permissionValue }),
  permissions: ['ManagePermissions'],
  async handler(rc) {
    const serverId = rc.params.server_id!;
    await onServer(rc, serverId, (a) =>
      decideSetServerDefaultPermissions({ permissions: rc.body.permissions }, { server: a.server, members: {}, bans: {} }, { caller: callerFromServer(a, rc.caller.userId) }),
    );
    return currentServer(rc.deps, serverId);
  },
});
