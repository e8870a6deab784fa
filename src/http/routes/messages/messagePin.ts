// POST /channels/:channel_id/messages/:message_id/pin — 204; posts the `message_pinned` system message (ManageMessages).
// DELETE of the same path unpins — 204; posts the `message_unpinned` system message (ManageMessages).
import { decidePinMessage, decideUnpinMessage } from '../../../domain/message/pinMessage.ts';
import { messageStream } from '../../../domain/message/events.ts';
import { newId } from '../../../ids.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { onMessage } from './command.ts';

/** The pin (POST) or unpin (DELETE) route: the decision's events on the message, its system message beside them. */
function pinRoute(method: 'POST' | 'DELETE', decide: typeof decidePinMessage) {
  return defineRoute({
    method,
    path: '/channels/:channel_id/messages/:message_id/pin',
    auth: 'user',
    permissions: ['ViewChannel', 'ManageMessages'],
    async handler(rc) {
      const systemMessageId = newId(rc.deps.now());
      await onMessage(rc, rc.params.channel_id!, rc.params.message_id!, (a, message) => {
        const d = decide(message, { userId: rc.caller.userId, permissions: a.permissions, systemMessageId });
        return { events: d.events, also: [{ stream: messageStream(systemMessageId), scope: a.scope, expected: 'no_stream', events: d.system }] };
      });
      return NO_CONTENT;
    },
  });
}

export const messagePin = pinRoute('POST', decidePinMessage);
export const messageUnpin = pinRoute('DELETE', decideUnpinMessage);
