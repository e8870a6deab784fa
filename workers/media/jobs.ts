/**
 * The contract between the media server and the media workers: queue names (one BullMQ queue per tag, under
 * `REDIS_PREFIX` through BullMQ's `prefix`), the job's data (job id = file id), its outcome, how a refusal
 * travels through a job's failure, and how either side learns that an upload is already settled (the first
 * event of `file-<id>`).
 */
import type { RedisOptions } from 'bullmq';
import type { Cluster } from 'ioredis';
import { bullConnection as redisBullConnection, isClusterUrl } from '../../src/redis.ts';
import { fileStream } from '../../src/domain/file/events.ts';
import type { ErrorBody } from '../../src/errors.ts';
import type { EventStore } from '../../src/eventstore/port.ts';
import type { MediaRejectionBody } from './pipeline.ts';
import type { Tag } from './policy.ts';

/** Name of every media job (the queue says which tag). */
export const JOB_NAME = 'upload';

/** The BullMQ queue of a tag. */
export function queueName(tag: Tag): string {
  return `media-${tag}`;
}

/**
 * BullMQ's key prefix for a service: its keys are `<REDIS_PREFIX>bull:<queue>:…`; on a Redis Cluster
 * (`redisUrl` names one) `<REDIS_PREFIX>{bull}:<queue>:…`, the hash tag BullMQ's documentation asks for.
 */
export function bullPrefix(redisPrefix: string, redisUrl?: string): string {
  return redisUrl !== undefined && isClusterUrl(redisUrl) ? `${redisPrefix}{bull}` : `${redisPrefix}bull`;
}

/**
 * BullMQ's connection from the configuration's Redis: ioredis options for one Redis (BullMQ opens its own
 * connections from them), or a cluster connection that BullMQ shares (close it with `closeBullConnection`).
 */
export function bullConnection(redisUrl: string): RedisOptions | Cluster {
  return redisBullConnection(redisUrl);
}

/** What a media job carries. */
export interface UploadJob {
  /** The new file's id (also the job id and the stream `file-<id>`). */
  fileId: string;
  /** Its tag (also the queue). */
  tag: Tag;
  /** The client's filename, cleaned. */
  filename: string;
  /** User id of the uploader. */
  uploaderId: string;
  /** The upload request's id, for the event metadata. */
  requestId: string;
}

/** How an upload ended: stored (and where its event is in the log), or abandoned after its deadline. */
export type UploadOutcome = { status: 'uploaded'; position: string } | { status: 'abandoned' };

const REJECTION = 'MediaRejection ';

/** The failure reason of a job refused by the pipeline: carries the 4xx body to the media server. */
export function encodeRejection(body: MediaRejectionBody): string {
  return REJECTION + JSON.stringify(body);
}

/** The 4xx body in a job's failure reason, or undefined for any other failure. */
export function decodeRejection(reason: string): MediaRejectionBody | undefined {
  if (!reason.startsWith(REJECTION)) return undefined;
  try {
    const body = JSON.parse(reason.slice(REJECTION.length)) as ErrorBody;
    if (body.type === 'FileTooSmall' || body.type === 'FileTypeNotAllowed') return { type: body.type };
    if (body.type === 'FileTooLarge' && typeof body.max === 'number') return { type: body.type, max: body.max };
  } catch {
    // Not ours after all.
  }
  return undefined;
}

/** The outcome decided by the first event of `file-<id>`, or null while the upload is unsettled. */
export async function settledOutcome(store: EventStore, fileId: string): Promise<UploadOutcome | null> {
  const [first] = await store.readStream(fileStream(fileId), { maxCount: 1 });
  if (!first) return null;
  return first.type === 'FileUploaded' ? { status: 'uploaded', position: first.position.toString() } : { status: 'abandoned' };
}
