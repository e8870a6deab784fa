// DELETE /channels/:channel_id/messages/:message_id/reactions/:emoji?user_id&remove_all — 204 (React; ManageMessages for user_id / remove_all).
import { z } from 'zod';
import { decideUnreact } from '../../../domain/message/reactions.ts';
import { queryBool } from '../../query.ts';
import { idString } from '../../schemas.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { onMessage } from './command.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/channels/:channel_id/messages/:message_id/reactions/:emoji',
  auth: 'user',
  query: z.object({ user_id: idString.optional(), remove_all: queryBool.optional() }),
  permissions: ['ViewChannel', 'React', 'ManageMessages'],
  async handler(rc) {
    const { query } = rc;
    await onMessage(rc, rc.params.channel_id!, rc.params.message_id!, (a, message) =>
      decideUnreact(
        message,
        { emoji: rc.params.emoji!, userId: query.user_id, removeAll: query.remove_all ?? false },
        { userId: rc.caller.userId, permissions: a.permissions },
      ),
    );
    return NO_CONTENT;
  },
});
