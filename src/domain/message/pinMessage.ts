/** PinMessage and UnpinMessage: POST / DELETE /channels/:id/messages/:mid/pin (reference §3.7). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { requireAll } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import { SYSTEM_AUTHOR } from './events.ts';
import type { MessageState } from './state.ts';

/** Context of a pin or unpin. */
export interface PinContext {
  userId: string;
  /** The caller's channel permission value. */
  permissions: bigint;
  /** Id of the system message announcing it. */
  systemMessageId: string;
}

/** A pin decision: the events of the pinned message's stream and of the new system message's stream. */
export interface PinDecision {
  events: DomainEvent[];
  system: DomainEvent[];
}

function systemMessage(ctx: PinContext, message: MessageState, type: 'message_pinned' | 'message_unpinned'): DomainEvent[] {
  return [
    {
      type: 'MessageSent',
      data: { message: { _id: ctx.systemMessageId, channel: message.channel, author: SYSTEM_AUTHOR, system: { type, id: message._id, by: ctx.userId } } },
    },
  ];
}

/** ViewChannel and ManageMessages (there is no pin-only bit); 400 AlreadyPinned; posts `message_pinned`. */
export function decidePinMessage(message: MessageState, ctx: PinContext): PinDecision {
  requireAll(ctx.permissions, Permission.ViewChannel, Permission.ManageMessages);
  if (message.pinned) throw new AppError({ type: 'AlreadyPinned' });
  return {
    events: [{ type: 'MessagePinned', data: { channel: message.channel, by: ctx.userId } }],
    system: systemMessage(ctx, message, 'message_pinned'),
  };
}

/** ViewChannel and ManageMessages; 400 NotPinned; posts `message_unpinned`. */
export function decideUnpinMessage(message: MessageState, ctx: PinContext): PinDecision {
  requireAll(ctx.permissions, Permission.ViewChannel, Permission.ManageMessages);
  if (!message.pinned) throw new AppError({ type: 'NotPinned' });
  return {
    events: [{ type: 'MessageUnpinned', data: { channel: message.channel, by: ctx.userId } }],
    system: systemMessage(ctx, message, 'message_unpinned'),
  };
}
