// DELETE /channels/:channel_id — deletes a server channel (ViewChannel, ManageChannel), closes a DM or leaves a group → 204.
import { z } from 'zod';
import { callerFromChannel, loadPrivateChannel } from '../../../access.ts';
import { closePrivateChannel } from '../groups/private.ts';
import { decideDeleteChannel } from '../../../domain/server/deleteChannel.ts';
import { onChannel } from '../../command.ts';
import { queryBool } from '../../query.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/channels/:channel_id',
  auth: 'user',
  /** `leave_silently`: leave a group without the `user_left` message (ignored for server channels). */
  query: z.object({ leave_silently: queryBool.optional() }),
  permissions: ['ViewChannel', 'ManageChannel'],
  async handler(rc) {
    const channelId = rc.params.channel_id!;
    if (await loadPrivateChannel(rc.deps, channelId)) {
      await closePrivateChannel(rc, channelId, rc.query.leave_silently ?? false);
      return NO_CONTENT;
    }
    await onChannel(rc, channelId, 'server', (a) =>
      decideDeleteChannel({ channelId }, { server: a.server, members: {}, bans: {} }, { caller: callerFromChannel(a, rc.caller.userId) }),
    );
    return NO_CONTENT;
  },
});
