/**
 * The preview worker (worker role, Stoat's January behind `process_embeds`): for each job, folds the
 * message's stream to its current content, fetches the previews of its URLs (through the per-URL cache) and
 * appends `MessageAppended` to the message's stream at the revision it read. Nothing is appended when the
 * message is gone, its content has no previewable URL, no URL gave a preview, or this content's previews are
 * already there (a job retried after its worker died after appending). A concurrent write to the stream
 * (an edit, a reaction) fails the append; the job is retried and decides again from the new state.
 */
import os from 'node:os';
import { Queue, Worker, type Job } from 'bullmq';
import { closeBullConnection, type RedisClient } from '../../src/redis.ts';
import type { Config } from '../../src/config.ts';
import { upcast } from '../../src/domain/events.ts';
import { messageStream, type GeneratedEmbedObject } from '../../src/domain/message/events.ts';
import { evolveMessage, type MessageState } from '../../src/domain/message/state.ts';
import { toNewEvent } from '../../src/domain/events.ts';
import type { SharedLogReader } from '../../src/eventstore/sharedReader.ts';
import type { EventStore } from '../../src/eventstore/port.ts';
import type { Logger } from '../../src/log.ts';
import { previewOf, type PreviewContext } from '../../src/previews/generate.ts';
import { PREVIEW_QUEUE, startPreviewProducer, type PreviewJob } from '../../src/previews/queue.ts';
import { MAX_PREVIEWED_URLS, previewUrls } from '../../src/previews/urls.ts';
import { bullConnection, bullPrefix } from '../media/jobs.ts';

/** A running preview worker. */
export interface PreviewWorker {
  /** Resolves once the producer has passed the log's head it found at start. */
  caughtUp: Promise<void>;
  /** The queue its producer adds to (tests count its jobs). */
  queue: Queue<PreviewJob>;
  close(): Promise<void>;
}

/** The message's state, the revision of its current content, and whether that content's previews are appended. */
async function currentContent(store: EventStore, messageId: string) {
  let state: MessageState | null = null;
  let contentRevision = -1;
  let appended = false;
  for (const recorded of await store.readStream(messageStream(messageId))) {
    const e = upcast(recorded);
    state = evolveMessage(state, e, e.revision);
    if (e.type === 'MessageSent' || (e.type === 'MessageEdited' && e.data.data.content !== undefined)) {
      contentRevision = e.revision;
      appended = false;
    }
    if (e.type === 'MessageAppended' && e.data.revision === contentRevision) appended = true;
  }
  return { state, contentRevision, appended };
}

/** Runs one job (exported for tests and the bench). */
export async function runPreviewJob(job: PreviewJob, deps: { store: EventStore; ctx: PreviewContext; requestId: string }): Promise<GeneratedEmbedObject[]> {
  const { state, contentRevision, appended } = await currentContent(deps.store, job.messageId);
  if (!state || appended || state.content === undefined) return [];
  const urls = previewUrls(state.content, MAX_PREVIEWED_URLS);
  if (urls.length === 0) return [];
  const found = await Promise.all(urls.map((u) => previewOf(u, deps.ctx)));
  const embeds = found.filter((e): e is GeneratedEmbedObject => e !== null);
  if (embeds.length === 0) return [];
  const scope = (await deps.store.readStream(messageStream(job.messageId), { maxCount: 1 }))[0]?.metadata.scope ?? job.channelId;
  const event = toNewEvent(
    { type: 'MessageAppended', data: { channel: state.channel, embeds, revision: contentRevision } },
    { actor: null, requestId: deps.requestId, at: new Date().toISOString(), scope },
  );
  await deps.store.append(messageStream(job.messageId), [event], state.revision);
  return embeds;
}

/** Starts the worker and the producer that turns the log's preview requests into its jobs. */
export async function startPreviewWorker(o: { config: Config; redis: RedisClient; store: EventStore; log: Logger; reader?: SharedLogReader }): Promise<PreviewWorker> {
  const ctx: PreviewContext = { policy: o.config.outbound, limits: o.config.previews, redis: o.redis, prefix: o.config.redisPrefix };
  const connection = bullConnection(o.config.redisUrl);
  const prefix = bullPrefix(o.config.redisPrefix, o.config.redisUrl);
  const lockMs = o.config.previews.jobLockMs;
  const worker = new Worker<PreviewJob>(
    PREVIEW_QUEUE,
    async (job: Job<PreviewJob>) => {
      await runPreviewJob(job.data, { store: o.store, ctx, requestId: `preview-${job.id ?? ''}` });
    },
    {
      connection,
      prefix,
      concurrency: o.config.previews.concurrency,
      // A worker that dies mid-job holds its lock until it expires; then the job is stalled and runs elsewhere.
      lockDuration: lockMs,
      stalledInterval: lockMs,
      name: `${os.hostname()}:${process.pid}`,
    },
  );
  worker.on('error', (err) => o.log.warn({ err: err.message }, 'preview worker error'));
  // Never the URLs: only the job and the attempt.
  worker.on('failed', (job, err) => o.log.warn({ job: job?.id, attempt: job?.attemptsMade, err: err.message }, 'previews not appended (will retry)'));
  const queue = new Queue<PreviewJob>(PREVIEW_QUEUE, { connection, prefix });
  queue.on('error', (err) => o.log.warn({ err: err.message }, 'preview queue error'));
  const producer = await startPreviewProducer({ store: o.store, redis: o.redis, redisPrefix: o.config.redisPrefix, queue, attempts: o.config.previews.attempts, log: o.log, ...(o.reader ? { reader: o.reader } : {}) });
  return {
    caughtUp: producer.caughtUp,
    queue,
    async close() {
      await producer.close();
      await worker.close();
      await queue.close();
      // On a cluster BullMQ shares the connection it was given and leaves it open: it is ours to close.
      closeBullConnection(connection);
    },
  };
}
