// GET /servers/:server_id?include_channels=bool — the Server (members only), optionally with its visible channels.
import { z } from 'zod';
import { serverAccess, visibleChannels } from '../../../access.ts';
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
    return { ...server, channels: await visibleChannels(deps, a.server, caller.userId, a.member) };
  },
});
