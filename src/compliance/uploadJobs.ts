/**
 * The finished upload jobs of the media queues (BullMQ keeps a completed job an hour: `removeOnComplete`), whose
 * data names the file: the retention sweep removes the job of each file it purged, so the name leaves Redis
 * with the bytes. One queue handle per tag, opened on first use.
 */
import { Queue } from 'bullmq';
import { bullConnection, bullPrefix, queueName } from '../../workers/media/jobs.ts';
import type { Tag } from '../../workers/media/policy.ts';
import { closeBullConnection } from '../redis.ts';

/** Removes finished upload jobs by file id. */
export interface UploadJobs {
  /** Removes the job of `fileId` in the queue of `tag` (nothing when there is none; a job still running stays). */
  remove(tag: Tag, fileId: string): Promise<void>;
  close(): Promise<void>;
}

/** The upload jobs of a service's Redis and prefix. */
export function uploadJobs(redisUrl: string, redisPrefix: string): UploadJobs {
  const queues = new Map<Tag, Queue>();
  let connection: ReturnType<typeof bullConnection> | undefined;
  return {
    async remove(tag, fileId) {
      let q = queues.get(tag);
      if (!q) {
        connection ??= bullConnection(redisUrl);
        q = new Queue(queueName(tag), { connection, prefix: bullPrefix(redisPrefix, redisUrl) });
        queues.set(tag, q);
      }
      await q.remove(fileId);
    },
    async close() {
      for (const q of queues.values()) await q.close();
      if (connection) closeBullConnection(connection);
    },
  };
}
