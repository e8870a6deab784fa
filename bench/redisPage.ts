/**
 * What reading a 100-message history page from Redis costs the API process, by itself: `node --import tsx
 * bench/redisPage.ts`. A channel of 1,000 messages of ~450 bytes is written under a key prefix of its own,
 * then 50 concurrent readers (the send and history benches' connection count) read 20,000 pages before random
 * messages each way, and the client's CPU per page (user + system, `process.cpuUsage`) is printed, twice:
 * - `records`: the history route's way since read-model layout 2, one ZREVRANGEBYLEX of a sorted set whose
 *   members are the messages (src/readmodel/records.ts), as buffers;
 * - `two`: the layout before, ZREVRANGEBYLEX for the ids of a sorted set of ids, then HMGET of the values as
 *   buffers;
 * - `lua`: one script doing both (the values handed back as they are), which moves work onto Redis;
 * - the pieces: one 40 KB value (GET), the HMGET alone, the ZREVRANGEBYLEX alone, a small GET.
 * Redis's own CPU per read (INFO cpu) is printed beside the client's.
 * Not part of `npm run bench` (it measures the Redis client, not the service).
 */
import { Redis } from 'ioredis';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { enableAutoPipelining: true });
const prefix = `bench:redisPage:${process.pid}:`;
const ids = `${prefix}{c}:ids`;
const messages = `${prefix}{c}:messages`;
const big = `${prefix}{c}:big`;
const small = `${prefix}{c}:small`;
const records = `${prefix}{c}:records`;
const all: string[] = [];
for (let i = 0; i < 1000; i++) {
  const id = `01K${String(i).padStart(23, '0')}`;
  all.push(id);
  const stored = { _id: id, channel: '01KCHANNEL0000000000000000', author: '01KAUTHOR00000000000000000', content: 'x'.repeat(300), revision: 0 };
  await redis.zadd(ids, 0, id);
  await redis.hset(messages, id, JSON.stringify(stored));
  await redis.zadd(records, 0, JSON.stringify(stored));
}
await redis.set(big, 'y'.repeat(40_000));
await redis.set(small, 'z');
redis.defineCommand('benchPage', {
  numberOfKeys: 2,
  lua: `local ids = redis.call('ZREVRANGEBYLEX', KEYS[1], ARGV[1], '-', 'LIMIT', 0, 100) return redis.call('HMGET', KEYS[2], unpack(ids))`,
});
const scripted = redis as unknown as { benchPageBuffer: (a: string, b: string, c: string) => Promise<Buffer[]> };
const first100 = all.slice(0, 100);
/** Redis's own CPU so far (s, user + system, from INFO cpu). */
const redisCpu = async () => {
  const info = await redis.info('cpu');
  return ['used_cpu_user', 'used_cpu_sys'].reduce((sum, k) => sum + Number(new RegExp(`^${k}:([0-9.]+)`, 'm').exec(info)?.[1] ?? 0), 0);
};

const variants: Record<string, (before: string) => Promise<unknown>> = {
  records: (before) => redis.zrevrangebylexBuffer(records, `({"_id":"${before.slice(1)}`, '-', 'LIMIT', 0, 100),
  two: async (before) => {
    const page = await redis.zrevrangebylex(ids, before, '-', 'LIMIT', 0, 100);
    return redis.hmgetBuffer(messages, ...page);
  },
  lua: (before) => scripted.benchPageBuffer(ids, messages, before),
  'GET 40 KB': () => redis.getBuffer(big),
  'HMGET 100': () => redis.hmgetBuffer(messages, ...first100),
  'ZREVRANGEBYLEX 100': (before) => redis.zrevrangebylex(ids, before, '-', 'LIMIT', 0, 100),
  'GET small': () => redis.get(small),
};

for (const round of [1, 2]) {
  for (const [name, read] of Object.entries(variants)) {
    const total = 20_000;
    let started = 0;
    const redis0 = await redisCpu();
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        // Pages before a message of the newest 900, so that every page has 100 messages.
        while (started < total) await read(`(${all[100 + ((++started * 7919) % 900)]}`);
      }),
    );
    const used = process.cpuUsage(cpu);
    const ms = performance.now() - t0;
    const redisUs = ((await redisCpu()) - redis0) * 1e6 / total;
    console.log(`round ${round}  ${name.padEnd(20)} ${((used.user + used.system) / total).toFixed(1).padStart(6)} µs client CPU per read  ${redisUs.toFixed(1).padStart(6)} µs Redis  ${Math.round((total / ms) * 1000).toLocaleString('en-US').padStart(8)} reads/s`);
  }
}
await redis.del(ids, messages, big, small, records);
redis.disconnect();
