/**
 * Keeps LiveKit rooms in step with permissions (worker role), through LiveKit's server API (RoomService):
 * - members who lose Connect — a channel or server override, a role change, a timeout, a kick or leave, a
 *   ban — are removed from the room (RemoveParticipant); LiveKit's `participant_left` webhook then ends their
 *   voice state as for any leave;
 * - members who keep Connect get their participant permission updated (UpdateParticipant) when what they may
 *   do changes: publishing ⇐ Speak/Video (so also `can_publish` and timeouts), subscribing ⇐ Listen (so also
 *   `can_receive`), data ⇐ Speak — the same capabilities a join token carries (`joinGrant`);
 * - a deleted channel's room, and a deleted server's rooms, are closed (DeleteRoom);
 * - calls in DMs and groups likewise: a DM's recipients lose Connect when their friendship ends or one blocks
 *   the other (the DM becomes view only), a group's member when removed from the group or when the group's
 *   permissions drop Connect (or they hand the ownership on); a deleted group's room is closed.
 *
 * The permission last applied to each participant is kept in Redis (`voice:enforcer:applied:<serverId>`,
 * cleared when they join or leave), so a change that leaves someone's rights as they were calls nothing.
 *
 * A subscription to the event log (from a checkpoint in Redis shared by every worker process, starting at the
 * head the first time) turns each permission-changing event of a server that has someone in voice into a
 * BullMQ job `voice-enforce` (job id = server and position, so several worker processes add it once). The job
 * waits until the read models have the event, recomputes the channel permissions of every participant of the
 * server, and removes those without Connect. Nothing of this runs in a request.
 */
import { Queue, Worker, type Job } from 'bullmq';
import { closeBullConnection, createRedis } from '../../src/redis.ts';
import { channelAccess } from '../../src/access.ts';
import type { Config } from '../../src/config.ts';
import type { ServerVoiceState } from '../../src/domain/voice/state.ts';
import { AppError } from '../../src/errors.ts';
import type { EventStore } from '../../src/eventstore/port.ts';
import type { SharedLogReader } from '../../src/eventstore/sharedReader.ts';
import { followLog } from '../../src/eventstore/rewind.ts';
import type { Logger } from '../../src/log.ts';
import { timedJob, trackQueue } from '../../src/metrics/registry.ts';
import { Permission } from '../../src/permissions/bits.ts';
import { rm } from '../../src/readmodel/keys.ts';
import type { ReadModels } from '../../src/readmodel/reader.ts';
import { isNotFound, permissionKey, participantPermission, roomService } from '../../src/voice/rooms.ts';
import { bullConnection, bullPrefix } from '../media/jobs.ts';

/** The queue of permission checks. */
export const VOICE_QUEUE = 'voice-enforce';

/** Events after which someone in a server's voice channels may have lost Connect. */
export const PERMISSION_EVENTS: ReadonlySet<string> = new Set([
  'MemberEdited',
  'MemberLeft',
  'UserBanned',
  'RoleEdited',
  'RolePermissionsSet',
  'RoleDeleted',
  'ServerDefaultPermissionsSet',
  'ChannelDefaultPermissionsSet',
  'ChannelRolePermissionsSet',
  'ChannelDeleted',
]);

/** Events of a DM's or group's call (scope: the channel), or of a relationship that decides a DM's permissions. */
export const PRIVATE_CALL_EVENTS: ReadonlySet<string> = new Set(['RelationshipChanged', 'GroupMemberRemoved', 'GroupPermissionsSet', 'GroupEdited', 'GroupDeleted']);

/** Every event type the enforcer acts on: sessions starting and ending, rooms closing, rights changing. */
const VOICE_EVENTS: ReadonlySet<string> = new Set(['VoiceParticipantJoined', 'VoiceParticipantLeft', 'ChannelDeleted', 'ServerDeleted', ...PRIVATE_CALL_EVENTS, ...PERMISSION_EVENTS]);

/** Member fields whose change can change what a member may do in a call. */
const VOICE_MEMBER_FIELDS = ['roles', 'timeout', 'can_publish', 'can_receive'] as const;
const VOICE_MEMBER_REMOVES = new Set(['Roles', 'Timeout', 'CanPublish', 'CanReceive']);

/** What a check job carries. */
interface CheckJob {
  serverId: string;
  /** Position of the event that triggered it (decimal); the read models must have passed it. */
  position: string;
  /** Only these participants (a member's own edit, leave or ban); absent: every participant of the server. */
  users?: string[];
  /** Rooms to close (deleted channels). */
  rooms?: string[];
  /**
   * A DM's or group's call (`serverId` is then the channel): the check waits for every partition to pass
   * `position`, since what decides (the recipients' relationships) is kept under the users' scopes.
   */
  private?: true;
}

