/**
 * A log that went back in time, as the followers that act outside the service see it (push, previews, the voice
 * enforcer). A restored backup or a promoted standby that lacked the last commits brings the log back to an
 * earlier head; the positions after it are then reused by new events. The read models rebuild (a new
 * generation, `projections/projector.ts`); a follower must not: it already delivered what it delivered. So:
 *
 * - A follower's checkpoint records the position, the id of the event there, and the id of the newest
 *   `LogRewound` record it has followed past (`FollowerCheckpoint`).
 * - On resume it checks that the log still holds that event there. If not, the log went back in time: it
 *   resumes after the head recorded by the newest `LogRewound` it has not followed past yet — everything up to
 *   that head was in the log before (handled already), everything after it is new.
 * - When no such record exists yet (a failover: nobody recorded it), the first follower that notices appends
 *   one with the head it found (expected revision on `log-rewinds`, so concurrent followers agree on one).
 *   `npm run restore` appends it itself, with the restored head, before any service starts.
 *
 * Events appended between a failover and the first follower's check (at most one health-check period while
 * the service runs) are taken as handled: a follower never repeats a delivery, at the price of perhaps missing
 * one around a failover.
 */
import { randomUUID } from 'node:crypto';
import type { EventStore, RecordedEvent, SubscribeOptions, Subscription } from './port.ts';
import { WrongExpectedRevisionError } from './port.ts';
import type { Logger } from '../log.ts';
import type { RedisClient } from '../redis.ts';

/** The log's own record of its rewinds (one event per rewind). */
export const REWIND_STREAM = 'log-rewinds';
/** Type of the events of `REWIND_STREAM`. */
export const REWIND_EVENT = 'LogRewound';

/** What a `LogRewound` event records. */
export interface LogRewoundData {
  /** The log's head (decimal position; '0' for an empty log) after the rewind: events up to it were in the log before. */
  head: string;
  /** Who noticed: `restore` (the restore command) or the follower's name. */
  by: string;
  /** The checkpoint that no longer held (decimal position), when a follower noticed. */
  checkpoint?: string;
  /** The event id that checkpoint recorded. */
  expected?: string;
}

/** A follower's checkpoint as stored: `<position>|<event id>|<rewind id>` (the last two may be empty). */
export interface FollowerCheckpoint {
  /** The last position handled. */
  position: bigint;
  /** Id of the event at `position` (absent in checkpoints written before ids were, and for a start at an empty head). */
  eventId?: string;
  /** Id of the newest `LogRewound` this follower resumed after (absent: none). */
  rewind?: string;
}

/** Encodes a follower checkpoint for Redis. */
export function encodeCheckpoint(cp: FollowerCheckpoint): string {
  return `${cp.position}|${cp.eventId ?? ''}|${cp.rewind ?? ''}`;
}

/** Decodes a follower checkpoint (a bare position, as written before ids were, is read as one without an id). */
export function decodeCheckpoint(raw: string): FollowerCheckpoint {
  const [p, id, rw] = raw.split('|');
  return { position: BigInt(p!), ...(id ? { eventId: id } : {}), ...(rw ? { rewind: rw } : {}) };
}

/** Keeps a follower's checkpoint at the furthest position given (several workers move it concurrently). */
const ADVANCE_CHECKPOINT = `
local c = redis.call('get', KEYS[1])
if (not c) or tonumber(string.match(c, '^%d+')) < tonumber(string.match(ARGV[1], '^%d+')) then redis.call('set', KEYS[1], ARGV[1]) end
return 1
`;

/** Replaces a follower's checkpoint after a rewind, if it is still the one found (ARGV[1]) when the rewind was noticed. */
const RESET_CHECKPOINT = `
if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('set', KEYS[1], ARGV[2]) end
return 1
`;

