// PUT /servers/:server_id/bans/:user_id — {reason?, delete_message_seconds?} → ServerBan (BanMembers; rank check).
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { callerFromServer, loadMember } from '../../../access.ts';
import type { ServerBanObject } from '../../../domain/models.ts';
import { decideBanUser } from '../../../domain/server/banUser.ts';
import { rm } from '../../../readmodel/keys.ts';
import { onServer } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { description1024 } from '../../schemas.ts';

export default defineRoute({
  method: 'PUT',
  path: '/servers/:server_id/bans/:user_id',
  auth: 'user',
  body: z.strictObject({
    reason: description1024.nullish(),
    /** Accepted and not acted on yet: deleting the user's recent messages belongs to the messages feature. */
    delete_message_seconds: z.number().int().min(0).max(604_800).nullish(),
  }),
  permissions: ['BanMembers'],
  async handler(rc) {
    const { deps } = rc;
    const serverId = rc.params.server_id!;
    const userId = rc.params.user_id!;
    if (!(await deps.readModels.getJson(rm.user(userId)))) throw new AppError({ type: 'NotFound' });
    await onServer(rc, serverId, async (a) => {
      const target = await loadMember(deps, serverId, userId);
      return decideBanUser(
        { userId, reason: rc.body.reason ?? undefined },
        { server: a.server, members: target ? { [userId]: target } : {}, bans: {} },
        { caller: callerFromServer(a, rc.caller.userId) },
      );
    });
    const ban = await deps.readModels.hgetJson<ServerBanObject>(rm.serverBans(serverId), userId);
    if (!ban) throw new AppError({ type: 'NotFound' });
    return ban;
  },
});