/**
 * Whom a permission event concerns: `null` for nobody (a member edit of a nickname or avatar), a list of users
 * for a member's own change, `'all'` for a change of roles, defaults or overrides.
 */
export function concerned(e: { type: string; data: unknown }): string[] | 'all' | null {
  switch (e.type) {
    case 'MemberEdited': {
      const d = e.data as { userId: string; data: Record<string, unknown>; remove: string[] };
      const relevant = VOICE_MEMBER_FIELDS.some((f) => d.data[f] !== undefined) || d.remove.some((r) => VOICE_MEMBER_REMOVES.has(r));
      return relevant ? [d.userId] : null;
    }
    case 'MemberLeft':
    case 'UserBanned':
      return [(e.data as { userId: string }).userId];
    default:
      return 'all';
  }
}

/** Merges a job into the pending one of its server: users add up, any server-wide event makes it server-wide. */
function merge(into: CheckJob | undefined, next: CheckJob): CheckJob {
  if (!into) return next;
  const users = into.users && next.users ? [...new Set([...into.users, ...next.users])] : undefined;
  const rooms = [...(into.rooms ?? []), ...(next.rooms ?? [])];
  return { serverId: next.serverId, position: next.position, ...(users ? { users } : {}), ...(rooms.length ? { rooms } : {}), ...(into.private || next.private ? { private: true as const } : {}) };
}

/** Dependencies of the enforcer. */
export interface VoiceEnforcerDeps {
  config: Config;
  log: Logger;
  store: EventStore;
  readModels: ReadModels;
  now: () => number;
  /** The process's shared reader of the log, shared with the other followers (default: a subscription of its own). */
  reader?: SharedLogReader;
}

/** A running enforcer. */
export interface VoiceEnforcer {
  /** Resolves once the subscription delivered everything that existed when it started. */
  caughtUp: Promise<void>;
  close(): Promise<void>;
}


