// PUT /channels/:channel_id/permissions/default — {permissions: {allow, deny}} → Channel (ViewChannel, ManagePermissions, grant check).
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { callerFromChannel, loadPrivateChannel } from '../../../access.ts';
import { setPrivateDefaultPermissions } from '../groups/private.ts';
import { decideSetChannelDefaultPermissions } from '../../../domain/channel/setDefaultPermissions.ts';
import { Permission } from '../../../permissions/bits.ts';
import { require as requirePermission } from '../../../permissions/calculate.ts';
import { onChannel } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { parseOverride } from '../../schemas.ts';
import { currentChannel } from './present.ts';

export default defineRoute({
  method: 'PUT',
  path: '/channels/:channel_id/permissions/default',
  auth: 'user',
  // A plain value is the group-channel form of this body: on a server channel it is 400 InvalidOperation.
  body: z.strictObject({ permissions: z.unknown() }),
  permissions: ['ViewChannel', 'ManagePermissions'],
  async handler(rc) {
    const channelId = rc.params.channel_id!;
    const raw = rc.body.permissions;
    if (await loadPrivateChannel(rc.deps, channelId)) return setPrivateDefaultPermissions(rc, channelId, raw);
    const groupForm = typeof raw === 'number' || typeof raw === 'string';
    const permissions = groupForm ? undefined : parseOverride(raw, 'permissions');
    await onChannel(rc, channelId, 'channel', (a) => {
      requirePermission(a.permissions, Permission.ViewChannel);
      requirePermission(a.permissions, Permission.ManagePermissions);
      if (!permissions) throw new AppError({ type: 'InvalidOperation' });
      return decideSetChannelDefaultPermissions({ permissions }, a.channel, { caller: callerFromChannel(a, rc.caller.userId) });
    });
    return currentChannel(rc.deps, channelId);
  },
});
