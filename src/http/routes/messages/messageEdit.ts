// PATCH /channels/:channel_id/messages/:message_id — {content?, embeds?} → the Message with `edited` (author only; SendMessage).
import { checkEditMessage, decideEditMessage, editFileIds } from '../../../domain/message/editMessage.ts';
import { defineRoute } from '../../route.ts';
import { onMessage } from './command.ts';
import { claimAttachments, fileLocks } from './files.ts';
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
    const cmd = { content: body.content ?? undefined, embeds: body.embeds ? body.embeds.map(embedOf) : undefined };
    const fileIds = editFileIds(cmd);
    await onMessage(
      rc,
      channelId,
      messageId,
      async (a, message) => {
        const ctx = { userId: rc.caller.userId, permissions: a.permissions };
        checkEditMessage(cmd, message, ctx);
        const claimed = await claimAttachments(deps, fileIds, rc.caller.userId, messageId);
        return { events: decideEditMessage(cmd, message, { ...ctx, now: new Date(deps.now()).toISOString(), files: claimed.files }), also: claimed.writes };
      },
      { lock: fileLocks(deps, fileIds, undefined) },
    );
    // New content gets new link previews: the edit's event says so, and the worker role fetches them.
    return currentMessage(deps, channelId, messageId);
  },
});
