// GET /invites/:code — public invite info {type: "Server", code, server_id, server_name, channel_id, channel_name, user_name, member_count, …}.
import { AppError } from '../../../errors.ts';
import { loadChannel, loadServer } from '../../../access.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute } from '../../route.ts';
import { loadInvite } from './load.ts';
import { fetchGroupInvite, isGroupInvite } from '../groups/invites.ts';

export default defineRoute({
  method: 'GET',
  path: '/invites/:code',
  auth: 'none',
  async handler({ deps, params }) {
    const invite = await loadInvite(deps, params.code!);
    if (isGroupInvite(invite)) return fetchGroupInvite({ deps }, invite);
    const server = await loadServer(deps, invite.server);
    const channel = await loadChannel(deps, invite.channel);
    if (!server || !channel) throw new AppError({ type: 'NotFound' });
    const creator = await deps.readModels.getJson<UserProfile>(rm.user(invite.creator));
    const memberCount = await deps.readModels.redis.hlen(deps.readModels.key(rm.serverMembers(server._id)));
    return {
      type: 'Server',
      code: invite._id,
      server_id: server._id,
      server_name: server.name,
      channel_id: channel._id,
      channel_name: channel.name,
      ...(channel.description !== undefined ? { channel_description: channel.description } : {}),
      user_name: creator?.username ?? 'Unknown',
      ...(creator?.avatar ? { user_avatar: creator.avatar } : {}),
      member_count: memberCount,
    };
  },
});
