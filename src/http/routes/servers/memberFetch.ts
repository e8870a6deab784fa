// GET /servers/:server_id/members/:user_id?roles=bool — the Member, or {member, roles} with the member's roles.
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { loadMember, serverAccess } from '../../../access.ts';
import type { RoleObject } from '../../../domain/models.ts';
import { queryBool } from '../../query.ts';
import { defineRoute } from '../../route.ts';
import { setOwn } from '../../../own.ts';

export default defineRoute({
  method: 'GET',
  path: '/servers/:server_id/members/:user_id',
  auth: 'user',
  query: z.object({ roles: queryBool.optional() }),
  async handler({ deps, caller, params, query }) {
    const a = await serverAccess(deps, params.server_id!, caller.userId);
    const userId = params.user_id === '@me' ? caller.userId : params.user_id!;
    const member = await loadMember(deps, a.server._id, userId);
    if (!member) throw new AppError({ type: 'NotFound' });
    if (!query.roles) return member;
    const roles: Record<string, RoleObject> = {};
    for (const id of member.roles ?? []) if (Object.hasOwn(a.server.roles, id)) setOwn(roles, id, a.server.roles[id]!);
    return { member, roles };
  },
});
