/**
 * Running a private-channel command from a route: load the channel (404 when missing or when the caller is
 * not a recipient), decide on its access, and append to `channel-<id>` with the revision read (so the group
 * member limit holds under concurrent adds) together with the system messages it posts (each a new
 * `message-<id>` stream) and any claimed files, in one atomic append. Scope = the channel id.
 */
import { loadPrivateChannel, privateChannelAccess, type PrivateChannelAccess } from '../../../access.ts';
import type { Write } from '../../../commands.ts';
import { AppError } from '../../../errors.ts';
import type { DomainEvent } from '../../../domain/events.ts';
import { messageStream } from '../../../domain/message/events.ts';
import type { GroupObject } from '../../../domain/private/events.ts';
import type { GroupDecision } from '../../../domain/private/group.ts';
import { newId } from '../../../ids.ts';
import { channelStream, expectedOf, type CommandRoute } from '../../command.ts';

/** What a private-channel decision returns. */
export type PrivateDecision = DomainEvent[] | (GroupDecision & { also?: Write[] });

/** Decides on a private channel as the caller; resolves once everything is projected. */
export async function onPrivateChannel(
  rc: CommandRoute,
  channelId: string,
  decide: (a: PrivateChannelAccess) => PrivateDecision | Promise<PrivateDecision>,
  options: { lock?: string[] } = {},
): Promise<void> {
  const stream = channelStream(channelId);
  await rc.deps.executor.execute(rc.meta, [stream, ...(options.lock ?? [])], async () => {
    const channel = await loadPrivateChannel(rc.deps, channelId);
    if (!channel) throw new AppError({ type: 'NotFound' });
    const access = await privateChannelAccess(rc.deps, channel, rc.caller.userId);
    const d = await decide(access);
    const { events, system, also } = Array.isArray(d) ? { events: d, system: [], also: [] } : { also: [], ...d };
    const writes: Write[] = [{ stream, scope: channelId, expected: expectedOf(channel.revision), events }];
    // System messages only accompany a change (a decision without events posts nothing).
    if (events.length > 0) {
      for (const s of system) writes.push({ stream: messageStream(s.messageId), scope: channelId, expected: 'no_stream', events: [s.event] });
      writes.push(...(also ?? []));
    }
    return { writes, result: undefined };
  });
}

/** The group of an access, or 400 InvalidOperation for Saved Notes and DMs. */
export function groupOf(a: PrivateChannelAccess): GroupObject {
  if (a.channel.channel_type !== 'Group') throw new AppError({ type: 'InvalidOperation' });
  return a.channel;
}

/** A source of fresh message ids for system messages (time-ordered, after anything sent so far). */
export function idSource(rc: Pick<CommandRoute, 'deps'>): () => string {
  return () => newId(rc.deps.now());
}
