// PATCH /webhooks/:webhook_id/:token/:message_id — {content?, embeds?} → the Message with `edited` (no session; the webhook's own message only).
import { decideEditMessage, editFileIds } from '../../../domain/message/editMessage.ts';
import { messageStream } from '../../../domain/message/events.ts';
import { AppError } from '../../../errors.ts';
import { Permission } from '../../../permissions/bits.ts';
import { loadMessage } from '../../../readmodel/messages.ts';
import { defineRoute } from '../../route.ts';
import { claimAttachments, fileLocks } from '../messages/files.ts';
import { currentMessage } from '../messages/present.ts';
import { EditBody, embedOf } from '../messages/schemas.ts';
import { loadWebhookByToken } from './load.ts';
import { webhookAccess } from './send.ts';

export default defineRoute({
  method: 'PATCH',
  path: '/webhooks/:webhook_id/:token/:message_id',
  auth: 'none',
  body: EditBody,
  async handler(rc) {
    const { deps, body, params } = rc;
    const messageId = params.message_id!;
    const first = await loadWebhookByToken(deps, params.webhook_id!, params.token!);
    const cmd = { content: body.content ?? undefined, embeds: body.embeds ? body.embeds.map(embedOf) : undefined };
    const fileIds = editFileIds(cmd);
    const stream = messageStream(messageId);
    await deps.executor.execute(rc.meta, [stream, ...fileLocks(deps, fileIds, undefined)], async () => {
      // The token again inside the plan: a reset or deletion racing the edit wins.
      const w = await loadWebhookByToken(deps, first.id, params.token!);
      const access = await webhookAccess(deps, w);
      // Only a message of the webhook's channel; another author's → 403 CannotEditMessage (Stoat).
      const message = await loadMessage(deps.readModels, w.channel_id, messageId);
      if (!message) throw new AppError({ type: 'NotFound' });
      // The same edit as a user's, judged with the webhook's own permission value (it sends with SendMessage).
      const ctx = { userId: w.id, permissions: access.permissions | Permission.SendMessage };
      if (message.author !== w.id) throw new AppError({ type: 'CannotEditMessage' });
      // Embed media are the webhook creator's uploads, as when it sends.
      const claimed = await claimAttachments(deps, fileIds, w.creator_id, messageId);
      const events = decideEditMessage(cmd, message, { ...ctx, now: new Date(deps.now()).toISOString(), files: claimed.files });
      return { writes: [{ stream, scope: access.scope, expected: message.revision, events }, ...claimed.writes], result: undefined };
    });
    return currentMessage(deps, first.channel_id, messageId);
  },
});
