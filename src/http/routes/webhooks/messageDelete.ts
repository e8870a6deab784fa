// DELETE /webhooks/:webhook_id/:token/:message_id — 204 (no session; the webhook's own message only, else 403 CannotDeleteMessage).
import { decideWebhookDeleteMessage } from '../../../domain/message/deleteMessage.ts';
import { messageStream } from '../../../domain/message/events.ts';
import { AppError } from '../../../errors.ts';
import { loadMessage } from '../../../readmodel/messages.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { loadWebhookByToken } from './load.ts';
import { webhookAccess } from './send.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/webhooks/:webhook_id/:token/:message_id',
  auth: 'none',
  async handler(rc) {
    const { deps, params } = rc;
    const messageId = params.message_id!;
    const first = await loadWebhookByToken(deps, params.webhook_id!, params.token!);
    const stream = messageStream(messageId);
    await deps.executor.execute(rc.meta, [stream], async () => {
      const w = await loadWebhookByToken(deps, first.id, params.token!);
      const access = await webhookAccess(deps, w);
      const message = await loadMessage(deps.readModels, w.channel_id, messageId);
      if (!message) throw new AppError({ type: 'NotFound' });
      return { writes: [{ stream, scope: access.scope, expected: message.revision, events: decideWebhookDeleteMessage(message, w.id) }], result: undefined };
    });
    return NO_CONTENT;
  },
});
