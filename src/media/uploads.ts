/**
 * The media server's side of the upload queues: puts an upload on its tag's queue (job id = file id) and
 * waits for the outcome within the request's deadline (`UPLOAD_DEADLINE_MS`, counted from the moment the
 * upload was received, so a slow client does not eat into processing time).
 *
 * - Stored → the request waits until the uploader's projector has applied `FileUploaded`, then answers.
 * - Refused by the pipeline → the 4xx body carried by the job's failure; the failed job is then removed.
 * - Deadline missed → `FileUploadAbandoned` is appended to `file-<id>` with `no_stream`. If that append
 *   conflicts, the worker's `FileUploaded` landed first and the request answers the id after all;
 *   otherwise 503 and the id (which the client never received) can never be used: the worker's later
 *   append conflicts and it discards its blobs.
 * - The client went away before the answer → abandoned the same way: nobody will ever learn that id.
 */
import { Queue, QueueEvents } from 'bullmq';
import type { Config } from '../config.ts';
import { toNewEvent } from '../domain/events.ts';
import { fileStream } from '../domain/file/events.ts';
import { AppError, unavailable } from '../errors.ts';
import { WrongExpectedRevisionError, type EventStore } from '../eventstore/port.ts';
import type { Logger } from '../log.ts';
import type { ReadModels } from '../readmodel/reader.ts';
import type { BlobStore } from './blobs.ts';
import { closeBullConnection } from '../redis.ts';
import { bullConnection, bullPrefix, decodeRejection, JOB_NAME, queueName, settledOutcome, type UploadJob, type UploadOutcome } from '../../workers/media/jobs.ts';
import { TAGS, type Tag } from '../../workers/media/policy.ts';

/** What the upload queues need. */
export interface UploadQueuesOptions {
  config: Config;
  log: Logger;
  store: EventStore;
  readModels: ReadModels;
  /** Where the received upload waits for its job. */
  blobs: BlobStore;
}

const DEADLINE = Symbol('deadline');
const GONE = Symbol('client gone');

/** Producer side of the media queues, one queue and one event listener per tag. */
export class UploadQueues {
  private readonly queues = new Map<Tag, Queue<UploadJob, UploadOutcome>>();
  private readonly events = new Map<Tag, QueueEvents>();
  private connection: ReturnType<typeof bullConnection> | undefined;

  constructor(private readonly o: UploadQueuesOptions) {}

  /** The queue of each tag (for the queue-depth metric). */
  queuesByTag(): Map<Tag, Queue<UploadJob, UploadOutcome>> {
    return this.queues;
  }

  /** Opens the queues and waits until their event listeners are ready (none of a job's events is missed). */
  async start(): Promise<void> {
    const connection = bullConnection(this.o.config.redisUrl);
    this.connection = connection;
    const prefix = bullPrefix(this.o.config.redisPrefix, this.o.config.redisUrl);
    for (const tag of TAGS) {
      const queue = new Queue<UploadJob, UploadOutcome>(queueName(tag), { connection, prefix });
      const events = new QueueEvents(queueName(tag), { connection, prefix });
      queue.on('error', (err) => this.o.log.warn({ err: err.message, tag }, 'media queue error'));
      events.on('error', (err) => this.o.log.warn({ err: err.message, tag }, 'media queue events error'));
      this.queues.set(tag, queue);
      this.events.set(tag, events);
    }
    await Promise.all([...this.queues.values(), ...this.events.values()].map((q) => q.waitUntilReady()));
  }

  /**
   * Processes one received upload (its blob in `incoming/`); resolves once the file is stored and projected
   * (its id usable by the uploader). Throws the pipeline's 4xx, 503 on a missed deadline, 500 when the job
   * failed for good. `clientGone` aborts when the client will never read the answer.
   */
  async process(job: UploadJob, clientGone?: AbortSignal): Promise<void> {
    const queue = this.queues.get(job.tag)!;
    const events = this.events.get(job.tag)!;
    const deadlineMs = this.o.config.uploadDeadlineMs;
    let added;
    try {
      added = await queue.add(JOB_NAME, job, {
        jobId: job.fileId,
        attempts: 3,
        backoff: { type: 'exponential', delay: 250 },
        // Kept a while: a waiter that subscribes after the job finished still reads its state.
        removeOnComplete: { age: 3600, count: 10_000 },
        removeOnFail: { age: 24 * 3600, count: 10_000 },
      });
    } catch (err) {
      // Not queued: nothing will ever pick the blob up.
      await this.o.blobs.removeIncoming(job.fileId).catch(() => {});
      throw err;
    }
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<typeof DEADLINE>((resolve) => (timer = setTimeout(() => resolve(DEADLINE), deadlineMs)));
    let onGone: (() => void) | undefined;
    const gone = new Promise<typeof GONE>((resolve) => {
      onGone = () => resolve(GONE);
      if (clientGone?.aborted) onGone();
      else clientGone?.addEventListener('abort', onGone, { once: true });
    });
    // The listener outlives the deadline by a little so it is always cleaned up by BullMQ itself.
    const finished = added.waitUntilFinished(events, deadlineMs + 5_000) as Promise<UploadOutcome>;
    finished.catch(() => {});
    let outcome: UploadOutcome | typeof DEADLINE | typeof GONE;
    try {
      outcome = await Promise.race([finished, deadline, gone]);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      const rejection = decodeRejection(reason);
      if (rejection) {
        // A refused upload leaves nothing behind: the worker removed its blob, nothing was appended, and its
        // failed job (kept for waiters that subscribe late) goes once its waiter has read the refusal.
        await queue.remove(job.fileId).catch(() => {});
        throw new AppError(rejection);
      }
      this.o.log.error({ fileId: job.fileId, tag: job.tag, reason }, 'media job failed for good');
      // Its attempts are spent: nothing will read the blob again.
      await this.o.blobs.removeIncoming(job.fileId).catch(() => {});
      throw new AppError({ type: 'InternalError' });
    } finally {
      clearTimeout(timer);
      if (onGone) clientGone?.removeEventListener('abort', onGone);
    }
    if (outcome === DEADLINE || outcome === GONE) outcome = await this.abandon(job, outcome === GONE ? 'the client went away' : 'its deadline');
    if (outcome.status === 'abandoned') throw unavailable();
    await this.o.readModels.waitFor(job.uploaderId, BigInt(outcome.position));
  }

  /** Abandons an upload unless its `FileUploaded` is already in the log; returns what decided it. */
  async abandon(job: UploadJob, why = 'its deadline'): Promise<UploadOutcome> {
    const metadata = { actor: job.uploaderId, requestId: job.requestId, at: new Date().toISOString(), scope: job.uploaderId };
    const event = toNewEvent({ type: 'FileUploadAbandoned', data: { fileId: job.fileId, uploaderId: job.uploaderId, tag: job.tag } }, metadata);
    try {
      await this.o.store.append(fileStream(job.fileId), [event], 'no_stream');
      this.o.log.warn({ fileId: job.fileId, tag: job.tag, why }, 'upload abandoned');
      return { status: 'abandoned' };
    } catch (err) {
      if (!(err instanceof WrongExpectedRevisionError)) throw err;
      return (await settledOutcome(this.o.store, job.fileId))!;
    }
  }

  /** Closes the queues and listeners. */
  async close(): Promise<void> {
    await Promise.all([...this.events.values(), ...this.queues.values()].map((q) => q.close().catch(() => {})));
    if (this.connection) closeBullConnection(this.connection);
  }
}
