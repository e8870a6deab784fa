// PUT /admin/retention/servers/:server_id — sets or (null) removes a server's override of the instance default (instance admins).
import { AppError } from '../../../errors.ts';
import type { ServerState } from '../../../domain/server/state.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute } from '../../route.ts';
import { callerRole, pathId, staffOnly } from './staff.ts';
import { RetentionBody, setPolicyRoute } from './retention.ts';

export default defineRoute({
  method: 'PUT',
  path: '/admin/retention/servers/:server_id',
  auth: 'user',
  authorize: staffOnly('admin'),
  body: RetentionBody,
  async handler(rc) {
    await callerRole(rc, 'admin');
    const serverId = pathId(rc.params.server_id);
    // Removing an override stays possible after its server is gone.
    if (rc.body.max_age_seconds !== null && !(await rc.deps.readModels.getJson<ServerState>(rm.server(serverId)))) throw new AppError({ type: 'NotFound' });
    return setPolicyRoute(rc, { type: 'server', id: serverId }, rc.body.max_age_seconds);
  },
});
