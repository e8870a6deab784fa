// PUT /channels/:channel_id/ack/:message_id — 204 (ViewChannel; the message must be in the channel, else 404 NotFound).
import { channelAccess } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import { decideAckChannel } from '../../../domain/unreads/ack.ts';
import { unreadsStream } from '../../../domain/unreads/events.ts';
import { isCanonicalUlid } from '../../../ids.ts';
import { rm } from '../../../readmodel/keys.ts';
import { lastMessageIds } from '../../../readmodel/lastMessages.ts';
import { hasMessage } from '../../../readmodel/messages.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';

export default defineRoute({
  method: 'PUT',
  path: '/channels/:channel_id/ack/:message_id',
  auth: 'user',
  noBots: true,
  permissions: ['ViewChannel'],
  async handler(rc) {
    const { deps, caller } = rc;
    const channelId = rc.params.channel_id!;
    const messageId = rc.params.message_id!;
    if (!isCanonicalUlid(channelId) || !isCanonicalUlid(messageId)) throw new AppError({ type: 'NotFound' });
    // Appended with expected revision `any`: acks of one user never contend (DESIGN: an ack costs a send).
    await deps.executor.execute(rc.meta, [], async () => {
      const a = await channelAccess(deps, channelId, caller.userId);
      const [exists, lastId] = await Promise.all([
        hasMessage(deps.readModels, channelId, messageId),
        deps.readModels.hgetJson<string>(rm.unreadLast(caller.userId), channelId),
      ]);
      // A deleted message can still be acknowledged while it is the channel's last one.
      const inChannel = exists || (await lastMessageIds(deps.readModels, [channelId]))[0] === messageId;
      const events = decideAckChannel({ channelId, messageId }, { permissions: a.permissions, inChannel, lastId });
      return { writes: [{ stream: unreadsStream(caller.userId), scope: caller.userId, expected: 'any' as const, events }], result: undefined };
    });
    return NO_CONTENT;
  },
});
