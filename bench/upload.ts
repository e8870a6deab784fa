/**
 * `upload`: uploads/s of a 1 MB JPEG through the whole pipeline — HTTP multipart into the media server →
 * BullMQ queue → worker (sharp) → `FileUploaded` appended → projected → `{id}` answered — next to raw sharp
 * doing the same work (`processUpload` on the same image, same concurrency) in the same run. The service runs
 * every role in this process, on the benchmark's own Redis prefix and data directory.
 */
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { startService } from '../src/service.ts';
import { processUpload } from '../workers/media/pipeline.ts';
import { POLICIES } from '../workers/media/policy.ts';
import { deletePrefix, waitServing } from '../test/helpers/service.ts';
import { median, percentile, repeat, type Bench } from './lib.ts';

const CONCURRENCY = 4;

/** A photo-like JPEG (gradients plus noise) of about `target` bytes. */
async function photo(target: number): Promise<Buffer> {
  let side = 900;
  for (let i = 0; i < 8; i++) {
    const raw = Buffer.alloc(side * side * 3);
    for (let p = 0; p < side * side; p++) {
      const x = p % side;
      const y = Math.floor(p / side);
      const n = (Math.imul(p, 2654435761) >>> 26) - 32;
      raw[p * 3] = Math.max(0, Math.min(255, ((x * 255) / side + n) | 0));
      raw[p * 3 + 1] = Math.max(0, Math.min(255, ((y * 255) / side + n) | 0));
      raw[p * 3 + 2] = Math.max(0, Math.min(255, (((x + y) * 127) / side + n) | 0));
    }
    const jpeg = await sharp(raw, { raw: { width: side, height: side, channels: 3 } }).jpeg({ quality: 92 }).toBuffer();
    if (Math.abs(jpeg.length - target) < target * 0.05) return jpeg;
    side = Math.round(side * Math.sqrt(target / jpeg.length));
  }
  throw new Error('could not make a JPEG of the wanted size');
}

/** Creates, logs in and onboards a user through the API; returns its session token. */
async function signup(apiUrl: string): Promise<string> {
  const post = async (path: string, body: unknown, token?: string) => {
    const res = await fetch(apiUrl + path, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'Content-Type': 'application/json', ...(token ? { 'X-Session-Token': token } : {}) },
    });
    if (!res.ok) throw new Error(`${path} answered ${res.status}`);
    return res.status === 204 ? undefined : ((await res.json()) as Record<string, string>);
  };
  const email = `bench.${randomBytes(4).toString('hex')}@example.test`;
  await post('/auth/account/create', { email, password: 'bench password' });
  const login = (await post('/auth/session/login', { email, password: 'bench password' }))!;
  await post('/onboard/complete', { username: 'benchuser' }, login.token);
  return login.token!;
}

/** Runs `total` tasks with `concurrency` in flight; returns tasks/s and each task's latency (ms). */
async function drive(total: number, concurrency: number, task: (i: number) => Promise<void>): Promise<{ rate: number; latencies: number[] }> {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        const started = performance.now();
        await task(i);
        latencies.push(performance.now() - started);
      }
    }),
  );
  return { rate: total / ((performance.now() - t0) / 1000), latencies };
}

const bench: Bench = {
  name: 'upload',
  description: `uploads/s of a 1 MB JPEG through HTTP → queue → worker → event → projection → answer vs processUpload on the same image (${CONCURRENCY} in flight)`,
  async run(ctx) {
    const total = ctx.quick ? 24 : 60;
    const image = await photo(1_000_000);
    const { width, height } = await sharp(image).metadata();
    ctx.log(`image: ${width}×${height} JPEG, ${image.length} bytes; ${total} uploads per run, ${CONCURRENCY} in flight`);

    const prefix = `bench:${randomBytes(4).toString('hex')}:`;
    const config = loadConfig({
      API_PORT: '0',
      MEDIA_PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: ctx.tmpDir,
      REDIS_URL: ctx.redisUrl,
      REDIS_PREFIX: prefix,
      LOG_LEVEL: 'silent',
      RATE_LIMITS: 'off',
      MEDIA_CONCURRENCY_DEFAULT: String(CONCURRENCY),
    });
    const service = await startService(config, { log: createLogger('silent') });
    try {
      await waitServing(service);
      const token = await signup(service.apiUrl);
      const uploadOnce = async () => {
        const form = new FormData();
        form.append('file', new Blob([image], { type: 'image/jpeg' }), 'photo.jpg');
        const res = await fetch(`${service.mediaUrl}/attachments`, { method: 'POST', body: form, headers: { 'X-Session-Token': token } });
        const body = (await res.json()) as { id?: string };
        if (res.status !== 200 || !body.id) throw new Error(`upload answered ${res.status} ${JSON.stringify(body)}`);
      };
      const rawOnce = async () => {
        await processUpload(image, 'photo.jpg', POLICIES.attachments);
      };
      // Warm up both paths (sharp's first decode, connections, JIT).
      await drive(CONCURRENCY, CONCURRENCY, uploadOnce);
      await drive(CONCURRENCY, CONCURRENCY, rawOnce);

      // Interleaved, so a change in the machine's load hits both figures alike.
      const latencies: number[] = [];
      const rawLatencies: number[] = [];
      const pipeline: number[] = [];
      const raw: number[] = [];
      await repeat(ctx.repeats, async () => {
        const p = await drive(total, CONCURRENCY, uploadOnce);
        latencies.push(...p.latencies);
        pipeline.push(p.rate);
        const r = await drive(total, CONCURRENCY, rawOnce);
        rawLatencies.push(...r.latencies);
        raw.push(r.rate);
      });
      ctx.log(`raw processUpload latency p50 ${percentile(rawLatencies, 50).toFixed(0)} ms, p99 ${percentile(rawLatencies, 99).toFixed(0)} ms`);
      return [
        {
          name: 'upload-1mb-jpeg',
          figure: `uploads/s, 1 MB JPEG, ${CONCURRENCY} in flight`,
          median: median(pipeline),
          unit: '/s',
          p50: percentile(latencies, 50),
          p99: percentile(latencies, 99),
          ceiling: median(raw),
          ceilingLabel: 'processUpload on the same image',
          ratio: median(pipeline) / median(raw),
          notes: `whole pipeline (multipart HTTP, BullMQ, worker, SQLite append, projection, answer) vs the sharp work alone; image ${width}×${height}, ${image.length} bytes`,
        },
      ];
    } finally {
      await service.stop();
      await deletePrefix(ctx.redisUrl, prefix);
    }
  },
};
export default bench;
