/**
 * Redis loss under load, against a private redis-server of this test's own (never a shared one):
 * Redis is flushed, and separately restarted empty, while clients keep writing and reading. The service
 * must answer 503 with a JSON error while it cannot serve (never a 500), rebuild its read models by
 * itself, lose no acknowledged write, and end with the same read models as a rebuild from zero.
 */
import t from 'tap';
import { Redis } from 'ioredis';
import { startPrivateRedis } from '../../scripts/redis.mjs';
import { createLogger } from '../../src/log.ts';
import { loadConfig } from '../../src/config.ts';
import { startService } from '../../src/service.ts';
import { rebuild } from '../../projections/rebuild.ts';
import { PROJECTIONS } from '../../projections/index.ts';
import { controlKeys, generationPrefix } from '../../src/readmodel/keys.ts';
import { tempDir, waitServing } from '../helpers/service.ts';
import { client, request, signup, type TestUser } from '../helpers/http.ts';

const log = createLogger('silent');

/** Read-model keys and values of the current generation (generation prefix stripped). */
async function snapshot(redis: Redis, prefix: string): Promise<Map<string, string>> {
  const gen = await redis.get(controlKeys(prefix).generation);
  const gp = generationPrefix(prefix, Number(gen));
  const out = new Map<string, string>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${gp}*`, 'COUNT', 1000);
    cursor = next;
    for (const k of keys) {
      const rest = k.slice(gp.length);
      if (rest.startsWith('cp:') || rest.startsWith('ready:')) continue;
      const type = await redis.type(k);
      let v: unknown;
      if (type === 'string') v = await redis.get(k);
      else if (type === 'hash') v = Object.entries(await redis.hgetall(k)).sort();
      else if (type === 'set') v = (await redis.smembers(k)).sort();
      else if (type === 'zset') v = await redis.zrange(k, '0', '-1', 'WITHSCORES');
      else v = type;
      out.set(rest, JSON.stringify(v));
    }
  } while (cursor !== '0');
  return out;
}

/** Runs writers and readers until stopped; records every status and every acknowledged edit. */
function load(users: TestUser[]) {
  const statuses = new Map<number, number>();
  const bad: string[] = [];
  const acked = new Map<string, string>();
  let stop = false;
  const loops = users.map(async (u, i) => {
    let n = 0;
    while (!stop) {
      const name = `n${i}-${n++}`;
      const r = await u.api.patch('/users/@me', { display_name: name }).catch((e: Error) => ({ status: -1, body: e.message, text: '' }));
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (r.status === 200) acked.set(u.userId, name);
      else if (r.status !== 503) bad.push(`edit ${r.status} ${r.text}`);
      else if (!(r.body && typeof r.body === 'object' && (r.body as { type?: string }).type === 'InternalError')) bad.push(`503 without a JSON type: ${r.text}`);
      const g = await u.api.get('/users/@me').catch((e: Error) => ({ status: -1, body: e.message, text: '' }));
      statuses.set(g.status, (statuses.get(g.status) ?? 0) + 1);
      if (g.status !== 200 && g.status !== 503) bad.push(`read ${g.status} ${g.text}`);
    }
  });
  return {
    statuses,
    bad,
    acked,
    async stop() {
      stop = true;
      await Promise.all(loops);
    },
  };
}

async function untilServing(base: string, token: string, ms = 60_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const r = await request(base, 'GET', '/users/@me', { token, skipOpenApi: true }).catch(() => null);
    if (r?.status === 200) return;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error('service did not serve again');
}

for (const mode of ['flushall', 'restart-empty'] as const) {
  t.test(`Redis ${mode} under load`, async (t) => {
    const dir = tempDir(t);
    let redisServer = await startPrivateRedis({ dir: `${dir}/redis` });
    t.teardown(() => redisServer.stop());
    const config = loadConfig({
      API_PORT: '0',
      MEDIA_PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dir,
      REDIS_URL: redisServer.url,
      REDIS_PREFIX: 'rl:',
      RATE_LIMITS: 'off',
      LOG_LEVEL: 'silent',
      ROLES: 'api,projector',
    });
    const s = await startService(config, { log });
    t.teardown(() => s.stop());
    await waitServing(s);
    const users = await Promise.all(Array.from({ length: 6 }, () => signup(s)));
    const l = load(users);
    await new Promise((r) => setTimeout(r, 1000));
    const admin = new Redis(redisServer.url);
    if (mode === 'flushall') {
      await admin.flushall();
    } else {
      admin.disconnect();
      const port = redisServer.port;
      await redisServer.stop();
      await new Promise((r) => setTimeout(r, 300));
      redisServer = await startPrivateRedis({ dir: `${dir}/redis`, port });
    }
    await new Promise((r) => setTimeout(r, 1500));
    await untilServing(s.apiUrl, users[0]!.token);
    await new Promise((r) => setTimeout(r, 1000));
    await l.stop();
    t.same(l.bad, [], 'nothing but 2xx and JSON 503s');
    t.comment(`statuses: ${JSON.stringify(Object.fromEntries(l.statuses))}`);
    t.ok((l.statuses.get(200) ?? 0) > 20, 'traffic went through before and after');

    // Every acknowledged edit is what the read model shows now (the last write of each user wins).
    for (const u of users) {
      const me = await client(s, u.token).get('/users/@me');
      t.equal(me.status, 200);
      t.equal(me.body.display_name, l.acked.get(u.userId), `last acknowledged name of ${u.username}`);
    }

    // The read models equal a rebuild from zero of the same log.
    const redis = new Redis(redisServer.url);
    t.teardown(() => redis.disconnect());
    const live = await snapshot(redis, 'rl:');
    await rebuild({ store: s.store, redisUrl: redisServer.url, prefix: 'rl:', targetPrefix: 'fresh:', partitions: 1, projections: PROJECTIONS, log });
    const fresh = await snapshot(redis, 'fresh:');
    t.same([...live.keys()].sort(), [...fresh.keys()].sort(), 'same keys as a rebuild from zero');
    const diff = [...live].filter(([k, v]) => fresh.get(k) !== v).map(([k]) => k);
    t.same(diff, [], 'same values as a rebuild from zero');
    admin.disconnect();
  });
}
