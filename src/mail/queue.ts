/**
 * The mail queue: requests enqueue a BullMQ job and answer at once (a send never blocks a request); the
 * worker role sends it over SMTP (`workers/mail/worker.ts`) and retries with exponential backoff while the
 * SMTP server is down. A job holds the address and a link until it is sent, then it is removed.
 */
import { Queue } from 'bullmq';
import type { Logger } from '../log.ts';
import { closeBullConnection } from '../redis.ts';
import { bullConnection, bullPrefix } from '../../workers/media/jobs.ts';
import type { Mail } from './templates.ts';

/** The BullMQ queue of mails. */
export const MAIL_QUEUE = 'mail';
/** Name of every mail job. */
export const MAIL_JOB = 'send';

/** How mail jobs retry. */
export interface MailRetry {
  attempts: number;
  delayMs: number;
}

/** Where requests put mails. */
export interface MailQueue {
  /** Enqueues a mail; never throws (a failure is logged: the request has already done its work). */
  send(mail: Mail): Promise<void>;
  close(): Promise<void>;
}

/** The BullMQ-backed queue. */
export function openMailQueue(redisUrl: string, redisPrefix: string, retry: MailRetry, log: Logger): MailQueue {
  const connection = bullConnection(redisUrl);
  const queue = new Queue<Mail>(MAIL_QUEUE, { connection, prefix: bullPrefix(redisPrefix, redisUrl) });
  queue.on('error', (err) => log.warn({ err: err.message }, 'mail queue error'));
  return {
    async send(mail) {
      try {
        await queue.add(MAIL_JOB, mail, {
          attempts: retry.attempts,
          backoff: { type: 'exponential', delay: retry.delayMs },
          removeOnComplete: true,
          // A mail that never went out is kept a day for the operator, then dropped (it holds an address).
          removeOnFail: { age: 24 * 3600 },
        });
      } catch (err) {
        log.error({ err: (err as Error).message }, 'mail could not be queued');
      }
    },
    async close() {
      await queue.close();
      closeBullConnection(connection);
    },
  };
}