/** The newest `LogRewound` record, with its id and the revision of `REWIND_STREAM`. */
async function newestRewind(store: EventStore): Promise<{ id: string; revision: number; data: LogRewoundData } | undefined> {
  const [e] = await store.readStream(REWIND_STREAM, { direction: 'backwards', maxCount: 1 });
  return e ? { id: e.id, revision: e.revision, data: e.data as LogRewoundData } : undefined;
}

/** Appends a `LogRewound` record after the newest one the caller knows (`expected` revision); returns the newest record after it. */
export async function recordRewind(store: EventStore, data: LogRewoundData, expected: number): Promise<{ id: string; data: LogRewoundData }> {
  const id = randomUUID();
  try {
    await store.append(
      REWIND_STREAM,
      [{ id, type: REWIND_EVENT, data, metadata: { actor: null, requestId: `rewind-${id}`, at: new Date().toISOString(), scope: REWIND_STREAM } }],
      expected === -1 ? 'no_stream' : expected,
    );
    return { id, data };
  } catch (err) {
    // Another follower recorded this rewind first: follow its record.
    if (!(err instanceof WrongExpectedRevisionError)) throw err;
    const newest = await newestRewind(store);
    if (!newest) throw err;
    return { id: newest.id, data: newest.data };
  }
}

/** Where a follower resumes. */
export interface ResumePoint {
  /** Exclusive start position (undefined: the start of the log). */
  after: bigint | undefined;
  /** The checkpoint to store from now on (its position is `after`; changed only after a rewind). */
  checkpoint: FollowerCheckpoint | undefined;
  /** True when the log went back in time under this checkpoint. */
  rewound: boolean;
}

/**
 * Checks a follower's stored checkpoint against the log and says where to resume: after it when the log still
 * holds its event; after the recorded head of the rewind otherwise (recording the rewind first if nobody has).
 */
export async function resumePoint(store: EventStore, cp: FollowerCheckpoint | undefined, by: string): Promise<ResumePoint> {
  if (!cp || cp.position === 0n) return { after: undefined, checkpoint: cp, rewound: false };
  // A checkpoint without an id (written before ids were) holds while some event is at its position.
  if (await checkpointHolds(store, cp)) return { after: cp.position, checkpoint: cp, rewound: false };
  let newest = await newestRewind(store);
  if (!newest || newest.id === cp.rewind) {
    const head = (await store.headPosition()) ?? 0n;
    const data: LogRewoundData = { head: head.toString(), by, checkpoint: cp.position.toString(), ...(cp.eventId ? { expected: cp.eventId } : {}) };
    const r = await recordRewind(store, data, newest?.revision ?? -1);
    newest = { id: r.id, revision: -1, data: r.data };
  }
  const head = BigInt(newest.data.head);
  const eventId = head > 0n ? await store.eventIdAt(head) : undefined;
  return {
    after: head > 0n ? head : undefined,
    checkpoint: { position: head, ...(eventId ? { eventId } : {}), rewind: newest.id },
    rewound: true,
  };
}

/** Whether the log still holds what a follower's checkpoint points at. */
async function checkpointHolds(store: EventStore, cp: FollowerCheckpoint): Promise<boolean> {
  if (cp.position === 0n) return true;
  const found = await store.eventIdAt(cp.position);
  return cp.eventId === undefined ? found !== undefined : found === cp.eventId;
}

/** The checkpoint after a handled batch: its last event, and the newest rewind record it passed. */
export function checkpointAfter(prev: FollowerCheckpoint | undefined, events: readonly RecordedEvent[]): FollowerCheckpoint {
  const last = events[events.length - 1]!;
  let rewind = prev?.rewind;
  for (const e of events) if (e.stream === REWIND_STREAM && e.type === REWIND_EVENT) rewind = e.id;
  return { position: last.position, eventId: last.id, ...(rewind ? { rewind } : {}) };
}

