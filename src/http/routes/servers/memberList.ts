// GET /servers/:server_id/members?exclude_offline=bool — {members, users} (members only).
import { z } from 'zod';
import { serverAccess } from '../../../access.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import type { MemberObject } from '../../../domain/models.ts';
import { rm } from '../../../readmodel/keys.ts';
import { queryBool } from '../../query.ts';
import { defineRoute } from '../../route.ts';
import { presentUser } from '../users/present.ts';

export default defineRoute({
  method: 'GET',
  path: '/servers/:server_id/members',
  auth: 'user',
  /** `exclude_offline` is accepted and has no effect until presence is tracked (everyone is listed). */
  query: z.object({ exclude_offline: queryBool.optional() }),
  async handler({ deps, caller, params }) {
    const a = await serverAccess(deps, params.server_id!, caller.userId);
    const members = [...(await deps.readModels.hgetallJson<MemberObject>(rm.serverMembers(a.server._id))).values()];
    const profiles = await deps.readModels.mgetJson<UserProfile>(members.map((m) => rm.user(m._id.user)));
    const users = profiles.filter((p): p is UserProfile => p !== null).map((p) => presentUser(p, caller.userId));
    return { members, users };
  },
});
