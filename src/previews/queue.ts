/**
 * Where preview jobs come from: the event log, never a request. A `MessageSent` or `MessageEdited` whose
 * event says `previews: true` (its content has links and the sender held SendEmbeds, decided with the
 * message) becomes one BullMQ job, added by the worker role's subscription to the log (checkpoint
 * `previews:cp` in Redis, shared by every worker process; the head the first time, so history — and a rebuild
 * of the read models, which does not touch this checkpoint — is never previewed). The job id names the
 * message and the revision of its content: a replay after a crash adds it once (the newest 1,000 jobs are
 * kept), and a worker process that lags another skips what the shared checkpoint says is handled. A job
 * only names the message: the worker reads the content from the message's stream
 * (`workers/previews/worker.ts`), so an edit's job and the send's job never disagree.
 */
import { Queue } from 'bullmq';
import type { EventStore, RecordedEvent, SubscribeOptions, Subscription } from '../eventstore/port.ts';
import { FOLLOWER_JOBS_KEPT, followLog } from '../eventstore/rewind.ts';
import type { Logger } from '../log.ts';
import type { RedisClient } from '../redis.ts';
import { MESSAGE_STREAM } from '../domain/message/events.ts';

/** The BullMQ queue of previews. */
export const PREVIEW_QUEUE = 'previews';
/** Name of every preview job. */
export const PREVIEW_JOB = 'embed';

/** What a preview job carries. */
export interface PreviewJob {
  messageId: string;
  channelId: string;
}

/** The preview job an event asks for (with its id), or undefined. */
export function previewJobOf(e: RecordedEvent): { id: string; job: PreviewJob } | undefined {
  if ((e.type !== 'MessageSent' && e.type !== 'MessageEdited') || !e.stream.startsWith(MESSAGE_STREAM)) return undefined;
  const data = e.data as { previews?: boolean; channel?: string; message?: { channel: string } };
  if (data.previews !== true) return undefined;
  const messageId = e.stream.slice(MESSAGE_STREAM.length);
  const channelId = e.type === 'MessageSent' ? data.message!.channel : data.channel!;
  return { id: `p-${messageId}-${e.revision}`, job: { messageId, channelId } };
}

/** The producer: a subscription from `previews:cp` that adds a job per event asking for previews. */
export interface PreviewProducer {
  /** Resolves once the subscription has passed the head it found. */
  caughtUp: Promise<void>;
  close(): Promise<void>;
}

/** Starts the producer on `queue`; `attempts` tries per job with exponential backoff. */
export async function startPreviewProducer(o: {
  store: EventStore;
  redis: RedisClient;
  redisPrefix: string;
  queue: Queue<PreviewJob>;
  attempts: number;
  log: Logger;
  /** The process's shared reader of the log (`SharedLogReader`); default a subscription of its own. */
  reader?: { subscribe(options: SubscribeOptions): Subscription };
}): Promise<PreviewProducer> {
  const cpKey = `${o.redisPrefix}previews:cp`;
  const opts = {
    attempts: o.attempts,
    backoff: { type: 'exponential', delay: 500 },
    // Kept by count: a second producer skips what the shared checkpoint says is handled (FOLLOWER_JOBS_KEPT).
    ...FOLLOWER_JOBS_KEPT,
  };
  // The checkpoint is checked against the log (src/eventstore/rewind.ts): after a restore or a failover the
  // producer follows the log from its recorded rewind, never previewing a message twice.
  const follower = await followLog({
    store: o.store,
    redis: o.redis,
    cpKey,
    by: 'previews',
    log: o.log,
    ...(o.reader ? { reader: o.reader } : {}),
    wants: (e) => previewJobOf(e) !== undefined,
    onEvents: async (events) => {
      const jobs = [];
      for (const e of events) {
        const p = previewJobOf(e);
        if (p) jobs.push({ name: PREVIEW_JOB, data: p.job, opts: { ...opts, jobId: p.id } });
      }
      if (jobs.length > 0) await o.queue.addBulk(jobs);
    },
  });
  return {
    caughtUp: follower.caughtUp,
    close: () => follower.close(),
  };
}