/**
 * How a follower's BullMQ jobs are kept once done: the newest 1,000 completed (and failed) jobs, never by age.
 * A kept id dedupes only the adds the shared checkpoint cannot: a crashed process replays at most the one batch
 * (≤ 500 events) it had added but not yet checkpointed, and no job of that queue completes while its only worker
 * is down; a process that lags another skips what the checkpoint says is handled (`followLog`). Memory is then
 * a constant (1,000 jobs, about 1.5 MB) instead of an hour of traffic.
 */
export const FOLLOWER_JOBS_KEPT = { removeOnComplete: { count: 1000 }, removeOnFail: { age: 24 * 3600, count: 1000 } } as const;

/**
 * The last position another process of the follower handled, from the shared checkpoint `raw`, when it is of
 * the same stretch of the log as `mine` (no rewind between them); undefined otherwise (nothing is skipped).
 */
export function handledBefore(raw: string | null, mine: FollowerCheckpoint | undefined): bigint | undefined {
  if (raw === null) return undefined;
  const shared = decodeCheckpoint(raw);
  if ((shared.rewind ?? '') !== (mine?.rewind ?? '')) return undefined;
  return shared.position;
}

/** Options of `followLog`. */
export interface FollowOptions {
  store: EventStore;
  redis: RedisClient;
  /** Redis key of the checkpoint (shared by every worker process of this follower). */
  cpKey: string;
  /** The follower's name, for logs and the `LogRewound` records it appends. */
  by: string;
  log: Logger;
  /** Handles a batch; the checkpoint moves past it once the returned promise resolves. */
  onEvents(events: RecordedEvent[]): Promise<void>;
  /**
   * The events `onEvents` acts on (default: all). Given a `reader` that opens lazily (`SharedLogReader` with
   * `open`), it sees the event as the log holds it: personal fields and message content sealed. A batch with none of them costs no Redis command: it is not
   * handed over, and the checkpoint moves past it with the next batch that has some, or after `idleAdvanceMs`.
   */
  wants?(event: RecordedEvent): boolean;
  /** Longest the checkpoint stays behind batches that had nothing wanted (ms, default 500): what a restart replays for nothing. */
  idleAdvanceMs?: number;
  /** How often a running follower checks that the log still holds its last event (ms, default 5 000). */
  checkEveryMs?: number;
  /**
   * Where the events come from: the process's one reader of the log, shared with its other followers
   * (`SharedLogReader`), so that a batch is read and opened once however many follow it. Default: a
   * subscription of this follower's own to `store`.
   */
  reader?: { subscribe(options: SubscribeOptions): Subscription; open?(events: readonly RecordedEvent[]): Promise<RecordedEvent[]> };
}

/** A running follower. */
export interface Follower {
  /** Resolves once the first subscription has passed the head it found. */
  caughtUp: Promise<void>;
  close(): Promise<void>;
}

/**
 * Follows the log for a worker that acts outside the service: from its checkpoint (the head the first time, so
 * history is never acted on), checked against the log on every start and every `checkEveryMs` while running; a
 * log that went back in time is followed from the head its `LogRewound` record names, never replayed.
 */
