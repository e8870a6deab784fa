/**
 * `history`: GET /channels/:id/messages?limit=100 (req/s, p50/p99 at 50 connections) in channels of 1k,
 * 100k and 1M messages, next to a bare koa GET of the same pre-serialised 100-message page in the same run.
 * Requests alternate between the newest page and a page `before` a random message of the channel, so
 * reads deep in the history are measured too. The channels are seeded straight into the event store (1.1M
 * MessageSent events in bulk appends) and the projector builds the read model from zero, as a rebuild
 * would. The 1M figure must stay within 20 % of the 1k figure: a page costs O(log n + page).
 * RATE_LIMITS=off: one reader on one channel would otherwise be measuring the channels bucket (15 / 10 s).
 */
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import { newId } from '../src/ids.ts';
import type { NewEvent, StreamWrite } from '../src/eventstore/port.ts';
import { median, repeat, type Bench, type BenchResult } from './lib.ts';
import { assertClean, call, dropPrefix, measure, setupServer, signupUser, startServer, waitServing, type Measured } from './http.ts';

/** Channel sizes measured. */
const SIZES = [
  { label: '1k', count: 1_000 },
  { label: '100k', count: 100_000 },
  { label: '1m', count: 1_000_000 },
] as const;

/** Appends `count` MessageSent events to the store in bulk; returns a sample of the ids (for `before` cursors). */
async function seed(store: SqliteEventStore, serverId: string, channelId: string, author: string, count: number, log: (m: string) => void): Promise<string[]> {
  // One millisecond apart, ending now (ids of later channels continue monotonically).
  const start = Date.now() - count;
  const at = new Date().toISOString();
  const sample: string[] = [];
  const every = Math.max(1, Math.floor(count / 1000));
  const BATCH = 5_000;
  for (let i = 0; i < count; i += BATCH) {
    const writes: StreamWrite[] = [];
    for (let k = i; k < Math.min(count, i + BATCH); k++) {
      const id = newId(start + k);
      if (k % every === 0) sample.push(id);
      const event: NewEvent = {
        id: randomUUID(),
        type: 'MessageSent',
        data: { message: { _id: id, nonce: id, channel: channelId, author, content: `Seeded message number ${k}, of a typical length for a chat line.` } },
        metadata: { actor: author, requestId: 'bench-seed', at, scope: serverId },
      };
      writes.push({ stream: `message-${id}`, expected: 'no_stream', events: [event] });
    }
    await store.appendMany(writes);
    if ((i / BATCH) % 40 === 0 && count > 100_000) log(`  seeded ${i + writes.length} / ${count}`);
  }
  return sample;
}

