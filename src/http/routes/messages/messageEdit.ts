// PATCH /channels/:channel_id/messages/:message_id — {content?, embeds?} → the Message with `edited` (author only; SendMessage).
import { decideEditMessage } from '../../../domain/message/editMessage.ts';
import { defineRoute } from '../../route.ts';
import { onMessage } from './command.ts';
import { currentMessage } from './present.ts';
import { EditBody, embedOf } from './schemas.ts';

export default defineRoute({
  method: 'PATCH',
  path: '/channels/:channel_id/messages/:message_id',
  auth: 'user',
  body: EditBody,
  permissions: ['ViewChannel', 'SendMessage', 'SendEmbeds', 'UploadFiles'],
  async handler(rc) {
    const { deps, body } = rc;
    const channelId = rc.params.channel_id!;
    const messageId = rc.params.message_id!;
    await onMessage(rc, channelId, messageId, (a, message) =>
      decideEditMessage(
        { content: body.content ?? undefined, embeds: body.embeds ? body.embeds.map(embedOf) : undefined },
        message,
        { userId: rc.caller.userId, permissions: a.permissions, now: new Date(deps.now()).toISOString(), files: {} },
      ),
    );
    return currentMessage(deps, channelId, messageId);
  },
});
