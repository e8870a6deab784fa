/**
 * Read models sharded over the masters of a real 3-master Redis Cluster (issue 37 part 1, docs/ARCHITECTURE.md
 * "Redis Cluster"): a channel's messages and last message id live in one of `SHARDS` shards chosen by the channel
 * id, so one server's busy channels spread over every master. And slots moved between masters while messages are
 * sent (`redis-cli --cluster reshard`) lose and duplicate nothing: every channel's history equals a rebuild's.
 */
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { Redis } from 'ioredis';
import { createRedis, type RedisClient } from '../src/redis.ts';
import { controlKeys, generationPrefixes } from '../src/readmodel/keys.ts';
import { signup, type TestUser } from './helpers/http.ts';
import { createServer, dumpCurrent, dumpRebuild } from './helpers/servers.ts';
import { startTestService, type TestService } from './helpers/service.ts';
import { haveRedisClusterTools, startRedisCluster, type TestCluster } from './helpers/redisCluster.ts';
import { until } from './helpers/wait.ts';

const skip = haveRedisClusterTools() ? false : 'redis-server and redis-cli are needed for the cluster tests';

/** Every message id of a channel, oldest first (pages of 100). */
async function history(user: TestUser, channel: string): Promise<string[]> {
  const ids: string[] = [];
  let after: string | undefined;
  for (;;) {
    const r = await user.api.get(`/channels/${channel}/messages?limit=100&sort=Oldest${after ? `&after=${after}` : ''}`);
    if (r.status !== 200) throw new Error(`history ${r.status} ${r.text}`);
    const page = r.body as Array<{ _id: string }>;
    ids.push(...page.map((m) => m._id));
    if (page.length < 100) return ids;
    after = page[page.length - 1]!._id;
  }
}

/** A server with `n` text channels (its `general` and n - 1 more). */
async function serverWithChannels(owner: TestUser, n: number): Promise<{ id: string; channels: string[] }> {
  const srv = await createServer(owner, 'Spread');
  const channels = [srv.general];
  while (channels.length < n) {
    const r = await owner.api.post(`/servers/${srv.id}/channels`, { name: `c${channels.length}` });
    if (r.status !== 200) throw new Error(`channel: ${r.status} ${r.text}`);
    channels.push(r.body._id as string);
  }
  return { id: srv.id, channels };
}

/** Sends `total` messages round-robin over `channels`, `parallel` at a time; the ids acknowledged (2xx), by channel. */
async function sendMany(owner: TestUser, channels: string[], total: number, parallel: number, statuses: Map<number, number>): Promise<Map<string, string[]>> {
  const acked = new Map<string, string[]>(channels.map((c) => [c, []]));
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      for (let i = next++; i < total; i = next++) {
        const channel = channels[i % channels.length]!;
        const r = await owner.api.post(`/channels/${channel}/messages`, { content: `message ${i} ${'x'.repeat(200)}` });
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status === 200) acked.get(channel)!.push(r.body._id as string);
        else if (r.status !== 503) throw new Error(`send: ${r.status} ${r.text}`);
      }
    }),
  );
  return acked;
}

/** The masters' ports and node ids. */
function mastersOf(cluster: TestCluster): Array<{ port: number; id: string }> {
  const out = spawnSync('redis-cli', ['-p', String(cluster.nodes[0]!.port), 'CLUSTER', 'NODES'], { encoding: 'utf8' }).stdout;
  return out
    .trim()
    .split('\n')
    .map((l) => l.split(' '))
    .filter((f) => f[2]!.includes('master'))
    .map((f) => ({ id: f[0]!, port: Number(f[1]!.split(':')[1]!.split('@')[0]) }));
}

/** Keys and bytes (MEMORY USAGE) on each master: of the read-model generation, and of everything under the prefix. */
async function perMaster(cluster: TestCluster, s: TestService, gen: number) {
  const out: Array<{ port: number; genKeys: number; genBytes: number; allKeys: number; allBytes: number }> = [];
  const [main, shards] = generationPrefixes(s.prefix, gen);
  for (const m of mastersOf(cluster)) {
    const r = new Redis({ host: '127.0.0.1', port: m.port });
    try {
      const row = { port: m.port, genKeys: 0, genBytes: 0, allKeys: 0, allBytes: 0 };
      let cursor = '0';
      do {
        const [nextCursor, keys] = await r.scan(cursor, 'COUNT', 1000);
        cursor = nextCursor;
        for (const k of keys) {
          if (!k.startsWith(s.prefix)) continue;
          const bytes = Number((await r.call('MEMORY', 'USAGE', k, 'SAMPLES', '0')) ?? 0);
          row.allKeys++;
          row.allBytes += bytes;
          if (k.startsWith(main) || k.startsWith(shards)) {
            row.genKeys++;
            row.genBytes += bytes;
          }
        }
      } while (cursor !== '0');
      out.push(row);
    } finally {
      r.disconnect();
    }
  }
  return out;
}

const pct = (a: number, b: number) => (b === 0 ? 0 : Math.round((1000 * a) / b) / 10);

