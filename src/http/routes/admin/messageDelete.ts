// DELETE /admin/messages/:message_id — delete any message (server channel, DM, group or Saved Notes) with a reason (staff); recorded in the instance audit log.
import { INSTANCE_SCOPE, modActionStream } from '../../../domain/moderation/events.ts';
import { messageStream } from '../../../domain/message/events.ts';
import { AppError } from '../../../errors.ts';
import { newId } from '../../../ids.ts';
import { loadChannel, loadPrivateChannel } from '../../../access.ts';
import { loadMessage } from '../../../readmodel/messages.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { callerRole, pathId, ReasonBody, staffOnly } from './staff.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/admin/messages/:message_id',
  auth: 'user',
  authorize: staffOnly('moderator'),
  body: ReasonBody,
  async handler(rc) {
    await callerRole(rc);
    const messageId = pathId(rc.params.message_id);
    const [sent] = await rc.deps.store.readStream(messageStream(messageId), { maxCount: 1 });
    if (!sent || sent.type !== 'MessageSent') throw new AppError({ type: 'NotFound' });
    const channelId = (sent.data as { message: { channel: string } }).message.channel;
    const actionStream = modActionStream(newId(rc.deps.now()));
    const stream = messageStream(messageId);
    await rc.deps.executor.execute({ ...rc.meta, reason: rc.body.reason }, [stream], async () => {
      // Staff are not members or recipients: the channel is read without an access check. A server channel's
      // messages are scoped to its server, a private channel's to the channel itself.
      const channel = await loadChannel(rc.deps, channelId);
      const server = channel ? channel.server : null;
      const exists = channel !== null || (await loadPrivateChannel(rc.deps, channelId)) !== null;
      const message = exists ? await loadMessage(rc.deps.readModels, channelId, messageId) : null;
      if (!exists || !message) throw new AppError({ type: 'NotFound' });
      return {
        writes: [
          { stream, scope: server ?? channelId, expected: message.revision, events: [{ type: 'MessageDeleted', data: { channel: channelId } }] },
          {
            stream: actionStream,
            scope: INSTANCE_SCOPE,
            expected: 'no_stream',
            events: [{ type: 'ModeratorDeletedMessage', data: { message: messageId, channel: channelId, server, author: message.author, reason: rc.body.reason } }],
          },
        ],
        result: undefined,
      };
    });
    return NO_CONTENT;
  },
});