/** Starts the enforcer (only with voice enabled). */
export async function startVoiceEnforcer(deps: VoiceEnforcerDeps): Promise<VoiceEnforcer> {
  const { config, log, store, readModels } = deps;
  const voice = config.voice;
  if (!voice.enabled) throw new Error('voice is not enabled');
  const rooms = await roomService(voice);
  const connection = bullConnection(config.redisUrl);
  const prefix = bullPrefix(config.redisPrefix, config.redisUrl);
  const redis = createRedis(config.redisUrl, { maxRetriesPerRequest: 3 });
  redis.on('error', () => {});
  const cpKey = `${config.redisPrefix}voice:enforcer:cp`;
  const queue = new Queue<CheckJob>(VOICE_QUEUE, { connection, prefix });
  queue.on('error', (err) => log.warn({ err: err.message }, 'voice queue error'));
  const untrack = trackQueue(VOICE_QUEUE, queue);

  const appliedKey = (serverId: string) => `${config.redisPrefix}voice:enforcer:applied:${serverId}`;
  /** Runs a LiveKit call; LiveKit answering not_found (the participant or room is gone already) is success. */
  const gone = async (call: () => Promise<unknown>): Promise<boolean> => {
    try {
      await call();
      return true;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      return false;
    }
  };

  const check = async (job: Job<CheckJob>): Promise<number> => {
    const { serverId, position } = job.data;
    for (const room of job.data.rooms ?? []) {
      if (await gone(() => rooms.deleteRoom(room))) log.info({ serverId, room }, 'closed the voice room of a deleted channel');
    }
    if (job.data.private) await readModels.waitForAll(BigInt(position));
    else await readModels.waitFor(serverId, BigInt(position));
    const state = await readModels.getJson<ServerVoiceState>(rm.serverVoice(serverId));
    const only = job.data.users ? new Set(job.data.users) : null;
    let changed = 0;
    for (const [userId, p] of Object.entries(state?.participants ?? {})) {
      if (only && !only.has(userId)) continue;
      let permissions: bigint;
      try {
        permissions = (await channelAccess({ readModels, now: deps.now }, p.channel, userId)).permissions;
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        permissions = 0n; // not a member any more, or the channel is gone
      }
      if ((permissions & Permission.Connect) === 0n) {
        await gone(() => rooms.removeParticipant(p.channel, userId));
        await redis.hdel(appliedKey(serverId), userId);
        changed++;
        log.info({ serverId, channel: p.channel, user: userId }, 'removed from a voice room: no Connect');
        continue;
      }
      const key = `${p.channel}|${permissionKey(permissions)}`;
      if ((await redis.hget(appliedKey(serverId), userId)) === key) continue;
      await gone(() => rooms.updateParticipant(p.channel, userId, { permission: participantPermission(permissions) }));
      await redis.hset(appliedKey(serverId), userId, key);
      changed++;
      log.info({ serverId, channel: p.channel, user: userId }, 'voice permissions updated');
    }
    return changed;
  };
  const worker = new Worker<CheckJob, number>(VOICE_QUEUE, timedJob(VOICE_QUEUE, check), { connection, prefix, concurrency: 4 });
  worker.on('error', (err) => log.warn({ err: err.message }, 'voice worker error'));
  worker.on('failed', (job, err) => log.warn({ job: job?.id, err: err.message }, 'voice check failed'));

  /** The check a DM's or group's event calls for (null: none, e.g. two users who share no DM). */
  const privateCallJob = async (e: { type: string; data: unknown; position: bigint }): Promise<CheckJob | null> => {
    const position = e.position.toString();
    switch (e.type) {
      case 'RelationshipChanged': {
        const d = e.data as { userId: string; other: string };
        const dm = await readModels.getJson<string>(rm.dmPair(d.userId, d.other));
        return dm ? { serverId: dm, position, users: [d.userId, d.other], private: true } : null;
      }
      case 'GroupMemberRemoved': {
        const d = e.data as { channelId: string; userId: string };
        return { serverId: d.channelId, position, users: [d.userId], private: true };
      }
      case 'GroupPermissionsSet':
      case 'GroupEdited': // a new owner: the old one keeps only the group's permissions
        if (e.type === 'GroupEdited' && (e.data as { data: { owner?: string } }).data.owner === undefined) return null;
        return { serverId: (e.data as { channelId: string }).channelId, position, private: true };
      case 'GroupDeleted': {
        const channelId = (e.data as { channelId: string }).channelId;
        return { serverId: channelId, position, users: [], rooms: [channelId], private: true };
      }
      default:
        return null;
    }
  };

  // Checked against the log on every start (src/eventstore/rewind.ts): a restored or failed-over log is followed
  // from its recorded rewind.
  const sub = await followLog({
    store,
    redis,
    cpKey,
    by: 'voice-enforcer',
    log,
    ...(deps.reader ? { reader: deps.reader } : {}),
    // Batches without any of these cost no Redis command (`followLog` moves the checkpoint past them in the background).
    wants: (e) => VOICE_EVENTS.has(e.type),
    onEvents: async (events) => {
      const jobs = new Map<string, CheckJob>();
      for (const e of events) {
        const serverId = e.metadata.scope;
        if (e.type === 'VoiceParticipantJoined' || e.type === 'VoiceParticipantLeft') {
          // A new session starts with its join token's rights: nothing is known to be applied to it.
          await redis.hdel(appliedKey(serverId), (e.data as { user: string }).user);
          continue;
        }
        if (e.type === 'ChannelDeleted' || e.type === 'ServerDeleted') {
          const closed = e.type === 'ChannelDeleted' ? [(e.data as { channelId: string }).channelId] : (e.data as { channels: string[] }).channels;
          jobs.set(serverId, merge(jobs.get(serverId), { serverId, position: e.position.toString(), users: [], rooms: closed }));
          if (e.type === 'ServerDeleted') await redis.del(appliedKey(serverId));
          continue;
        }
        if (PRIVATE_CALL_EVENTS.has(e.type)) {
          const job = await privateCallJob(e);
          if (job) jobs.set(job.serverId, merge(jobs.get(job.serverId), job));
          continue;
        }
        if (!PERMISSION_EVENTS.has(e.type)) continue;
        const who = concerned(e);
        if (who === null) continue;
        jobs.set(serverId, merge(jobs.get(serverId), { serverId, position: e.position.toString(), ...(who === 'all' ? {} : { users: who }) }));
      }
      for (const job of jobs.values()) {
        const st = await readModels.getJson<ServerVoiceState>(rm.serverVoice(job.serverId));
        if (!job.rooms?.length && (!st || Object.keys(st.participants).length === 0)) continue;
        await queue.add('check', job, { jobId: `${job.serverId}-${job.position}`, attempts: 5, backoff: { type: 'exponential', delay: 500 }, removeOnComplete: 1000, removeOnFail: 1000 });
      }
    },
  });
  return {
    caughtUp: sub.caughtUp,
    async close() {
      await sub.close();
      untrack();
      await worker.close();
      await queue.close();
      closeBullConnection(connection);
      redis.disconnect();
    },
  };
}
