// DELETE /channels/:channel_id/messages/:message_id — 204 (the author, or ManageMessages).
import { decideDeleteMessage } from '../../../domain/message/deleteMessage.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { onMessage } from './command.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/channels/:channel_id/messages/:message_id',
  auth: 'user',
  permissions: ['ViewChannel', 'ManageMessages'],
  async handler(rc) {
    await onMessage(rc, rc.params.channel_id!, rc.params.message_id!, (a, message) =>
      decideDeleteMessage(message, { userId: rc.caller.userId, permissions: a.permissions }),
    );
    return NO_CONTENT;
  },
});
