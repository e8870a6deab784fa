/**
 * The mail worker (worker role): sends each queued mail over SMTP with nodemailer. A failed send throws, so
 * BullMQ retries it with the queue's backoff while the SMTP server is down. No business rules here.
 */
import os from 'node:os';
import { Worker, type Job } from 'bullmq';
import nodemailer from 'nodemailer';
import type { Logger } from '../../src/log.ts';
import { MAIL_QUEUE } from '../../src/mail/queue.ts';
import type { Mail } from '../../src/mail/templates.ts';
import { closeBullConnection } from '../../src/redis.ts';
import { bullConnection, bullPrefix } from '../media/jobs.ts';

/** A running mail worker. */
export interface MailWorker {
  close(): Promise<void>;
}

/** Starts the worker for SMTP_URL, sending as EMAIL_FROM. */
export function startMailWorker(o: { redisUrl: string; redisPrefix: string; smtpUrl: string; from: string; log: Logger }): MailWorker {
  const transport = nodemailer.createTransport(o.smtpUrl);
  const connection = bullConnection(o.redisUrl);
  const worker = new Worker<Mail>(
    MAIL_QUEUE,
    async (job: Job<Mail>) => {
      const m = job.data;
      await transport.sendMail({ from: o.from, to: m.to, subject: m.subject, text: m.text, html: m.html });
    },
    { connection, prefix: bullPrefix(o.redisPrefix, o.redisUrl), concurrency: 4, name: `${os.hostname()}:${process.pid}` },
  );
  worker.on('error', (err) => o.log.warn({ err: err.message }, 'mail worker error'));
  // Never the address or the link: only the job id and the attempt.
  worker.on('failed', (job, err) => o.log.warn({ job: job?.id, attempt: job?.attemptsMade, err: err.message }, 'mail not sent (will retry)'));
  return {
    async close() {
      await worker.close();
      closeBullConnection(connection);
      transport.close();
    },
  };
}
