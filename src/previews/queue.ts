/**
 * The link-preview queue: a send or an edit whose content has a URL (and whose sender holds SendEmbeds)
 * enqueues a BullMQ job and answers at once; the worker role fetches the previews
 * (`workers/previews/worker.ts`) and appends `MessageAppended`. A job only names the message: the worker reads
 * the content from the message's stream, so an edit's job and the send's job never disagree.
 */
import { Queue } from 'bullmq';
import type { Logger } from '../log.ts';
import { bullConnection, bullPrefix } from '../../workers/media/jobs.ts';
import { previewUrls } from './urls.ts';

/** The BullMQ queue of previews. */
export const PREVIEW_QUEUE = 'previews';
/** Name of every preview job. */
export const PREVIEW_JOB = 'embed';

/** What a preview job carries. */
export interface PreviewJob {
  messageId: string;
  channelId: string;
}

/** Where requests put preview jobs. */
export interface PreviewQueue {
  /** Enqueues previews of a message when its content has URLs; never throws (a failure is logged). */
  request(job: PreviewJob, content: string | undefined): Promise<void>;
  close(): Promise<void>;
}

/** The BullMQ-backed queue; `attempts` tries per job with exponential backoff. */
export function openPreviewQueue(redisUrl: string, redisPrefix: string, attempts: number, log: Logger): PreviewQueue {
  const queue = new Queue<PreviewJob>(PREVIEW_QUEUE, { connection: bullConnection(redisUrl), prefix: bullPrefix(redisPrefix, redisUrl) });
  queue.on('error', (err) => log.warn({ err: err.message }, 'preview queue error'));
  return {
    async request(job, content) {
      if (content === undefined || previewUrls(content).length === 0) return;
      try {
        await queue.add(PREVIEW_JOB, job, {
          attempts,
          backoff: { type: 'exponential', delay: 500 },
          removeOnComplete: true,
          removeOnFail: { age: 24 * 3600 },
        });
      } catch (err) {
        log.error({ err: (err as Error).message }, 'preview could not be queued');
      }
    },
    async close() {
      await queue.close();
    },
  };
}