const bench: Bench = {
  name: 'history',
  description: 'GET …/messages?limit=100 in channels of 1k, 100k and 1M messages vs a bare koa GET of the same page',
  async run(ctx) {
    const dataDir = path.join(ctx.tmpDir, 'data');
    const env = { ROLES: 'api,projector', RATE_LIMITS: 'off', API_PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, REDIS_URL: ctx.redisUrl };
    const setupPrefix = `bench:history:${randomBytes(4).toString('hex')}:`;
    const prefix = `bench:history:${randomBytes(4).toString('hex')}:`;
    // 1. Accounts, a server and three channels through the API.
    let svc = await startServer('service', { ...env, REDIS_PREFIX: setupPrefix });
    const owner = await signupUser(svc.urls.apiUrl!);
    const { serverId, channels } = await setupServer(svc.urls.apiUrl!, owner, SIZES.length, []);
    await svc.stop();
    await dropPrefix(ctx.redisUrl, setupPrefix);

    // 2. 1.1M messages straight into the event store.
    const t0 = Date.now();
    const store = new SqliteEventStore(path.join(dataDir, 'events.sqlite'));
    const samples: string[][] = [];
    for (let i = 0; i < SIZES.length; i++) samples.push(await seed(store, serverId, channels[i]!, owner.userId, SIZES[i]!.count, ctx.log));
    await store.close();
    const seeded = SIZES.reduce((n, s) => n + s.count, 0);
    ctx.log(`seeded ${seeded} messages in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    // 3. The projector builds the read models from zero (a fresh prefix: rebuild mode, no client events).
    const t1 = Date.now();
    svc = await startServer('service', { ...env, REDIS_PREFIX: prefix });
    const bare = await startServer('bare');
    try {
      const api = svc.urls.apiUrl!;
      await waitServing(api, owner.token);
      ctx.log(`projected in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
      for (let i = 0; i < SIZES.length; i++) {
        const newest = await call(`${api}/channels/${channels[i]}/messages?limit=1`, 'GET', owner.token);
        if (newest.length !== 1) throw new Error(`channel ${SIZES[i]!.label} is empty after projection`);
      }
      const page = await call(`${api}/channels/${channels[0]}/messages?limit=100`, 'GET', owner.token);
      if (page.length !== 100) throw new Error(`a page has ${page.length} messages`);
      await call(`${bare.urls.url}/page`, 'PUT', undefined, page, 204);

      const reader = (i: number) => {
        let n = 0;
        const sample = samples[i]!;
        return () => {
          n++;
          const before = n % 2 === 0 ? `&before=${sample[(n * 7919) % sample.length]}` : '';
          return { path: `/channels/${channels[i]}/messages?limit=100${before}`, headers: { 'X-Session-Token': owner.token } };
        };
      };
      const duration = ctx.quick ? 3 : 5;
      await measure({ url: api, method: 'GET', next: reader(0), duration: 2 });
      await measure({ url: bare.urls.url!, method: 'GET', next: reader(0), duration: 1 });
      // Interleaved, so drift in the machine's load hits every size alike.
      const runs = await repeat(ctx.repeats, async () => {
        const sizes: Measured[] = [];
        for (let i = 0; i < SIZES.length; i++) sizes.push(assertClean(`history ${SIZES[i]!.label}`, await measure({ url: api, method: 'GET', next: reader(i), duration })));
        const ceiling = assertClean('bare GET', await measure({ url: bare.urls.url!, method: 'GET', next: reader(0), duration }));
        return { sizes, ceiling };
      });
      const ceiling = median(runs.map((r) => r.ceiling.rps));
      const results: BenchResult[] = SIZES.map((s, i) => {
        const rps = median(runs.map((r) => r.sizes[i]!.rps));
        return {
          name: `history-${s.label}`,
          figure: `100-message pages/s, ${s.label} messages, 50 connections`,
          median: rps,
          unit: 'req/s',
          p50: median(runs.map((r) => r.sizes[i]!.p50)),
          p99: median(runs.map((r) => r.sizes[i]!.p99)),
          ceiling,
          ceilingLabel: 'bare koa GET of the same page',
          ratio: rps / ceiling,
          ...(i === 0
            ? { notes: `RATE_LIMITS=off; newest page and pages before random messages alternate; ${seeded.toLocaleString('en-US')} messages seeded into the event store and projected from zero` }
            : {}),
        };
      });
      const big = results[results.length - 1]!;
      const small = results[0]!;
      results.push({
        name: 'history-1m-vs-1k',
        figure: 'pages/s at 1M messages ÷ at 1k',
        median: big.median,
        unit: 'req/s',
        p50: big.p50!,
        p99: big.p99!,
        ceiling: small.median,
        ceilingLabel: `the 1k channel (p50/p99 ${small.p50}/${small.p99} ms)`,
        ratio: big.median / small.median,
        notes: 'must stay ≥ 0.80 (within 20 %): a page costs O(log n + page), not O(channel size)',
      });
      ctx.log(`history: ${runs.map((r) => r.sizes.map((m) => Math.round(m.rps)).join('/')).join(', ')} req/s (1k/100k/1M); bare ${runs.map((r) => Math.round(r.ceiling.rps)).join(', ')}`);
      return results;
    } finally {
      await Promise.all([svc.stop(), bare.stop()]);
      await dropPrefix(ctx.redisUrl, prefix);
    }
  },
};
export default bench;
