// PUT /channels/:channel_id/messages/:message_id/reactions/:emoji — 204 (React; at most 20 distinct emoji per message).
import { decideReact } from '../../../domain/message/reactions.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { onMessage } from './command.ts';

export default defineRoute({
  method: 'PUT',
  path: '/channels/:channel_id/messages/:message_id/reactions/:emoji',
  auth: 'user',
  permissions: ['ViewChannel', 'React'],
  async handler(rc) {
    // The router has percent-decoded the emoji already.
    const emoji = rc.params.emoji!;
    await onMessage(rc, rc.params.channel_id!, rc.params.message_id!, (a, message) =>
      decideReact(message, emoji, { userId: rc.caller.userId, permissions: a.permissions, emojis: new Set(a.kind === 'server' ? (a.server.emojis ?? []) : []) }),
    );
    return NO_CONTENT;
  },
});
