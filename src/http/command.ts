/**
 * Running a server or channel command from a route: resolve the caller's access (404 for non-members),
 * decide, and append to the aggregate's stream with the revision the access read (so limits such as
 * SERVER_CHANNEL_LIMIT hold under concurrency). Decisions are re-run after a conflict with fresh facts.
 *
 * A decision may also return writes to other streams, appended atomically with its own (e.g. the
 * `FileAttached` of a claimed upload); name those streams in `lock` so requests in one process queue up.
 */
import { serverChannelAccess, loadChannel, serverAccess, type ChannelAccess, type ServerAccess } from '../access.ts';
import type { Write } from '../commands.ts';
import { AppError } from '../errors.ts';
import type { DomainEvent } from '../domain/events.ts';
import type { ExpectedRevision } from '../eventstore/port.ts';
import type { RouteContext } from './route.ts';

/** What a server or channel command needs from its route. */
export type CommandRoute = Pick<RouteContext<unknown, unknown>, 'deps' | 'meta' | 'caller'>;

/** What a decision returns: its events, or its events and writes to other streams appended with them. */
export type Decision = DomainEvent[] | { events: DomainEvent[]; also: Write[] };

/** Options of `onServer` / `onChannel`. */
export interface CommandOptions {
  /** Further keys (streams of `also` writes) to serialise on inside this process. */
  lock?: string[];
}

/** Stream of a server. */
export const serverStream = (serverId: string) => `server-${serverId}`;
/** Stream of a channel's settings. */
export const channelStream = (channelId: string) => `channel-${channelId}`;

/** The expected revision of a stored revision (-1: the stream has no events yet). */
export function expectedOf(revision: number): ExpectedRevision {
  return revision < 0 ? 'no_stream' : revision;
}

function split(d: Decision): { events: DomainEvent[]; also: Write[] } {
  return Array.isArray(d) ? { events: d, also: [] } : d;
}

/**
 * Decides on `server-<serverId>` as the caller: `decide` gets the caller's server access (404 NotFound for a
 * non-member) and returns the events (none = no-op). Resolves once they are projected.
 */
export async function onServer(
  rc: CommandRoute,
  serverId: string,
  decide: (access: ServerAccess) => Decision | Promise<Decision>,
  options: CommandOptions = {},
): Promise<void> {
  const stream = serverStream(serverId);
  await rc.deps.executor.execute(rc.meta, [stream, ...(options.lock ?? [])], async () => {
    const access = await serverAccess(rc.deps, serverId, rc.caller.userId);
    const { events, also } = split(await decide(access));
    return { writes: [{ stream, scope: serverId, expected: access.server.revision, events }, ...also], result: undefined };
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
  decide: (access: ChannelAccess) => Decision | Promise<Decision>,
  options: CommandOptions = {},
): Promise<void> {
  // A channel never changes server, so its server id can be read before taking the lock.
  const known = await loadChannel(rc.deps, channelId);
  if (!known) throw new AppError({ type: 'NotFound' });
  const lock = target === 'channel' ? channelStream(channelId) : serverStream(known.server);
  await rc.deps.executor.execute(rc.meta, [lock, ...(options.lock ?? [])], async () => {
    const access = await serverChannelAccess(rc.deps, channelId, rc.caller.userId);
    const { events, also } = split(await decide(access));
    const serverId = access.server._id;
    const write: Write =
      target === 'channel'
        ? { stream: channelStream(channelId), scope: serverId, expected: expectedOf(access.channel.revision), events }
        : { stream: serverStream(serverId), scope: serverId, expected: access.server.revision, events };
    return { writes: [write, ...also], result: undefined };
  });
}
