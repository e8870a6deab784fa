// GET /users/:user_id/mutual — {users, servers, channels}: mutual friends, servers, and groups and DMs (ViewProfile over the user).
import { loadRelations } from '../../../access.ts';
import { AppError, missingPermission } from '../../../errors.ts';
import { statusOf } from '../../../domain/relationship/state.ts';
import { isUlid } from '../../../ids.ts';
import { UserPermission, userPermissions } from '../../../permissions/user.ts';
import { defineRoute } from '../../route.ts';
import { privateChannelsOf } from '../../../gateway/ready.ts';
import { rm } from '../../../readmodel/keys.ts';
import { loadTargetUser } from './command.ts';

export default defineRoute({
  method: 'GET',
  path: '/users/:user_id/mutual',
  auth: 'user',
  async handler(rc) {
    const { deps } = rc;
    const me = rc.caller.userId;
    const id = rc.params.user_id!;
    // Stoat: asking about oneself is 400 InvalidOperation, before the lookup.
    if (id === me) throw new AppError({ type: 'InvalidOperation' });
    if (!isUlid(id)) throw new AppError({ type: 'NotFound' });
    const target = await loadTargetUser(rc, id);
    const [mine, theirs, myServers, theirServers, myChannels] = await Promise.all([
      loadRelations(deps, me),
      loadRelations(deps, target._id),
      deps.readModels.smembers(rm.userServers(me)),
      deps.readModels.smembers(rm.userServers(target._id)),
      privateChannelsOf(deps, me),
    ]);
    // `user:<id>:servers` is a hint: a shared server counts when both member entries exist.
    const theirSet = new Set(theirServers);
    const candidates = myServers.filter((s) => theirSet.has(s)).sort();
    const checks = await Promise.all(
      candidates.map(async (s) => (await deps.readModels.hmgetJson<unknown>(rm.serverMembers(s), [me, target._id])).every((m) => m !== null)),
    );
    const servers = candidates.filter((_, i) => checks[i]);
    const channels = myChannels
      .filter((c) => (c.channel_type === 'DirectMessage' || c.channel_type === 'Group') && c.recipients.includes(target._id))
      .map((c) => c._id);
    const relationship = statusOf(mine, target._id);
    const value = userPermissions({ same: false, relationship, mutual: servers.length > 0 || channels.length > 0, targetIsBot: false, viewerIsBot: false });
    if ((value & UserPermission.ViewProfile) === 0n) throw missingPermission('ViewProfile');
    const users = Object.keys(mine.relations)
      .filter((u) => mine.relations[u] === 'Friend' && statusOf(theirs, u) === 'Friend')
      .sort();
    return { users, servers, channels };
  },
});
