/**
 * Web Push (Stoat's pushd), worker role. Nothing of it runs in a request:
 *
 * 1. A subscription to the event log (checkpoint `push:cp` in Redis, shared by every worker process; the head
 *    the first time, so history — and a rebuild of the read models, which does not touch this checkpoint —
 *    is never pushed) turns each user's `MessageSent` that could push (`couldPush`: a DM or group message, or a
 *    server message naming someone to notify) into a `message` job on the BullMQ queue `push`
 *    (job id = the message id: several workers, or a replay after a crash, add it once); likewise friend
 *    requests (`friend` jobs), DM and group calls that start (`call` jobs, Stoat's dm_call), and acks (`badge`
 *    jobs, Stoat's ack consumer: the new APNs badge, the user's unread mentions, to APNs subscriptions only).
 *    Every other event costs the follower nothing (`pushable`; its checkpoint moves past such batches at most
 *    twice a second). A worker process that lags another skips what the shared checkpoint says is handled, and
 *    the ids of the newest 1,000 completed jobs dedupe a crashed worker's replay of its last batch
 *    (`FOLLOWER_JOBS_KEPT`): no job is kept for an hour of traffic.
 * 2. The `message` job waits until the read models have the message, picks who is notified (the recipients
 *    of a DM or group, or the mentioned users of a server channel; not the author; nobody for
 *    SuppressNotifications), drops those online on a socket (Stoat's `filter_online`) and those whose synced
 *    `notifications` setting mutes it, and adds one `send` job per subscribed session (job id = message and
 *    session). Each user has at most PUSH_USER_LIMIT sends queued or in delivery; more are dropped.
 * 3. The `send` job encrypts the payload for the subscription (RFC 8291 aes128gcm) and signs it (VAPID,
 *    RFC 8292) with web-push, and posts it (RFC 8030) through the outbound policy's guarded agents (the
 *    endpoint is checked again: it was checked at subscribe time under another configuration, perhaps).
 *    404/410 from the push service: the subscription is gone — `PushUnsubscribed {reason: gone}` is
 *    appended. 408/429/5xx and network errors: retried with exponential backoff (PUSH_ATTEMPTS). Other 4xx
 *    and refused addresses: given up at once.
 *
 * A worker that dies mid-job loses nothing: BullMQ's lock expires and another worker takes the job.
 */
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import { closeBullConnection, createRedis } from '../../src/redis.ts';
import webpush from 'web-push';
import type { CommandExecutor } from '../../src/commands.ts';
import type { Config } from '../../src/config.ts';
import { decidePushGone } from '../../src/domain/account/push.ts';
import type { AccountState } from '../../src/domain/account/state.ts';
import { SYSTEM_AUTHOR, type MessageObject } from '../../src/domain/message/events.ts';
import { RELATIONS_STREAM } from '../../src/domain/relationship/events.ts';
import { recipientsOf, type PrivateChannelState } from '../../src/domain/private/state.ts';
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.ts';
import type { SharedLogReader } from '../../src/eventstore/sharedReader.ts';
import { FOLLOWER_JOBS_KEPT, followLog } from '../../src/eventstore/rewind.ts';
import type { Logger } from '../../src/log.ts';
import { timedJob, trackQueue } from '../../src/metrics/registry.ts';
import { checkUrl, guardedAgents, OutboundRefused } from '../../src/outbound/policy.ts';
import { own } from '../../src/own.ts';
import type { ChannelState } from '../../src/domain/channel/state.ts';
import { apnsPayload, APN_ENDPOINT, fcmMessage, FCM_ENDPOINT, mobileMessageNotification, type MessagePlace, type MobileNotification } from '../../src/push/mobile.ts';
import { couldPush, parseNotificationSettings, pushCandidates, pushNotificationOf, settingsAllow, type PushAuthor } from '../../src/push/notification.ts';
import type { VapidDetails } from '../../src/push/vapid.ts';
import { rm } from '../../src/readmodel/keys.ts';
import type { ReadModels } from '../../src/readmodel/reader.ts';
import { bullConnection, bullPrefix } from '../media/jobs.ts';
import { ApnsClient, CALL_RING_SECONDS, FcmClient, type MobileOutcome } from './mobile.ts';
import { fetchUnreads } from '../../src/readmodel/unreads.ts';
import { UNREADS_STREAM } from '../../src/domain/unreads/events.ts';

