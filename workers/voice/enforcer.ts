/**
 * Keeps LiveKit rooms in step with permissions (worker role): members who lose Connect — a channel or server
 * override, a role change, a timeout, a kick or leave, a ban, a deleted channel — are removed from the room
 * through LiveKit's server API (RoomService.RemoveParticipant); LiveKit's `participant_left` webhook then ends
 * their voice state as for any leave.
 *
 * A subscription to the event log (from a checkpoint in Redis shared by every worker process, starting at the
 * head the first time) turns each permission-changing event of a server that has someone in voice into a
 * BullMQ job `voice-enforce` (job id = server and position, so several worker processes add it once). The job
 * waits until the read models have the event, recomputes the channel permissions of every participant of the
 * server, and removes those without Connect. Nothing of this runs in a request.
 */
import { Queue, Worker, type Job } from 'bullmq';
import { closeBullConnection, createRedis } from '../../src/redis.ts';
import { RoomServiceClient } from 'livekit-server-sdk';
import { channelAccess } from '../../src/access.ts';
import type { Config } from '../../src/config.ts';
import type { ServerVoiceState } from '../../src/domain/voice/state.ts';
import { AppError } from '../../src/errors.ts';
import type { EventStore, Subscription } from '../../src/eventstore/port.ts';
import type { Logger } from '../../src/log.ts';
import { timedJob, trackQueue } from '../../src/metrics/registry.ts';
import { Permission } from '../../src/permissions/bits.ts';
import { rm } from '../../src/readmodel/keys.ts';
import type { ReadModels } from '../../src/readmodel/reader.ts';
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

/** What a check job carries. */
interface CheckJob {
  serverId: string;
  /** Position of the event that triggered it (decimal); the read models must have passed it. */
  position: string;
}

/** Dependencies of the enforcer. */
export interface VoiceEnforcerDeps {
  config: Config;
  log: Logger;
  store: EventStore;
  readModels: ReadModels;
  now: () => number;
}

/** A running enforcer. */
export interface VoiceEnforcer {
  /** Resolves once the subscription delivered everything that existed when it started. */
  caughtUp: Promise<void>;
  close(): Promise<void>;
}

/** LiveKit's HTTP API base from LIVEKIT_URL (clients get ws(s)://, the server API is the same host over http(s)). */
export function livekitApiUrl(url: string): string {
  return url.replace(/^ws(s?):\/\//, 'http$1://');
}

const MAX_CP = `local c = redis.call('get', KEYS[1]) if (not c) or tonumber(c) < tonumber(ARGV[1]) then redis.call('set', KEYS[1], ARGV[1]) end return 1`;

/** Starts the enforcer (only with voice enabled). */
export async function startVoiceEnforcer(deps: VoiceEnforcerDeps): Promise<VoiceEnforcer> {
  const { config, log, store, readModels } = deps;
  const voice = config.voice;
  if (!voice.enabled) throw new Error('voice is not enabled');
  const rooms = new RoomServiceClient(livekitApiUrl(voice.url), voice.apiKey, voice.apiSecret);
  const connection = bullConnection(config.redisUrl);
  const prefix = bullPrefix(config.redisPrefix, config.redisUrl);
  const redis = createRedis(config.redisUrl, { maxRetriesPerRequest: 3 });
  redis.on('error', () => {});
  const cpKey = `${config.redisPrefix}voice:enforcer:cp`;
  const queue = new Queue<CheckJob>(VOICE_QUEUE, { connection, prefix });
  queue.on('error', (err) => log.warn({ err: err.message }, 'voice queue error'));
  const untrack = trackQueue(VOICE_QUEUE, queue);

  const check = async (job: Job<CheckJob>): Promise<number> => {
    const { serverId, position } = job.data;
    await readModels.waitFor(serverId, BigInt(position));
    const state = await readModels.getJson<ServerVoiceState>(rm.serverVoice(serverId));
    let removed = 0;
    for (const [userId, p] of Object.entries(state?.participants ?? {})) {
      let connect: boolean;
      try {
        const a = await channelAccess({ readModels, now: deps.now }, p.channel, userId);
        connect = (a.permissions & Permission.Connect) !== 0n;
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        connect = false; // not a member any more, or the channel is gone
      }
      if (connect) continue;
      try {
        await rooms.removeParticipant(p.channel, userId);
        removed++;
        log.info({ serverId, channel: p.channel, user: userId }, 'removed from a voice room: no Connect');
      } catch (err) {
        // Already gone from the room (LiveKit answers not_found): nothing left to do.
        if (!/not.?found/i.test(String((err as Error).message))) throw err;
      }
    }
    return removed;
  };
  const worker = new Worker<CheckJob, number>(VOICE_QUEUE, timedJob(VOICE_QUEUE, check), { connection, prefix, concurrency: 4 });
  worker.on('error', (err) => log.warn({ err: err.message }, 'voice worker error'));
  worker.on('failed', (job, err) => log.warn({ job: job?.id, err: err.message }, 'voice check failed'));

  const raw = await redis.get(cpKey);
  const after = raw === null ? await store.headPosition() : BigInt(raw);
  let resolveCaughtUp!: () => void;
  const caughtUp = new Promise<void>((r) => (resolveCaughtUp = r));
  const sub: Subscription = store.subscribe({
    ...(after !== undefined ? { after } : {}),
    onCaughtUp: () => resolveCaughtUp(),
    onError: (err) => log.error({ err }, 'voice enforcer subscription failed'),
    onEvents: async (events) => {
      const jobs = new Map<string, CheckJob>();
      for (const e of events) {
        if (!PERMISSION_EVENTS.has(e.type)) continue;
        jobs.set(e.metadata.scope, { serverId: e.metadata.scope, position: e.position.toString() });
      }
      for (const job of jobs.values()) {
        const st = await readModels.getJson<ServerVoiceState>(rm.serverVoice(job.serverId));
        if (!st || Object.keys(st.participants).length === 0) continue;
        await queue.add('check', job, { jobId: `${job.serverId}-${job.position}`, attempts: 5, backoff: { type: 'exponential', delay: 500 }, removeOnComplete: 1000, removeOnFail: 1000 });
      }
      await redis.eval(MAX_CP, 1, cpKey, events[events.length - 1]!.position.toString());
    },
  });
  return {
    caughtUp,
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
