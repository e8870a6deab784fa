// GET /servers/:server_id/members_experimental_query?query=…&experimental_api=true — {members, users}: Stoat's member search by name (members only).
import { z } from 'zod';
import { serverAccess } from '../../../access.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import type { MemberObject } from '../../../domain/models.ts';
import { AppError } from '../../../errors.ts';
import { rm } from '../../../readmodel/keys.ts';
import { queryBool } from '../../query.ts';
import { defineRoute } from '../../route.ts';
import { presentUsers } from '../users/present.ts';

/** Most matches answered (Stoat takes the first ten). */
export const MEMBER_QUERY_LIMIT = 10;

/** The name a member is searched by: the nickname when set, else the username (Stoat). */
const nameOf = (m: MemberObject, p: UserProfile) => m.nickname ?? p.username;

export default defineRoute({
  method: 'GET',
  path: '/servers/:server_id/members_experimental_query',
  auth: 'user',
  query: z.object({
    /** Text the name must contain (case-sensitive, as in Stoat). */
    query: z.string().max(128),
    /** Stoat's guard against casual use: must be true (Stoat answers a 500 otherwise; here 400). */
    experimental_api: queryBool,
  }),
  async handler({ deps, caller, params, query }) {
    if (query.experimental_api !== true) throw new AppError({ type: 'FailedValidation', error: 'experimental_api must be true' });
    const a = await serverAccess(deps, params.server_id!, caller.userId);
    const members = [...(await deps.readModels.hgetallJson<MemberObject>(rm.serverMembers(a.server._id))).values()];
    // Stoat's order: by user id, then (stably) by the length of the name in bytes; the first ten.
    members.sort((x, y) => (x._id.user < y._id.user ? -1 : x._id.user > y._id.user ? 1 : 0));
    const profiles = await deps.readModels.mgetJson<UserProfile>(members.map((m) => rm.user(m._id.user)));
    const matches: Array<{ member: MemberObject; profile: UserProfile; length: number }> = [];
    members.forEach((member, i) => {
      const profile = profiles[i];
      if (!profile) return;
      const name = nameOf(member, profile);
      if (name.includes(query.query)) matches.push({ member, profile, length: Buffer.byteLength(name) });
    });
    matches.sort((x, y) => x.length - y.length);
    const top = matches.slice(0, MEMBER_QUERY_LIMIT);
    return { members: top.map((m) => m.member), users: await presentUsers(deps.readModels, top.map((m) => m.profile), caller.userId) };
  },
});
