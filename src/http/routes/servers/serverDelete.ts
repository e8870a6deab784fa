// DELETE /servers/:server_id?leave_silently=bool — the owner deletes the server, any other member leaves it (204).
import { z } from 'zod';
import { callerFromServer } from '../../../access.ts';
import { decideDeleteServer } from '../../../domain/server/deleteServer.ts';
import { onServer } from '../../command.ts';
import { queryBool } from '../../query.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/servers/:server_id',
  auth: 'user',
  query: z.object({ leave_silently: queryBool.optional() }),
  async handler(rc) {
    await onServer(rc, rc.params.server_id!, (a) =>
      decideDeleteServer({ silent: rc.query.leave_silently ?? false }, { server: a.server, members: {}, bans: {} }, { caller: callerFromServer(a, rc.caller.userId) }),
    );
    return NO_CONTENT;
  },
});
