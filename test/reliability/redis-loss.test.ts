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
import { dumpCurrent, dumpRebuild } from '../helpers/servers.ts';
import { tempDir, waitServing } from '../helpers/service.ts';
import { client, request, signup, type TestUser } from '../helpers/http.ts';
import { until } from '../helpers/wait.ts';

const log = createLogger('silent');

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
      // A refused or unavailable answer comes back at once: back off a little, as clients do, instead of
      // spinning (twelve spinning loops starve the rebuild on two cores).
      if (r.status !== 200 || g.status !== 200) await new Promise((res) => setTimeout(res, 20));
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
  const end = Date.now() + ms;
  while (Date.now() < end) {
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
    // Stopped at the end of the test, or here when it fails midway (the loops must not outlive it).
    t.teardown(() => l.stop());
    // Traffic goes through before the loss: counted, not assumed from a second of wall time (which a loaded
    // machine can fill with a handful of requests).
    const ok200 = () => l.statuses.get(200) ?? 0;
    await until('traffic before the loss', () => ok200() > 20).catch(() => undefined);
    const before = ok200();
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
    const served = ok200();
    await until('traffic after the loss', () => ok200() > served + 20).catch(() => undefined);
    await l.stop();
    t.same(l.bad, [], 'nothing but 2xx and JSON 503s');
    t.comment(`statuses: ${JSON.stringify(Object.fromEntries(l.statuses))}`);
    t.ok(before > 20, `traffic went through before the loss (${before} answers 200)`);
    t.ok(ok200() > served + 20, `and after it (${ok200() - served} answers 200 once serving again)`);

    // Every acknowledged edit is what the read model shows now (the last write of each user wins).
    for (const u of users) {
      const me = await client(s, u.token).get('/users/@me');
      t.equal(me.status, 200);
      t.equal(me.body.display_name, l.acked.get(u.userId), `last acknowledged name of ${u.username}`);
    }

    // The read models equal a rebuild from zero of the same log.
    const redis = new Redis(redisServer.url);
    t.teardown(() => redis.disconnect());
    const live = await dumpCurrent(redis, 'rl:');
    t.same(live, await dumpRebuild(t, redis, { store: s.store, redisUrl: redisServer.url, prefix: 'rl:', partitions: 1 }), 'the same keys and values as a rebuild from zero');
    admin.disconnect();
  });
}
