// GET /servers/:server_id/bans — {users, bans} (BanMembers).
import { serverAccess } from '../../../access.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import type { ServerBanObject } from '../../../domain/models.ts';
import { Permission } from '../../../permissions/bits.ts';
import { require as requirePermission } from '../../../permissions/calculate.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute } from '../../route.ts';

export default defineRoute({
  method: 'GET',
  path: '/servers/:server_id/bans',
  auth: 'user',
  permissions: ['BanMembers'],
  async handler({ deps, caller, params }) {
    const a = await serverAccess(deps, params.server_id!, caller.userId);
    requirePermission(a.permissions, Permission.BanMembers);
    const bans = [...(await deps.readModels.hgetallJson<ServerBanObject>(rm.serverBans(a.server._id))).values()];
    const profiles = await deps.readModels.mgetJson<UserProfile>(bans.map((b) => rm.user(b._id.user)));
    // Revolt's BannedUser: just enough to show who it is.
    const users = profiles
      .filter((p): p is UserProfile => p !== null)
      .map((p) => ({ _id: p._id, username: p.username, discriminator: p.discriminator, ...(p.avatar ? { avatar: p.avatar } : {}) }));
    return { users, bans };
  },
});
