// DELETE /servers/:server_id/bans/:user_id — lifts a ban (BanMembers; 404 when not banned) → 204.
import { callerFromServer } from '../../../access.ts';
import type { ServerBanObject } from '../../../domain/models.ts';
import { decideUnbanUser } from '../../../domain/server/unbanUser.ts';
import { rm } from '../../../readmodel/keys.ts';
import { onServer } from '../../command.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/servers/:server_id/bans/:user_id',
  auth: 'user',
  permissions: ['BanMembers'],
  async handler(rc) {
    const serverId = rc.params.server_id!;
    const userId = rc.params.user_id!;
    await onServer(rc, serverId, async (a) => {
      const ban = await rc.deps.readModels.hgetJson<ServerBanObject>(rm.serverBans(serverId), userId);
      return decideUnbanUser({ userId }, { server: a.server, members: {}, bans: ban ? { [userId]: ban } : {} }, { caller: callerFromServer(a, rc.caller.userId) });
    });
    return NO_CONTENT;
  },
});
