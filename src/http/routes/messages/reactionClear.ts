// DELETE /channels/:channel_id/messages/:message_id/reactions — removes every reaction, 204 (ManageMessages).
import { decideClearReactions } from '../../../domain/message/reactions.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { onMessage } from './command.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/channels/:channel_id/messages/:message_id/reactions',
  auth: 'user',
  permissions: ['ViewChannel', 'ManageMessages'],
  async handler(rc) {
    await onMessage(rc, rc.params.channel_id!, rc.params.message_id!, (a, message) => decideClearReactions(message, { permissions: a.permissions }));
    return NO_CONTENT;
  },
});
