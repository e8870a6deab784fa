// GET /servers/:server_id?include_channels=bool — the Server (members only), optionally with its visible channels.
import { z } from 'zod';
import { loadChannel, serverAccess } from '../../../access.ts';
import { presentChannel } from '../../../domain/channel/state.ts';
import { channelPermissionsOf } from '../../../domain/server/permissions.ts';
import { Permission } from '../../../permissions/bits.ts';
import { has } from '../../../permissions/calculate.ts';
import { queryBool } from '../../query.ts';
import { defineRoute } from '../../route.ts';
import { presentServer } from './present.ts';

export default defineRoute({
  method: 'GET',
  path: '/servers/:server_id',
  auth: 'user',
  query: z.object({ include_channels: queryBool.optional() }),
  async handler({ deps, caller, params, query }) {
    const a = await serverAccess(deps, params.server_id!, caller.userId);
    const server = presentServer(a.server);
    if (!query.include_channels) return server;
    const now = deps.now();
    const channels = [];
    for (const id of a.server.channels) {
      const c = await loadChannel(deps, id);
      if (c && has(channelPermissionsOf(a.server, caller.userId, a.member, c, now), Permission.ViewChannel)) channels.push(presentChannel(c));
    }
    return { ...server, channels };
  },
});
