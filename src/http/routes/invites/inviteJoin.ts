// POST /invites/:code — joins the invite's server → {type: "Server", channels: [visible channels], server} (Banned 403, AlreadyInServer 409).
import { AppError } from '../../../errors.ts';
import { loadMember, loadServer, visibleChannels } from '../../../access.ts';
import type { ServerBanObject } from '../../../domain/models.ts';
import { decideJoinServer, type Moderation } from '../../../domain/server/joinServer.ts';
import { presentServer } from '../../../domain/server/state.ts';
import { rm } from '../../../readmodel/keys.ts';
import { serverStream } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { loadInvite } from './load.ts';
import { claimServerSlot, serverSlotStream } from '../servers/serverLimit.ts';
import { isGroupInvite, joinGroupInvite } from '../groups/invites.ts';

export default defineRoute({
  method: 'POST',
  path: '/invites/:code',
  auth: 'user',
  noBots: true,
  async handler(rc) {
    const { deps, caller, meta, params } = rc;
    const invite = await loadInvite(deps, params.code!);
    if (isGroupInvite(invite)) return joinGroupInvite(rc, invite);
    const serverId = invite.server;
    const stream = serverStream(serverId);
    await deps.executor.execute(meta, [stream, serverSlotStream(caller.userId)], async () => {
      const server = await loadServer(deps, serverId);
      if (!server) throw new AppError({ type: 'NotFound' });
      const member = await loadMember(deps, serverId, caller.userId);
      // The per-user server limit, decided under the revision of the user's slot stream (see claimServerSlot).
      const slot = member ? null : await claimServerSlot(deps, caller.userId, serverId);
      const ban = await deps.readModels.hgetJson<ServerBanObject>(rm.serverBans(serverId), caller.userId);
      const departed = await deps.readModels.hgetJson<Moderation>(rm.serverDeparted(serverId), caller.userId);
      const events = decideJoinServer(
        { userId: caller.userId, invite: invite._id },
        { server, members: member ? { [caller.userId]: member } : {}, bans: ban ? { [caller.userId]: ban } : {} },
        { now: deps.executor.now(), departed },
      );
      const writes = [{ stream, scope: serverId, expected: server.revision, events }];
      // A refused join appends nothing, its slot included; the slot write goes last (see claimServerSlot).
      return { writes: slot && events.length > 0 ? [...writes, slot] : writes, result: undefined };
    });
    const server = await loadServer(deps, serverId);
    const member = await loadMember(deps, serverId, caller.userId);
    if (!server || !member) throw new AppError({ type: 'NotFound' });
    return { type: 'Server', channels: await visibleChannels(deps, server, caller.userId, member), server: presentServer(server) };
  },
});