/** The queue of push work (`message` fan-outs and `send` deliveries). */
export const PUSH_QUEUE = 'push';

/** A message to notify about (from its `MessageSent`). */
export interface MessageJob {
  message: MessageObject;
  mentionedUsers?: string[];
  /** The event's scope (server id, or the private channel's id) and position: the read models must have passed it. */
  scope: string;
  position: string;
}

/** A friend request received, or accepted (from a `RelationshipChanged`), to notify `userId` of (Stoat's fr_received / fr_accepted). */
export interface FriendJob {
  kind: 'received' | 'accepted';
  /** Who is notified. */
  userId: string;
  /** Who sent the request, or who accepted it. */
  other: string;
  /** The event's id (the notification's identity), scope and position. */
  eventId: string;
  scope: string;
  position: string;
}

/**
 * A DM's or group's call started (a `VoiceParticipantJoined` that rings), or stopped ringing some of its
 * recipients (`CallRingStopped`, `stopped`): Stoat's dm_call with `ended` false or true.
 */
export interface CallJob {
  /** Who started it (who stopped the ringing). */
  caller: string;
  channelId: string;
  /** Who is rung (recorded in the event), or no longer rung. */
  ring: string[];
  stopped?: true;
  /** When the event was recorded (ISO 8601): the call's start, for phones. */
  at?: string;
  /** The event's id (the notification's identity), scope and position. */
  eventId: string;
  scope: string;
  position: string;
}

/** A user acked a channel (`ChannelAcked`): Stoat's ack consumer, a badge update to their APNs subscriptions. */
export interface BadgeJob {
  userId: string;
  /** The ack's event id (the notification's identity), scope and position. */
  eventId: string;
  scope: string;
  position: string;
}

/** One delivery to one session's subscription. */
export interface SendJob {
  userId: string;
  sessionId: string;
  /** The endpoint the fan-out saw; a session that moved to another one since is not sent this. */
  endpoint: string;
  messageId: string;
  /** The PushNotification JSON (Web Push). */
  payload: string;
  /** What a phone is sent (subscriptions with endpoint "fcm" or "apn"). */
  mobile?: MobileNotification;
}

/** What a send ended as. */
export type SendOutcome = 'sent' | 'gone' | 'unsubscribed';

/** Dependencies of the push worker. */
export interface PushWorkerDeps {
  config: Config;
  log: Logger;
  store: EventStore;
  readModels: ReadModels;
  executor: CommandExecutor;
  vapid: VapidDetails;
  /** The process's shared reader of the log, shared with the other followers (default: a subscription of its own). */
  reader?: SharedLogReader;
  /** Extra options of the outbound agents (tests: a CA for an HTTPS endpoint; also trusted for APNs). */
  agentOptions?: https.AgentOptions;
  /** The clock the FCM and APNs tokens are timed by (tests). */
  now?: () => number;
}

/** A running push worker. */
export interface PushWorker {
  /** Resolves once the log subscription delivered everything that existed when it started. */
  caughtUp: Promise<void>;
  /** The queue (tests and the bench look at its jobs). */
  queue: Queue;
  close(): Promise<void>;
}

/** Seconds a push service keeps an undelivered notification. */
const PUSH_TTL_SECONDS = 24 * 3600;


/**
 * Admits one send into a user's budget. KEYS: the user's sorted set (member = send job id, score = when it was
 * admitted). ARGV: job id, now (ms), window (ms), limit. Entries older than the window (a worker died before
 * releasing them) fall out. An id already admitted is admitted again (a repeated fan-out). → 1 admitted, 0 full.
 */
const ADMIT = `redis.call('zremrangebyscore', KEYS[1], '-inf', tonumber(ARGV[2]) - tonumber(ARGV[3]))
if redis.call('zscore', KEYS[1], ARGV[1]) then return 1 end
if redis.call('zcard', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('zadd', KEYS[1], ARGV[2], ARGV[1])
redis.call('pexpire', KEYS[1], ARGV[3])
return 1`;

/** The Redis key of a user's admitted sends. */
export function pushBudgetKey(redisPrefix: string, userId: string): string {
  return `${redisPrefix}push:pending:${userId}`;
}

