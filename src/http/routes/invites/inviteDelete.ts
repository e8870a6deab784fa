// DELETE /invites/:code — its creator, or a member with ManageServer, deletes an invite → 204.
import { AppError } from '../../../errors.ts';
import { callerFromServer, loadServer, serverAccess } from '../../../access.ts';
import { decideDeleteInvite } from '../../../domain/server/deleteInvite.ts';
import { rm } from '../../../readmodel/keys.ts';
import type { InviteObject } from '../../../domain/models.ts';
import { serverStream } from '../../command.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { loadInvite } from './load.ts';
import { deleteGroupInvite, isGroupInvite } from '../groups/invites.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/invites/:code',
  auth: 'user',
  permissions: ['ManageServer'],
  async handler(rc) {
    const { deps, caller, meta, params } = rc;
    const found = await loadInvite(deps, params.code!);
    if (isGroupInvite(found)) {
      await deleteGroupInvite(rc, found);
      return NO_CONTENT;
    }
    const serverId = found.server;
    const stream = serverStream(serverId);
    await deps.executor.execute(meta, [stream], async () => {
      const invite = (await deps.readModels.getJson<InviteObject>(rm.invite(params.code!))) ?? undefined;
      if (!invite) throw new AppError({ type: 'NotFound' });
      // The creator may delete its invite even after leaving the server; anyone else must be a member.
      if (invite.creator === caller.userId) {
        const server = await loadServer(deps, serverId);
        if (!server) throw new AppError({ type: 'NotFound' });
        const caller_ = { userId: caller.userId, permissions: 0n, ranking: Number.POSITIVE_INFINITY, isOwner: server.owner === caller.userId };
        const events = decideDeleteInvite({ invite }, { server, members: {}, bans: {} }, { caller: caller_ });
        return { writes: [{ stream, scope: serverId, expected: server.revision, events }], result: undefined };
      }
      const a = await serverAccess(deps, serverId, caller.userId);
      const events = decideDeleteInvite({ invite }, { server: a.server, members: {}, bans: {} }, { caller: callerFromServer(a, caller.userId) });
      return { writes: [{ stream, scope: serverId, expected: a.server.revision, events }], result: undefined };
    });
    return NO_CONTENT;
  },
});
