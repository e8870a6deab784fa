/**
 * Running a command on one message from a route: resolve the caller's channel access (404 for a missing
 * channel or a non-member), load the message of that channel (404 NotFound when it is not there), decide,
 * and append to `message-<id>` with the revision read (so the 20-reaction limit holds under concurrency).
 * A decision may add writes to other streams (a pin's system message), appended atomically with it.
 */
import { channelAccess, type AnyChannelAccess } from '../../../access.ts';
import type { Write } from '../../../commands.ts';
import { AppError } from '../../../errors.ts';
import type { DomainEvent } from '../../../domain/events.ts';
import { messageStream } from '../../../domain/message/events.ts';
import type { MessageState } from '../../../domain/message/state.ts';
import { loadMessage } from '../../../readmodel/messages.ts';
import type { CommandRoute } from '../../command.ts';

/** What a message decision returns: its events, or its events and writes to other streams. */
export type MessageDecision = DomainEvent[] | { events: DomainEvent[]; also: Write[] };

/** Decides on `message-<messageId>` in `channelId` as the caller; resolves once the events are projected. */
export async function onMessage(
  rc: CommandRoute,
  channelId: string,
  messageId: string,
  decide: (access: AnyChannelAccess, message: MessageState) => MessageDecision | Promise<MessageDecision>,
  options: { lock?: string[] } = {},
): Promise<void> {
  const stream = messageStream(messageId);
  await rc.deps.executor.execute(rc.meta, [stream, ...(options.lock ?? [])], async () => {
    const access = await channelAccess(rc.deps, channelId, rc.caller.userId);
    const message = await loadMessage(rc.deps.readModels, channelId, messageId);
    if (!message) throw new AppError({ type: 'NotFound' });
    const d = await decide(access, message);
    const { events, also } = Array.isArray(d) ? { events: d, also: [] } : d;
    return { writes: [{ stream, scope: access.scope, expected: message.revision, events }, ...also], result: undefined };
  });
}