/**
 * Whether the log follower makes a job of the event: a call that rings or stops ringing, a friend request
 * received or accepted, an ack (the APNs badge), a user's message that could push (`couldPush`). Everything
 * else costs it nothing.
 */
export function pushable(e: RecordedEvent): boolean {
  switch (e.type) {
    case 'VoiceParticipantJoined':
      return ((e.data as { ring?: string[] }).ring?.length ?? 0) > 0;
    case 'CallRingStopped':
      return true;
    case 'ChannelAcked':
      // An ack updates the user's APNs badge (Stoat's ack consumer).
      return e.stream.startsWith(UNREADS_STREAM);
    case 'RelationshipChanged': {
      if (!e.stream.startsWith(RELATIONS_STREAM)) return false;
      const d = e.data as { other: string; status: string };
      return d.status === 'Incoming' || (d.status === 'Friend' && e.metadata.actor === d.other);
    }
    case 'MessageSent': {
      const sent = e.data as { message: MessageObject; mentionedUsers?: string[] };
      if (sent.message.author === SYSTEM_AUTHOR) return false;
      // A private channel's messages are scoped by the channel itself, a server channel's by its server.
      return couldPush(sent.message, sent.mentionedUsers, e.metadata.scope === sent.message.channel);
    }
    default:
      return false;
  }
}

