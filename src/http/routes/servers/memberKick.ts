// DELETE /servers/:server_id/members/:user_id — kicks a member (KickMembers; rank check) → 204.
import { callerFromServer, loadMember } from '../../../access.ts';
import { decideKickMember } from '../../../domain/server/kickMember.ts';
import { onServer } from '../../command.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/servers/:server_id/members/:user_id',
  auth: 'user',
  permissions: ['KickMembers'],
  async handler(rc) {
    const serverId = rc.params.server_id!;
    const userId = rc.params.user_id!;
    await onServer(rc, serverId, async (a) => {
      const target = await loadMember(rc.deps, serverId, userId);
      return decideKickMember({ userId }, { server: a.server, members: target ? { [userId]: target } : {}, bans: {} }, { caller: callerFromServer(a, rc.caller.userId) });
    });
    return NO_CONTENT;
  },
});
