/**
 * The media workers (role `worker`): one BullMQ Worker per tag queue, concurrency per tag from the
 * configuration. A job is thin glue around the pure pipeline: read the upload blob, `processUpload`, write
 * the processed blobs, append `FileUploaded` to `file-<id>` with expected revision `no_stream`.
 *
 * - Idempotent: a job whose stream already has its first event (a retry after a crash, or an upload the
 *   media server abandoned at its deadline) does no work; an append that meets such an event (a conflict)
 *   is the same outcome. So a file is never processed into two different events.
 * - A refusal (`MediaRejection`) is an `UnrecoverableError` (never retried) whose reason carries the 4xx
 *   body to the waiting request; anything else is retried (3 attempts), and a worker that dies mid-job
 *   loses its lock after `MEDIA_JOB_LOCK_MS`, when any worker's stalled-job check puts the job back.
 * - `MEDIA_TEST_DELAY_MS` (a test hook, 0 otherwise) sleeps before processing so tests can kill a worker
 *   mid-job or miss a deadline.
 */
import { timedJob } from '../../src/metrics/registry.ts';
import os from 'node:os';
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Config } from '../../src/config.ts';
import { toNewEvent } from '../../src/domain/events.ts';
import { fileStream } from '../../src/domain/file/events.ts';
import type { FileObject } from '../../src/domain/shared.ts';
import { WrongExpectedRevisionError, type EventStore } from '../../src/eventstore/port.ts';
import type { Logger } from '../../src/log.ts';
import type { BlobStore } from '../../src/media/blobs.ts';
import { closeBullConnection } from '../../src/redis.ts';
import { bullConnection, bullPrefix, encodeRejection, queueName, settledOutcome, type UploadJob, type UploadOutcome } from './jobs.ts';
import { MediaRejection, processUpload } from './pipeline.ts';
import { POLICIES, TAGS } from './policy.ts';

/** What the workers need. */
export interface MediaWorkerDeps {
  config: Config;
  log: Logger;
  store: EventStore;
  blobs: BlobStore;
}

/** Running media workers. */
export interface MediaWorkers {
  /** One worker per tag. */
  workers: Worker<UploadJob, UploadOutcome>[];
  /** Stops taking jobs and waits for the running ones. */
  close(): Promise<void>;
}

/** Processes one upload (the body of every job); exported for tests. */
export async function runUploadJob(deps: MediaWorkerDeps, job: UploadJob): Promise<UploadOutcome> {
  const { fileId, tag, filename, uploaderId } = job;
  const settled = await settledOutcome(deps.store, fileId);
  if (settled) return finish(deps, fileId, settled);
  if (deps.config.mediaTestDelayMs > 0) await new Promise((r) => setTimeout(r, deps.config.mediaTestDelayMs));

  const bytes = await deps.blobs.readIncoming(fileId);
  if (!bytes) {
    // Another run settled it meanwhile and removed the blob; or the blob is lost for good.
    const late = await settledOutcome(deps.store, fileId);
    if (late) return finish(deps, fileId, late);
    throw new UnrecoverableError(`upload blob of ${fileId} is missing`);
  }
  let processed;
  try {
    processed = await processUpload(bytes, filename, POLICIES[tag]);
  } catch (err) {
    if (!(err instanceof MediaRejection)) throw err;
    await deps.blobs.removeIncoming(fileId);
    deps.log.debug({ fileId, tag, reason: err.reason }, 'upload refused');
    throw new UnrecoverableError(encodeRejection(err.body));
  }
  await deps.blobs.writeProcessed(fileId, processed.original, processed.preview);

  const file: FileObject = {
    _id: fileId,
    tag,
    filename,
    metadata: processed.metadata,
    content_type: processed.contentType,
    size: processed.size,
  };
  const metadata = { actor: uploaderId, requestId: job.requestId, at: new Date().toISOString(), scope: uploaderId };
  let outcome: UploadOutcome;
  try {
    const r = await deps.store.append(fileStream(fileId), [toNewEvent({ type: 'FileUploaded', data: { file, uploaderId } }, metadata)], 'no_stream');
    outcome = { status: 'uploaded', position: r.position.toString() };
  } catch (err) {
    if (!(err instanceof WrongExpectedRevisionError)) throw err;
    outcome = (await settledOutcome(deps.store, fileId))!;
  }
  return finish(deps, fileId, outcome);
}

async function finish(deps: MediaWorkerDeps, fileId: string, outcome: UploadOutcome): Promise<UploadOutcome> {
  // An abandoned id is never served: its processed blobs (if this or an earlier run wrote them) go too.
  if (outcome.status === 'abandoned') await deps.blobs.removeProcessed(fileId);
  await deps.blobs.removeIncoming(fileId);
  return outcome;
}

/** Starts a worker on every tag's queue. */
export function startMediaWorkers(deps: MediaWorkerDeps): MediaWorkers {
  const { config, log } = deps;
  const connection = bullConnection(config.redisUrl);
  const prefix = bullPrefix(config.redisPrefix, config.redisUrl);
  const workers = TAGS.map((tag) => {
    const run = timedJob(queueName(tag), (job: Job<UploadJob>) => runUploadJob(deps, job.data));
    const worker = new Worker<UploadJob, UploadOutcome>(queueName(tag), run, {
      connection,
      prefix,
      concurrency: config.mediaConcurrency[tag] ?? config.mediaConcurrencyDefault,
      lockDuration: config.mediaJobLockMs,
      stalledInterval: config.mediaJobLockMs,
      maxStalledCount: 2,
      name: `${os.hostname()}:${process.pid}`,
    });
    worker.on('error', (err) => log.warn({ err: err.message, tag }, 'media worker error'));
    worker.on('failed', (job, err) => {
      if (!(err instanceof UnrecoverableError)) log.warn({ fileId: job?.id, tag, err: err.message }, 'media job failed');
    });
    return worker;
  });
  return {
    workers,
    async close() {
      await Promise.all(workers.map((w) => w.close()));
      closeBullConnection(connection);
    },
  };
}
