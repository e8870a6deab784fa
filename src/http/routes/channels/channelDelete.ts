// DELETE /channels/:channel_id — deletes a server channel (ViewChannel, ManageChannel) → 204.
import { z } from 'zod';
import { callerFromChannel } from '../../../access.ts';
import { decideDeleteChannel } from '../../../domain/server/deleteChannel.ts';
import { onChannel } from '../../command.ts';
import { queryBool } from '../../query.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/channels/:channel_id',
  auth: 'user',
  /** `leave_silently` only matters for groups; accepted and ignored here. */
  query: z.object({ leave_silently: queryBool.optional() }),
  permissions: ['ViewChannel', 'ManageChannel'],
  async handler(rc) {
    const channelId = rc.params.channel_id!;
    await onChannel(rc, channelId, 'server', (a) =>
      decideDeleteChannel({ channelId }, { server: a.server, members: {}, bans: {} }, { caller: callerFromChannel(a, rc.caller.userId) }),
    );
    return NO_CONTENT;
  },
});
