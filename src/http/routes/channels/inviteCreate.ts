// POST /channels/:channel_id/invites — → Invite {type: "Server", _id: code, server, creator, channel}, or {type: "Group", …} for a group (ViewChannel, InviteOthers).
import { AppError } from '../../../errors.ts';
import { callerFromChannel, loadPrivateChannel } from '../../../access.ts';
import { createGroupInvite } from '../groups/invites.ts';
import type { InviteObject } from '../../../domain/models.ts';
import { decideCreateInvite } from '../../../domain/server/createInvite.ts';
import { newInviteCode } from '../../../ids.ts';
import { rm } from '../../../readmodel/keys.ts';
import { onChannel } from '../../command.ts';
import { defineRoute } from '../../route.ts';

export default defineRoute({
  method: 'POST',
  path: '/channels/:channel_id/invites',
  auth: 'user',
  noBots: true,
  permissions: ['ViewChannel', 'InviteOthers'],
  async handler(rc) {
    const { deps } = rc;
    const channelId = rc.params.channel_id!;
    if (await loadPrivateChannel(deps, channelId)) return createGroupInvite(rc, channelId);
    let code = newInviteCode();
    await onChannel(rc, channelId, 'server', async (a) => {
      // 54^8 codes make a clash unlikely, but a taken code must never be handed out twice.
      while (await deps.readModels.getJson(rm.invite(code))) code = newInviteCode();
      return decideCreateInvite({ code, channelId }, { server: a.server, members: {}, bans: {} }, { caller: callerFromChannel(a, rc.caller.userId) });
    });
    const invite = await deps.readModels.getJson<InviteObject>(rm.invite(code));
    if (!invite) throw new AppError({ type: 'NotFound' });
    return invite;
  },
});
