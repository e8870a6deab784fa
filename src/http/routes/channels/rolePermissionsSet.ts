// PUT /channels/:channel_id/permissions/:role_id — {permissions: {allow, deny}} → Channel (ViewChannel, ManagePermissions, rank, grant).
import { z } from 'zod';
import { callerFromChannel } from '../../../access.ts';
import { decideSetChannelRolePermissions } from '../../../domain/channel/setRolePermissions.ts';
import { Permission } from '../../../permissions/bits.ts';
import { require as requirePermission } from '../../../permissions/calculate.ts';
import { onChannel } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { permissionOverride } from '../../schemas.ts';
import { currentChannel } from './present.ts';

export default defineRoute({
  method: 'PUT',
  path: '/channels/:channel_id/permissions/:role_id',
  auth: 'user',
  body: z.strictObject({ permissions: permissionOverride }),
  permissions: ['ViewChannel', 'ManagePermissions'],
  async handler(rc) {
    const channelId = rc.params.channel_id!;
    const roleId = rc.params.role_id!;
    await onChannel(rc, channelId, 'channel', (a) => {
      requirePermission(a.permissions, Permission.ViewChannel);
      const role = Object.hasOwn(a.server.roles, roleId) ? a.server.roles[roleId] : undefined;
      return decideSetChannelRolePermissions({ roleId, permissions: rc.body.permissions }, a.channel, {
        caller: callerFromChannel(a, rc.caller.userId),
        role,
      });
    });
    return currentChannel(rc.deps, channelId);
  },
});
