// PATCH /servers/:server_id/roles/ranks — {ranks: [role ids, highest first]} → Server (ManageRole; NotElevated above oneself).
import { ROLE_LIMIT } from './roleCreate.ts';
import { z } from 'zod';
import { callerFromServer } from '../../../access.ts';
import { decideSetRoleRanks } from '../../../domain/server/setRoleRanks.ts';
import { onServer } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { idString } from '../../schemas.ts';
import { currentServer } from './present.ts';

export default defineRoute({
  method: 'PATCH',
  path: '/servers/:server_id/roles/ranks',
  auth: 'user',
  // Every role once: no more than a server can have (Stoat's server_roles).
  body: z.strictObject({ ranks: z.array(idString).max(ROLE_LIMIT) }),
  permissions: ['ManageRole'],
  async handler(rc) {
    const serverId = rc.params.server_id!;
    await onServer(rc, serverId, (a) =>
      decideSetRoleRanks({ ranks: rc.body.ranks }, { server: a.server, members: {}, bans: {} }, { caller: callerFromServer(a, rc.caller.userId) }),
    );
    return currentServer(rc.deps, serverId);
  },
});