/** Posts an encrypted, signed push request; resolves with the push service's status (rejects with `OutboundRefused` where the policy forbids). */
export async function postPush(
  details: { endpoint: string; method: string; headers: Record<string, string | number>; body: Buffer | string | null },
  agents: { http: http.Agent; https: https.Agent },
  policy: Config['outbound'],
  timeoutMs: number,
): Promise<number> {
  const url = checkUrl(details.endpoint, policy);
  return new Promise((resolve, reject) => {
    const secure = url.protocol === 'https:';
    const options = { method: details.method, headers: details.headers as http.OutgoingHttpHeaders, timeout: timeoutMs };
    const onResponse = (res: http.IncomingMessage): void => {
      // The answer's body is not needed; it is drained (and never buffered) so the socket can be reused.
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    };
    const req = secure ? https.request(url, { ...options, agent: agents.https }, onResponse) : http.request(url, { ...options, agent: agents.http }, onResponse);
    req.on('timeout', () => req.destroy(new Error(`push service did not answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(details.body ?? undefined);
  });
}

/** Starts the push worker: the log subscription, the fan-out and the deliveries. */
export async function startPushWorker(deps: PushWorkerDeps): Promise<PushWorker> {
  const { config, log, store, readModels, executor, vapid } = deps;
  const push = config.push;
  const connection = bullConnection(config.redisUrl);
  const prefix = bullPrefix(config.redisPrefix, config.redisUrl);
  const redis = createRedis(config.redisUrl, { maxRetriesPerRequest: 3 });
  redis.on('error', () => {});
  const cpKey = `${config.redisPrefix}push:cp`;
  const agents = guardedAgents(config.outbound, { keepAlive: true, maxSockets: 64, ...deps.agentOptions });
  // The longest a send can live: every attempt timing out plus every backoff, with a margin.
  const budgetWindowMs = push.attempts * push.timeoutMs + push.retryDelayMs * 2 ** push.attempts + 60_000;
  const lockMs = push.timeoutMs + 5000;
  const fcm = push.fcm ? new FcmClient(push.fcm, push.timeoutMs, deps.now) : undefined;
  const ca = deps.agentOptions?.ca;
  const apns = push.apns ? new ApnsClient(push.apns, push.timeoutMs, ca ? { ca: ca as string | Buffer | Array<string | Buffer> } : {}, deps.now) : undefined;

  const queue = new Queue<MessageJob | SendJob | FriendJob | CallJob | BadgeJob>(PUSH_QUEUE, { connection, prefix });
  queue.on('error', (err) => log.warn({ err: err.message }, 'push queue error'));
  const untrack = trackQueue(PUSH_QUEUE, queue);
  const retry = {
    attempts: push.attempts,
    backoff: { type: 'exponential' as const, delay: push.retryDelayMs },
    // Kept by count, not for an hour of traffic: the log follower skips what the shared checkpoint `push:cp`
    // says is handled, so an id only has to outlive a crashed worker's replay of its last batch (FOLLOWER_JOBS_KEPT).
    ...FOLLOWER_JOBS_KEPT,
  };

  /** Queues a payload to every subscribed session of the user (within the user's budget); returns how many. */
  const toSessions = async (userId: string, notificationId: string, payload: string, mobile: MobileNotification, only?: string): Promise<number> => {
    let queued = 0;
    const account = await readModels.getJson<AccountState>(rm.account(userId));
    for (const [sessionId, session] of Object.entries(account?.sessions ?? {})) {
      if (!session.subscription) continue;
      if (only !== undefined && session.subscription.endpoint !== only) continue;
      // A phone's subscription is served only where its platform is configured (Stoat's pushd likewise).
      if ((session.subscription.endpoint === FCM_ENDPOINT && !fcm) || (session.subscription.endpoint === APN_ENDPOINT && !apns)) continue;
      // A session whose record is gone no longer authenticates (a suspension or ban ends sessions that way).
      if ((await readModels.getJson(rm.session(session.tokenHash))) === null) continue;
      const jobId = `s-${notificationId}-${sessionId}`;
      const admitted = await redis.eval(ADMIT, 1, pushBudgetKey(config.redisPrefix, userId), jobId, Date.now(), budgetWindowMs, push.userLimit);
      if (admitted !== 1) {
        log.warn({ user: userId, notification: notificationId }, 'push dropped: the user has PUSH_USER_LIMIT pushes pending');
        continue;
      }
      const phone = session.subscription.endpoint === FCM_ENDPOINT || session.subscription.endpoint === APN_ENDPOINT;
      const data: SendJob = { userId, sessionId, endpoint: session.subscription.endpoint, messageId: notificationId, payload, ...(phone ? { mobile } : {}) };
      await queue.add('send', data, { ...retry, jobId });
      queued++;
    }
    return queued;
  };

  const fanOut = async (job: Job<MessageJob>): Promise<number> => {
    const { message, mentionedUsers, scope, position } = job.data;
    await readModels.waitFor(scope, BigInt(position));
    const pch = await readModels.getJson<PrivateChannelState>(rm.privateChannel(message.channel));
    let targets = pushCandidates(message, mentionedUsers, pch ? recipientsOf(pch) : null);
    if (targets.length === 0) return 0;
    const online = await readModels.online(targets);
    targets = targets.filter((u) => !online.has(u));
    const mentioned = new Set(mentionedUsers ?? message.mentions ?? []);
    const where = { channelId: message.channel, serverId: pch ? null : scope };
    const allowed: string[] = [];
    for (const u of targets) {
      const stored = await readModels.hgetJson<[number, unknown]>(rm.userSettings(u), 'notifications');
      if (settingsAllow(parseNotificationSettings(stored?.[1]), where, mentioned.has(u))) allowed.push(u);
    }
    if (allowed.length === 0) return 0;
    const author = await readModels.getJson<PushAuthor>(rm.user(message.author));
    const web = pushNotificationOf(message, author, { app: config.appUrl, api: config.publicUrl, media: config.mediaPublicUrl });
    let place: MessagePlace;
    if (pch) place = pch.channel_type === 'Group' ? { type: 'Group', name: pch.name ?? '' } : { type: 'DirectMessage' };
    else place = { type: 'TextChannel', name: (await readModels.getJson<ChannelState>(rm.channel(message.channel)))?.name ?? '' };
    const mobile = mobileMessageNotification(web, message, place);
    const payload = JSON.stringify(web);
    let queued = 0;
    for (const userId of allowed) queued += await toSessions(userId, message._id, payload, mobile);
    return queued;
  };

  // Stoat's pushd sends friend requests and acceptances to every subscribed session (no online filter, no
  // notification setting), as `{"body": "<name> sent you a friend request"}` / `"… accepted your friend request"`.
  const friendFanOut = async (job: Job<FriendJob>): Promise<number> => {
    const { kind, userId, other, eventId, scope, position } = job.data;
    await readModels.waitFor(scope, BigInt(position));
    const profile = await readModels.getJson<{ username?: string; discriminator?: string; display_name?: string }>(rm.user(other));
    if (!profile) return 0;
    const name = profile.display_name ?? `${profile.username ?? 'Someone'}#${profile.discriminator ?? '0000'}`;
    const body = kind === 'received' ? `${name} sent you a friend request` : `${name} accepted your friend request`;
    return toSessions(userId, `fr-${eventId}`, JSON.stringify({ body }), { kind: 'friend', accepted: kind === 'accepted', userId: other, name });
  };

  // Stoat's pushd rings a DM's or group's recipients when a call starts, as `{"body": "<name> is calling you"}`
  // or `"… is calling your group, <group name>"`, to every subscribed session (a call is for now: online or
  // not); a recipient whose notification setting mutes the channel (or everything) is not rung. The payload's
  // `tag` is the channel, so that the push of a stopped ring ("<name> stopped calling you") replaces the
  // ringing notification (Stoat's web push repeats the ring text there; its mobile pushes say `ended`).
  const callFanOut = async (job: Job<CallJob>): Promise<number> => {
    const { caller, channelId, ring, eventId, scope, position, stopped, at } = job.data;
    await readModels.waitFor(scope, BigInt(position));
    const [pch, profile] = await Promise.all([
      readModels.getJson<PrivateChannelState>(rm.privateChannel(channelId)),
      readModels.getJson<{ username?: string; discriminator?: string; display_name?: string }>(rm.user(caller)),
    ]);
    if (!pch || !profile) return 0;
    const name = profile.display_name ?? `${profile.username ?? 'Someone'}#${profile.discriminator ?? '0000'}`;
    const verb = stopped ? 'stopped calling' : 'is calling';
    const body = pch.channel_type === 'Group' ? `${name} ${verb} your group, ${pch.name}` : `${name} ${verb} you`;
    // Only those still in the channel, never the caller.
    const members = new Set(recipientsOf(pch));
    let queued = 0;
    for (const userId of new Set(ring)) {
      if (userId === caller || !members.has(userId)) continue;
      const stored = await readModels.hgetJson<[number, unknown]>(rm.userSettings(userId), 'notifications');
      if (!settingsAllow(parseNotificationSettings(stored?.[1]), { channelId, serverId: null }, true)) continue;
      const mobile: MobileNotification = { kind: 'call', initiatorId: caller, channelId, startedAt: stopped ? '' : (at ?? new Date(job.timestamp).toISOString()), ended: stopped === true };
      queued += await toSessions(userId, `call-${eventId}`, JSON.stringify({ body, tag: channelId }), mobile);
    }
    return queued;
  };

  // The push service says the subscription (a browser's, or a phone's token) is no more: the session loses it.
  const removeGone = async (job: Job<SendJob>, userId: string, sessionId: string, endpoint: string): Promise<void> => {
    const stream = `account-${userId}`;
    await executor.execute({ actor: null, requestId: `push-${job.id ?? 'send'}`.slice(0, 64) }, [stream], async () => {
      const state = await readModels.getJson<AccountState>(rm.account(userId));
      return { writes: [{ stream, scope: userId, expected: state?.revision ?? -1, events: decidePushGone(state, sessionId, endpoint) }], result: undefined };
    });
    log.info({ user: userId, session: sessionId }, 'push subscription gone: removed');
  };

  /**
   * An ack (Stoat's pushd ack consumer): the user's APNs subscriptions are sent the new badge, their unread
   * mentions summed over channels. As in Stoat, nothing is sent when no mention is left unread, or when the user
   * has no APNs subscription.
   */
  const badgeFanOut = async (job: Job<BadgeJob>): Promise<number> => {
    const { userId, eventId, scope, position } = job.data;
    if (!apns) return 0;
    await readModels.waitFor(scope, BigInt(position));
    const count = await badgeCount(userId);
    if (!count) return 0;
    return toSessions(userId, `badge-${eventId}`, JSON.stringify({}), { kind: 'badge', count }, APN_ENDPOINT);
  };

  /** Stoat's APNs badge (`get_badge_count`): the user's unread mentions summed over channels; unset if unreadable. */
  const badgeCount = async (userId: string): Promise<number | undefined> => {
    try {
      return (await fetchUnreads(readModels, userId)).reduce((n, u) => n + (u.mentions?.length ?? 0), 0);
    } catch (err) {
      log.warn({ err, user: userId }, 'push: could not count unread mentions for the badge');
      return undefined;
    }
  };

  const send = async (job: Job<SendJob>): Promise<SendOutcome> => {
    const { userId, sessionId, endpoint, payload } = job.data;
    const account = await readModels.getJson<AccountState>(rm.account(userId));
    const sub = own(account?.sessions, sessionId)?.subscription;
    // Unsubscribed, logged out or moved to another endpoint since the fan-out: nothing to deliver.
    if (!sub || sub.endpoint !== endpoint) return 'unsubscribed';
    if (sub.endpoint === FCM_ENDPOINT || sub.endpoint === APN_ENDPOINT) {
      const n = job.data.mobile;
      if (!n) throw new UnrecoverableError('a phone subscription without a mobile notification');
      let outcome: MobileOutcome;
      if (sub.endpoint === FCM_ENDPOINT) {
        if (!fcm) throw new UnrecoverableError('FCM is not configured');
        outcome = await fcm.send(sub.auth, fcmMessage(n, CALL_RING_SECONDS));
      } else {
        if (!apns) throw new UnrecoverableError('APNs is not configured');
        outcome = await apns.send(sub.auth, apnsPayload(n, n.kind === 'badge' ? undefined : await badgeCount(userId)));
      }
      if (outcome.result === 'sent') return 'sent';
      if (outcome.result === 'gone') {
        await removeGone(job, userId, sessionId, endpoint);
        return 'gone';
      }
      const what = `${sub.endpoint === FCM_ENDPOINT ? 'FCM' : 'APNs'} answered ${outcome.status}${outcome.reason ? ` ${outcome.reason}` : ''}`;
      if (outcome.result === 'retry') throw new Error(what);
      throw new UnrecoverableError(what);
    }
    let status: number;
    try {
      const details = webpush.generateRequestDetails({ endpoint: sub.endpoint, keys: { p256dh: sub.p256dh, auth: sub.auth } }, payload, {
        vapidDetails: vapid,
        TTL: PUSH_TTL_SECONDS,
        contentEncoding: 'aes128gcm',
        urgency: 'high',
      });
      status = await postPush(details as Parameters<typeof postPush>[0], agents, config.outbound, push.timeoutMs);
    } catch (err) {
      if (err instanceof OutboundRefused) throw new UnrecoverableError(`push endpoint refused by the outbound policy: ${err.message}`);
      throw err;
    }
    if (status >= 200 && status < 300) return 'sent';
    if (status === 404 || status === 410) {
      await removeGone(job, userId, sessionId, endpoint);
      return 'gone';
    }
    if (status === 408 || status === 429 || status >= 500) throw new Error(`push service answered ${status}`);
    throw new UnrecoverableError(`push service refused the notification: ${status}`);
  };

  const processJob = async (job: Job<MessageJob | SendJob | FriendJob | CallJob | BadgeJob>): Promise<unknown> =>
    job.name === 'message'
      ? fanOut(job as Job<MessageJob>)
      : job.name === 'friend'
        ? friendFanOut(job as Job<FriendJob>)
        : job.name === 'call'
          ? callFanOut(job as Job<CallJob>)
          : job.name === 'badge'
            ? badgeFanOut(job as Job<BadgeJob>)
            : send(job as Job<SendJob>);
  const worker = new Worker<MessageJob | SendJob | FriendJob | CallJob | BadgeJob>(PUSH_QUEUE, timedJob(PUSH_QUEUE, processJob), {
    connection,
    prefix,
    concurrency: 16,
    lockDuration: lockMs,
    stalledInterval: lockMs,
    name: `${os.hostname()}:${process.pid}`,
  });
  const release = (job: Job<MessageJob | SendJob | FriendJob | CallJob | BadgeJob> | undefined): void => {
    if (job?.name !== 'send') return;
    const d = job.data as SendJob;
    void redis.zrem(pushBudgetKey(config.redisPrefix, d.userId), job.id ?? '').catch(() => {});
  };
  worker.on('error', (err) => log.warn({ err: err.message }, 'push worker error'));
  worker.on('completed', (job) => release(job));
  worker.on('failed', (job, err) => {
    // Only ids and the attempt: never the endpoint (it identifies a device) or the payload.
    log.warn({ job: job?.id, attempt: job?.attemptsMade, err: err.message }, 'push not delivered');
    if (job && (err instanceof UnrecoverableError || err.name === 'UnrecoverableError' || job.attemptsMade >= (job.opts.attempts ?? 1))) release(job);
  });

  // Checked against the log on every start (src/eventstore/rewind.ts): a restored or failed-over log is followed
  // from its recorded rewind, so no notification is sent twice.
  const sub = await followLog({
    store,
    redis,
    cpKey,
    by: 'push',
    log,
    ...(deps.reader ? { reader: deps.reader } : {}),
    wants: (e) => pushable(e),
    onEvents: async (events) => {
      const jobs: Array<{ name: string; data: MessageJob | FriendJob | CallJob | BadgeJob; opts: { jobId: string } & typeof retry }> = [];
      const badges = new Map<string, { name: string; data: BadgeJob; opts: { jobId: string } & typeof retry }>();
      for (const e of events) {
        if (e.type === 'VoiceParticipantJoined') {
          const d = e.data as { channel: string; user: string; ring?: string[] };
          if (d.ring && d.ring.length > 0) {
            const data: CallJob = { caller: d.user, channelId: d.channel, ring: d.ring, at: e.metadata.at, eventId: e.id, scope: e.metadata.scope, position: e.position.toString() };
            jobs.push({ name: 'call', data, opts: { ...retry, jobId: `c-${e.id}` } });
          }
          continue;
        }
        if (e.type === 'ChannelAcked' && e.stream.startsWith(UNREADS_STREAM)) {
          // One badge per user and batch: a server ack appends one ack per channel, the last one counts.
          const data: BadgeJob = { userId: e.stream.slice(UNREADS_STREAM.length), eventId: e.id, scope: e.metadata.scope, position: e.position.toString() };
          badges.set(data.userId, { name: 'badge', data, opts: { ...retry, jobId: `b-${e.id}` } });
          continue;
        }
        if (e.type === 'CallRingStopped') {
          const d = e.data as { channel: string; by: string; users: string[] };
          const data: CallJob = { caller: d.by, channelId: d.channel, ring: d.users, stopped: true, eventId: e.id, scope: e.metadata.scope, position: e.position.toString() };
          jobs.push({ name: 'call', data, opts: { ...retry, jobId: `c-${e.id}` } });
          continue;
        }
        if (e.type === 'RelationshipChanged' && e.stream.startsWith(RELATIONS_STREAM)) {
          // `userId` received a request (Incoming), or `other` accepted the request `userId` had sent: the
          // acceptance is the pair of Friend events its acceptor (the actor) appended; `userId` is told on its own stream.
          const d = e.data as { userId: string; other: string; status: string };
          const kind = d.status === 'Incoming' ? 'received' : d.status === 'Friend' && e.metadata.actor === d.other ? 'accepted' : undefined;
          if (kind) {
            const data: FriendJob = { kind, userId: d.userId, other: d.other, eventId: e.id, scope: e.metadata.scope, position: e.position.toString() };
            jobs.push({ name: 'friend', data, opts: { ...retry, jobId: `f-${e.id}` } });
          }
          continue;
        }
        if (e.type !== 'MessageSent' || !pushable(e)) continue;
        const sent = e.data as { message: MessageObject; mentionedUsers?: string[] };
        const data: MessageJob = { message: sent.message, scope: e.metadata.scope, position: e.position.toString() };
        if (sent.mentionedUsers) data.mentionedUsers = sent.mentionedUsers;
        jobs.push({ name: 'message', data, opts: { ...retry, jobId: `m-${sent.message._id}` } });
      }
      jobs.push(...badges.values());
      if (jobs.length > 0) await queue.addBulk(jobs);
    },
  });
  return {
    caughtUp: sub.caughtUp,
    queue: queue as Queue,
    async close() {
      await sub.close();
      untrack();
      await worker.close();
      await queue.close();
      // On a cluster BullMQ shares the connection it was given and leaves it open: it is ours to close.
      closeBullConnection(connection);
      agents.http.destroy();
      agents.https.destroy();
      apns?.close();
      redis.disconnect();
    },
  };
}
