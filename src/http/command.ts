/**
 * Running a server or channel command from a route: resolve the caller's access (404 for non-members),
 * decide, and append to the aggregate's stream with the revision the access read (so limits such as
 * SERVER_CHANNEL_LIMIT hold under concurrency). Decisions are re-run after a conflict with fresh facts.
 */
import { channelAccess, loadChannel, serverAccess, type ChannelAccess, type ServerAccess } from '../access.ts';
import { AppError } from '../errors.ts';
import type { DomainEvent } from '../domain/events.ts';
import type { ExpectedRevision } from '../eventstore/port.ts';
import type { RouteContext } from './route.ts';

/** What a server or channel command needs from its route. */
export type CommandRoute = Pick<RouteContext<unknown, unknown>, 'deps' | 'meta' | 'caller'>;

/** Stream of a server. */
export const serverStream = (serverId: string) => `server-${serverId}`;
/** Stream of a channel's settings. */
export const channelStream = (channelId: string) => `channel-${channelId}`;

/** The expected revision of a stored revision (-1: the stream has no events yet). */
export function expectedOf(revision: number): ExpectedRevision {
  return revision < 0 ? 'no_stream' : revision;
}

/**
 * Decides on `server-<serverId>` as the caller: `decide` gets the caller's server access (404 NotFound for a
 * non-member) and returns the events (none = no-op). Resolves once they are projected.
 */
export async function onServer(
  rc: CommandRoute,
  serverId: string,
  decide: (access: ServerAccess) => DomainEvent[] | Promise<DomainEvent[]>,
): Promise<void> {
  const stream = serverStream(serverId);
  await rc.deps.executor.execute(rc.meta, [stream], async () => {
    const access = await serverAccess(rc.deps, serverId, rc.caller.userId);
    const events = await decide(access);
    return { writes: [{ stream, scope: serverId, expected: access.server.revision, events }], result: undefined };
  });
}

/**
 * Decides on a channel as the caller. `target` says which stream the events go to: the channel's settings
 * stream (`channel`, expected = the channel's revision) or its server's stream (`server`, expected = the
 * server's revision: channel deletion, invites). `decide` gets the caller's channel access (404 NotFound for
 * a missing channel or a non-member).
 */
export async function onChannel(
  rc: CommandRoute,
  channelId: string,
  target: 'channel' | 'server',
  decide: (access: ChannelAccess) => DomainEvent[] | Promise<DomainEvent[]>,
): Promise<void> {
  // A channel never changes server, so its server id can be read before taking the lock.
  const known = await loadChannel(rc.deps, channelId);
  if (!known) throw new AppError({ type: 'NotFound' });
  const lock = target === 'channel' ? channelStream(channelId) : serverStream(known.server);
  await rc.deps.executor.execute(rc.meta, [lock], async () => {
    const access = await channelAccess(rc.deps, channelId, rc.caller.userId);
    const events = await decide(access);
    const serverId = access.server._id;
    const write =
      target === 'channel'
        ? { stream: channelStream(channelId), scope: serverId, expected: expectedOf(access.channel.revision), events }
        : { stream: serverStream(serverId), scope: serverId, expected: access.server.revision, events };
    return { writes: [write], result: undefined };
  });
}
