// DELETE /channels/:channel_id/messages/bulk — {ids: 1..100} → 204 (ManageMessages; one atomic append over the message streams).
import { z } from 'zod';
import { channelAccess } from '../../../access.ts';
import { BULK_DELETE_MAX, decideBulkDelete } from '../../../domain/message/deleteMessage.ts';
import { messageStream } from '../../../domain/message/events.ts';
import { loadMessages } from '../../../readmodel/messages.ts';
import { idString } from '../../schemas.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/channels/:channel_id/messages/bulk',
  auth: 'user',
  body: z.strictObject({ ids: z.array(idString).min(1).max(BULK_DELETE_MAX) }),
  permissions: ['ViewChannel', 'ManageMessages'],
  async handler(rc) {
    const { deps, body } = rc;
    const channelId = rc.params.channel_id!;
    const ids = [...new Set(body.ids)];
    await deps.executor.execute(rc.meta, ids.map(messageStream), async () => {
      const a = await channelAccess(deps, channelId, rc.caller.userId);
      const stored = await loadMessages(deps.readModels, channelId, ids);
      const messages = Object.fromEntries(ids.map((id, i) => [id, stored[i] ?? null]));
      const deletions = decideBulkDelete(ids, messages, { userId: rc.caller.userId, permissions: a.permissions, channelId, nowMs: deps.now() });
      return {
        writes: deletions.map((d) => ({ stream: messageStream(d.messageId), scope: a.scope, expected: d.expected, events: d.events })),
        result: undefined,
      };
    });
    return NO_CONTENT;
  },
});