export async function followLog(o: FollowOptions): Promise<Follower> {
  let resolveCaughtUp!: () => void;
  const caughtUp = new Promise<void>((r) => (resolveCaughtUp = r));
  let sub: Subscription | undefined;
  let mine: FollowerCheckpoint | undefined;
  let closed = false;
  let checking = false;
  let failed = false;
  let timer: NodeJS.Timeout | undefined;

  // The checkpoint of batches that had nothing wanted is written once per `idleAdvanceMs` (a trailing timer),
  // not once per batch: on a busy log most batches are only other work's events.
  const idleMs = o.idleAdvanceMs ?? 500;
  let written: FollowerCheckpoint | undefined;
  let idleTimer: NodeJS.Timeout | undefined;
  const advance = async (): Promise<void> => {
    if (idleTimer) clearTimeout(idleTimer);
    idleTimer = undefined;
    const cp = mine;
    if (!cp || cp === written) return;
    await o.redis.eval(ADVANCE_CHECKPOINT, 1, o.cpKey, encodeCheckpoint(cp));
    written = cp;
  };
  const advanceLater = (): void => {
    if (idleTimer || closed) return;
    idleTimer = setTimeout(() => {
      idleTimer = undefined;
      void advance().catch((err: unknown) => o.log.warn({ err, follower: o.by }, 'follower checkpoint not written (written with the next batch)'));
    }, idleMs);
    idleTimer.unref();
  };

  const start = async (): Promise<void> => {
    let raw = await o.redis.get(o.cpKey);
    if (raw === null) {
      // The first worker ever: start at the head, and remember it at once (a worker that stops before any event
      // arrives must not make the next one start at a later head and skip what came between).
      const head = (await o.store.headPosition()) ?? 0n;
      const eventId = head > 0n ? await o.store.eventIdAt(head) : undefined;
      await o.redis.set(o.cpKey, encodeCheckpoint({ position: head, ...(eventId ? { eventId } : {}) }), 'NX');
      raw = (await o.redis.get(o.cpKey)) ?? '0';
    }
    const r = await resumePoint(o.store, decodeCheckpoint(raw), o.by);
    if (r.rewound) {
      o.log.warn({ follower: o.by, checkpoint: raw, resumeAfter: r.after?.toString() ?? null }, 'the event log went back in time: following it from the head its rewind record names (events before it were handled already)');
      await o.redis.eval(RESET_CHECKPOINT, 1, o.cpKey, raw, encodeCheckpoint(r.checkpoint!));
    }
    mine = r.checkpoint;
    written = mine;
    if (closed) return;
    sub = (o.reader ?? o.store).subscribe({
      ...(r.after !== undefined ? { after: r.after } : {}),
      onCaughtUp: () => resolveCaughtUp(),
      onError: (err) => {
        // A batch that threw (Redis away, a queue refusing) ends the subscription: the next check starts it again
        // from the shared checkpoint, which moved only past batches that were handled (job ids dedupe the replay).
        failed = true;
        o.log.error({ err, follower: o.by }, 'log subscription failed: following again from the checkpoint at the next check');
      },
      onEvents: async (events) => {
        const wanted = o.wants ? events.filter((e) => o.wants!(e)) : events;
        if (wanted.length > 0) {
          // Several worker processes follow the same log with one shared checkpoint, which moves only once a batch
          // was handled: what another process already handled is skipped here, so a job id need not be kept for
          // long to dedupe a lagging process's adds (the jobs are kept by count, `FOLLOWER_JOBS_KEPT`).
          const handled = handledBefore(await o.redis.get(o.cpKey), mine);
          const fresh = handled === undefined ? wanted : wanted.filter((e) => e.position > handled);
          // A reader of the sealed log opens only what this follower acts on.
          if (fresh.length > 0) await o.onEvents(o.reader?.open ? await o.reader.open(fresh) : fresh);
        }
        mine = checkpointAfter(mine, events);
        if (wanted.length > 0) await advance();
        else advanceLater();
      },
    });
  };

  const check = async (): Promise<void> => {
    if (checking || closed || !mine) return;
    checking = true;
    try {
      if (failed) {
        failed = false;
        await sub?.close().catch(() => {});
        sub = undefined;
        if (!closed) await start();
        return;
      }
      if (await checkpointHolds(o.store, mine)) return;
      // The log went back in time under the running subscription (a failover): start over from the checkpoint.
      await sub?.close();
      sub = undefined;
      if (!closed) await start();
    } catch (err) {
      if (!sub) failed = true;
      o.log.warn({ err, follower: o.by }, 'follower check failed');
    } finally {
      checking = false;
    }
  };

  await start();
  timer = setInterval(() => void check(), o.checkEveryMs ?? 5000);
  timer.unref();
  return {
    caughtUp,
    async close() {
      closed = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      await sub?.close();
      // What the last batches passed is kept (best effort: a restart would replay them for nothing).
      await advance().catch(() => {});
    },
  };
}
