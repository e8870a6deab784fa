// DELETE /admin/servers/:server_id — delete a whole server with a reason (staff); recorded in the instance audit log.
import { INSTANCE_SCOPE, modActionStream } from '../../../domain/moderation/events.ts';
import { loadServer } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import { newId } from '../../../ids.ts';
import { serverStream } from '../../command.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { callerRole, pathId, ReasonBody, staffOnly } from './staff.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/admin/servers/:server_id',
  auth: 'user',
  authorize: staffOnly('moderator'),
  body: ReasonBody,
  async handler(rc) {
    await callerRole(rc);
    const serverId = pathId(rc.params.server_id);
    const stream = serverStream(serverId);
    const actionStream = modActionStream(newId(rc.deps.now()));
    await rc.deps.executor.execute({ ...rc.meta, reason: rc.body.reason }, [stream], async () => {
      // Staff are not members: the server is read without a membership check. Its members see it go as when
      // its owner deletes it (ServerDelete), and its channels, roles, invites and emoji go with it.
      const server = await loadServer(rc.deps, serverId);
      if (!server) throw new AppError({ type: 'NotFound' });
      return {
        writes: [
          { stream, scope: serverId, expected: server.revision, events: [{ type: 'ServerDeleted', data: { channels: [...server.channels] } }] },
          {
            stream: actionStream,
            scope: INSTANCE_SCOPE,
            expected: 'no_stream',
            events: [{ type: 'ModeratorDeletedServer', data: { server: serverId, name: server.name, owner: server.owner, reason: rc.body.reason } }],
          },
        ],
        result: undefined,
      };
    });
    return NO_CONTENT;
  },
});
