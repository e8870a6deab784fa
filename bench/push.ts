/**
 * `push`: Web Push deliveries per second through the push worker (BullMQ `send` jobs: read the session's
 * subscription, encrypt with aes128gcm, sign with VAPID, POST through the outbound policy's guarded agent,
 * job bookkeeping), against raw web-push in the same run: `generateRequestDetails` + the same POST to the
 * same loopback push service, as many in flight as the worker's concurrency. Both pay the encryption (an
 * ECDH key pair and agreement per message) and the ES256 signature, so the ratio is the cost of the queue and
 * the read of the subscription.
 */
import { createECDH, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Queue } from 'bullmq';
import webpush from 'web-push';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { guardedAgents, outboundPolicy } from '../src/outbound/policy.ts';
import { startService } from '../src/service.ts';
import { deletePrefix } from '../test/helpers/service.ts';
import { bullConnection, bullPrefix } from '../workers/media/jobs.ts';
import { postPush, PUSH_QUEUE, type SendJob } from '../workers/push/worker.ts';
import { call, signupUser, waitServing } from './http.ts';
import { median, repeat, type Bench } from './lib.ts';

/** Requests in flight for the raw ceiling: the worker's concurrency. */
const CONCURRENCY = 16;

const bench: Bench = {
  name: 'push',
  description: 'Web Push sends/s through the push worker vs raw web-push to the same loopback push service',
  async run(ctx) {
    let received = 0;
    const endpoint = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received++;
        res.writeHead(201).end();
      });
    });
    await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`;
    const prefix = `bench:push:${randomBytes(4).toString('hex')}:`;
    const dataDir = path.join(ctx.tmpDir, 'data');
    fs.mkdirSync(dataDir, { recursive: true });
    const config = loadConfig({
      ROLES: 'api,projector,worker',
      RATE_LIMITS: 'off',
      API_PORT: '0',
      MEDIA_PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      REDIS_URL: ctx.redisUrl,
      REDIS_PREFIX: prefix,
      LOG_LEVEL: 'silent',
      OUTBOUND_ALLOW_PRIVATE: '127.0.0.0/8',
      PUSH_USER_LIMIT: '10000',
    });
    const svc = await startService(config, { log: createLogger('silent') });
    const queue = new Queue(PUSH_QUEUE, { connection: bullConnection(ctx.redisUrl), prefix: bullPrefix(prefix) });
    try {
      const api = svc.apiUrl;
      while (!(await svc.readModels.serving())) await new Promise((r) => setTimeout(r, 50));
      const users = [];
      for (let i = 0; i < 20; i++) users.push(await signupUser(api));
      await waitServing(api, users[0]!.token);
      // Each user's session subscribes with keys of its own, as browsers' would be.
      const subs = users.map((u, i) => {
        const ecdh = createECDH('prime256v1');
        ecdh.generateKeys();
        return { user: u, endpoint: `${base}/s/${i}`, p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') };
      });
      for (const s of subs) await call(`${api}/push/subscribe`, 'POST', s.user.token, { endpoint: s.endpoint, p256dh: s.p256dh, auth: s.auth }, 204);
      const sessions = new Map<string, string>();
      for (const s of subs) sessions.set(s.user.userId, (await call(`${api}/auth/session/all`, 'GET', s.user.token))[0]._id);
      const payload = JSON.stringify({ author: 'bench', icon: `${api}/users/x/default_avatar`, body: 'x'.repeat(200), tag: 'c', timestamp: 0, url: `${api}/channel/c/m` });
      const n = ctx.quick ? 1000 : 3000;

      // The ceiling: raw web-push, the same POST, CONCURRENCY in flight.
      const agents = guardedAgents(outboundPolicy('127.0.0.0/8'), { keepAlive: true, maxSockets: 64 });
      const vapid = svc.deps.vapid!;
      const raw = async (count: number): Promise<number> => {
        let next = 0;
        const t0 = performance.now();
        await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
          while (next < count) {
            const s = subs[next++ % subs.length]!;
            const details = webpush.generateRequestDetails({ endpoint: s.endpoint, keys: { p256dh: s.p256dh, auth: s.auth } }, payload, { vapidDetails: vapid, TTL: 86400, contentEncoding: 'aes128gcm', urgency: 'high' });
            const status = await postPush(details as Parameters<typeof postPush>[0], agents, config.outbound, 10_000);
            if (status !== 201) throw new Error(`raw push answered ${status}`);
          }
        }));
        return count / ((performance.now() - t0) / 1000);
      };
      // The figure: `send` jobs added in bulk, timed until the push service received every one.
      let run = 0;
      const worker = async (count: number): Promise<number> => {
        run++;
        const jobs = Array.from({ length: count }, (_, i) => {
          const s = subs[i % subs.length]!;
          const data: SendJob = { userId: s.user.userId, sessionId: sessions.get(s.user.userId)!, endpoint: s.endpoint, messageId: `bench${run}x${i}`, payload };
          return { name: 'send', data, opts: { jobId: `s-bench${run}x${i}`, removeOnComplete: true, attempts: 1 } };
        });
        const start = received;
        const t0 = performance.now();
        for (let i = 0; i < jobs.length; i += 500) await queue.addBulk(jobs.slice(i, i + 500));
        while (received - start < count) await new Promise((r) => setTimeout(r, 5));
        return count / ((performance.now() - t0) / 1000);
      };
      await raw(200);
      await worker(200);
      const runs = await repeat(ctx.repeats, async () => ({ raw: await raw(n), worker: await worker(n) }));
      agents.http.destroy();
      agents.https.destroy();
      const figure = median(runs.map((r) => r.worker));
      const ceiling = median(runs.map((r) => r.raw));
      ctx.log(`worker: ${runs.map((r) => Math.round(r.worker)).join(', ')} sends/s; raw web-push: ${runs.map((r) => Math.round(r.raw)).join(', ')} sends/s`);
      return [
        {
          name: 'push',
          figure: `Web Push sends/s through the worker, ${n} per run`,
          median: figure,
          unit: 'sends/s',
          ceiling,
          ceilingLabel: `raw web-push generateRequestDetails + POST, ${CONCURRENCY} in flight`,
          ratio: figure / ceiling,
          notes: `20 subscribed sessions; aes128gcm + VAPID ES256 per push on both sides; worker concurrency ${CONCURRENCY}; the loopback push service answers 201 without decrypting`,
        },
      ];
    } finally {
      await queue.close();
      await svc.stop();
      await new Promise<void>((r) => endpoint.close(() => r()));
      await deletePrefix(ctx.redisUrl, prefix);
    }
  },
};
export default bench;
