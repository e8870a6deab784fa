// GET /channels/:channel_id/members — the group's members as Users (ViewChannel; 400 InvalidOperation for other channels).
import { channelAccess } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import { Permission } from '../../../permissions/bits.ts';
import { require as requirePermission } from '../../../permissions/calculate.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute } from '../../route.ts';
import { presentUsers } from '../users/present.ts';

export default defineRoute({
  method: 'GET',
  path: '/channels/:channel_id/members',
  auth: 'user',
  async handler({ deps, caller, params }) {
    const a = await channelAccess(deps, params.channel_id!, caller.userId);
    requirePermission(a.permissions, Permission.ViewChannel);
    if (a.kind !== 'private' || a.channel.channel_type !== 'Group') throw new AppError({ type: 'InvalidOperation' });
    const profiles = await deps.readModels.mgetJson<UserProfile>(a.channel.recipients.map((id) => rm.user(id)));
    return presentUsers(deps.readModels, profiles, caller.userId);
  },
});
