// GET /servers/:server_id/members?exclude_offline=bool — {members, users} (members only); exclude_offline lists only the members online now.
import { z } from 'zod';
import { serverAccess } from '../../../access.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import type { MemberObject } from '../../../domain/models.ts';
import { rm } from '../../../readmodel/keys.ts';
import { queryBool } from '../../query.ts';
import { defineRoute } from '../../route.ts';
import { presentUsers } from '../users/present.ts';

export default defineRoute({
  method: 'GET',
  path: '/servers/:server_id/members',
  auth: 'user',
  query: z.object({ exclude_offline: queryBool.optional() }),
  async handler({ deps, caller, params, query }) {
    const a = await serverAccess(deps, params.server_id!, caller.userId);
    const members = [...(await deps.readModels.hgetallJson<MemberObject>(rm.serverMembers(a.server._id))).values()];
    const profiles = await deps.readModels.mgetJson<UserProfile>(members.map((m) => rm.user(m._id.user)));
    const users = await presentUsers(deps.readModels, profiles, caller.userId);
    if (!query.exclude_offline) return { members, users };
    // Online as the caller sees it (an Invisible member is offline to the others; the caller is online).
    const online = users.filter((u) => u.online === true);
    const ids = new Set(online.map((u) => u._id));
    return { members: members.filter((m) => ids.has(m._id.user)), users: online };
  },
});