t.test('a 3-master cluster after 2,000 sends over 40 channels of one server: every master holds 15 % or more of the read models\' keys and memory', { skip }, async (t) => {
  const cluster = await startRedisCluster(t, { masters: 3 });
  const s = await startTestService(t, { REDIS_CLUSTER_NODES: cluster.seeds, RATE_LIMITS: 'off', PROJECTOR_PARTITIONS: '2' });
  const owner = await signup(s);
  const srv = await serverWithChannels(owner, 40);
  const statuses = new Map<number, number>();
  const acked = await sendMany(owner, srv.channels, 2000, 8, statuses);
  t.same(Object.fromEntries(statuses), { 200: 2000 }, 'every send answered 200');
  for (const c of srv.channels.slice(0, 3)) t.same(await history(owner, c), acked.get(c)!.slice().sort(), 'a channel\'s history holds its messages');
  const rows = await perMaster(cluster, s, s.readModels.generation!);
  const gk = rows.reduce((a, r) => a + r.genKeys, 0);
  const gb = rows.reduce((a, r) => a + r.genBytes, 0);
  const ak = rows.reduce((a, r) => a + r.allKeys, 0);
  const ab = rows.reduce((a, r) => a + r.allBytes, 0);
  for (const r of rows) {
    t.comment(
      `master :${r.port}: read models ${r.genKeys} keys (${pct(r.genKeys, gk)} %), ${r.genBytes} bytes (${pct(r.genBytes, gb)} %); ` +
        `everything under the prefix ${r.allKeys} keys (${pct(r.allKeys, ak)} %), ${r.allBytes} bytes (${pct(r.allBytes, ab)} %)`,
    );
  }
  for (const r of rows) {
    t.ok(r.genKeys >= 0.15 * gk, `master :${r.port} holds ${pct(r.genKeys, gk)} % of the read models' ${gk} keys`);
    t.ok(r.genBytes >= 0.15 * gb, `master :${r.port} holds ${pct(r.genBytes, gb)} % of the read models' ${gb} bytes`);
  }
});

t.test('slots moved between masters during sends (redis-cli --cluster reshard): every channel\'s history equals a rebuild, nothing lost or twice', { skip }, async (t) => {
  const cluster = await startRedisCluster(t, { masters: 3 });
  const s = await startTestService(t, { REDIS_CLUSTER_NODES: cluster.seeds, RATE_LIMITS: 'off', PROJECTOR_PARTITIONS: '2', PROJECTION_WAIT_MS: '20000' });
  const admin: RedisClient = createRedis(s.config.redisUrl);
  t.teardown(() => admin.disconnect());
  const owner = await signup(s);
  const srv = await serverWithChannels(owner, 20);
  const masters = mastersOf(cluster);
  t.equal(masters.length, 3);
  const statuses = new Map<number, number>();
  const sending = sendMany(owner, srv.channels, 800, 4, statuses);
  // While the sends run: move a third of the slots from the first master to the second, then half of the
  // third master's to the first (the generation's main slot and many shards change masters).
  await until('some messages sent', () => (statuses.get(200) ?? 0) >= 50);
  const moves: Array<[number, number, number]> = [
    [0, 1, 1800],
    [2, 0, 2700],
  ];
  for (const [from, to, slots] of moves) {
    const r = spawnSync(
      'redis-cli',
      ['--cluster', 'reshard', `127.0.0.1:${masters[0]!.port}`, '--cluster-from', masters[from]!.id, '--cluster-to', masters[to]!.id, '--cluster-slots', String(slots), '--cluster-yes', '--cluster-pipeline', '10'],
      { encoding: 'utf8', timeout: 300_000 },
    );
    t.equal(r.status, 0, `reshard of ${slots} slots from master ${from} to ${to}${r.status === 0 ? '' : `: ${r.stdout.slice(-2000)} ${r.stderr}`}`);
  }
  const sentDuring = statuses.get(200) ?? 0;
  const acked = await sending;
  t.comment(`sends answered: ${JSON.stringify(Object.fromEntries(statuses))}; ${sentDuring} acknowledged by the end of the resharding`);
  t.ok(sentDuring < 800, 'the resharding ended while messages were still being sent');
  await cluster.healthy();
  // Every acknowledged message in its channel's history once; the histories as a rebuild from the log makes them.
  await until('every acknowledged message readable', async () => {
    for (const c of srv.channels) {
      const ids = new Set(await history(owner, c));
      if (!acked.get(c)!.every((id) => ids.has(id))) return false;
    }
    return true;
  }, 120_000, 500);
  const head = (await s.store.headPosition())!;
  await until('the projector at the head of the log', () => s.readModels.waitForAll(head).then(() => true, () => false), 120_000, 200);
  for (const c of srv.channels) {
    const ids = await history(owner, c);
    t.equal(new Set(ids).size, ids.length, `channel ${c}: no message twice`);
    t.ok(acked.get(c)!.every((id) => ids.includes(id)), `channel ${c}: every acknowledged message (${acked.get(c)!.length})`);
  }
  const live = await dumpCurrent(admin as Redis, s.prefix);
  const histories = Object.keys(live).filter((k) => k.endsWith(':history'));
  t.equal(histories.length, srv.channels.length, 'every channel has its history');
  t.same(await dumpRebuild(t, admin as Redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: 2 }), live, 'the read models (every history included) equal a rebuild');
  t.ok(await admin.exists(controlKeys(s.prefix).generation), 'the service still has its generation');
});
