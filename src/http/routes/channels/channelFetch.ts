// GET /channels/:channel_id — the Channel, of a server or private (ViewChannel; 404 for non-members and non-recipients).
import { channelAccess } from '../../../access.ts';
import { presentChannel } from '../../../domain/channel/state.ts';
import { presentPrivateChannel } from '../../../domain/private/state.ts';
import { Permission } from '../../../permissions/bits.ts';
import { require as requirePermission } from '../../../permissions/calculate.ts';
import { withLastMessage } from '../../../readmodel/lastMessages.ts';
import { defineRoute } from '../../route.ts';

export default defineRoute({
  method: 'GET',
  path: '/channels/:channel_id',
  auth: 'user',
  permissions: ['ViewChannel'],
  async handler({ deps, caller, params }) {
    const a = await channelAccess(deps, params.channel_id!, caller.userId);
    requirePermission(a.permissions, Permission.ViewChannel);
    return withLastMessage(deps.readModels, a.kind === 'server' ? presentChannel(a.channel) : presentPrivateChannel(a.channel));
  },
});
