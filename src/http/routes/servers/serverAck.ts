// PUT /servers/:server_id/ack — 204: every channel of the server the caller can view is read up to its last message (404 for non-members).
import { serverAccess, visibleChannels } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import { decideAckServer } from '../../../domain/unreads/ack.ts';
import { unreadsStream } from '../../../domain/unreads/events.ts';
import { isCanonicalUlid } from '../../../ids.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';

export default defineRoute({
  method: 'PUT',
  path: '/servers/:server_id/ack',
  auth: 'user',
  noBots: true,
  async handler(rc) {
    const { deps, caller } = rc;
    const serverId = rc.params.server_id!;
    if (!isCanonicalUlid(serverId)) throw new AppError({ type: 'NotFound' });
    await deps.executor.execute(rc.meta, [], async () => {
      const a = await serverAccess(deps, serverId, caller.userId);
      const channels = await visibleChannels(deps, a.server, caller.userId, a.member);
      const last = await deps.readModels.hmgetJson<string>(
        rm.unreadLast(caller.userId),
        channels.map((c) => c._id),
      );
      const events = decideAckServer(channels.map((c, i) => ({ channelId: c._id, lastMessageId: c.last_message_id, lastId: last[i] ?? null })));
      return { writes: [{ stream: unreadsStream(caller.userId), scope: caller.userId, expected: 'any' as const, events }], result: undefined };
    });
    return NO_CONTENT;
  },
});
