/**
 * Slots moved between the masters of a real 3-master Redis Cluster while messages are sent (`redis-cli --cluster
 * reshard`, issue 37 part 1): the read models' shards and main slot change masters under the projector, and
 * nothing is lost or applied twice: every channel's history, and the whole generation, equal a rebuild.
 */
import t from 'tap';
import type { Redis } from 'ioredis';
import { createRedis, type RedisClient } from '../src/redis.ts';
import { controlKeys, generationPrefix, partitionKeys, SHARDS, shardPrefix } from '../src/readmodel/keys.ts';
import { signup } from './helpers/http.ts';
import { dumpCurrent, dumpRebuild } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';
import { haveRedisClusterTools, startRedisCluster } from './helpers/redisCluster.ts';
import { until } from './helpers/wait.ts';
import { history, mastersOf, moveSlot, run, sendMany, serverWithChannels } from './helpers/clusterShards.ts';

const skip = haveRedisClusterTools() ? false : 'redis-server and redis-cli are needed for the cluster tests';

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
  const total = 1200;
  const sending = sendMany(owner, srv.channels, total, 8, statuses);
  // While the sends run: slots move from master to master (the generation's main slot and many shards change
  // masters), at least three moves, until 100 sends were acknowledged while slots were moving (at most 12 moves).
  // `redis-cli` runs as a child process without blocking this one: the service under test runs in it.
  await until('some messages sent', () => (statuses.get(200) ?? 0) >= 50);
  const ackedBefore = statuses.get(200) ?? 0;
  const headBefore = (await s.store.headPosition())!;
  const started = Date.now();
  let moves = 0;
  const gen = s.readModels.generation!;
  const slotKeys = [generationPrefix(s.prefix, gen) + 'probe', ...Array.from({ length: SHARDS }, (_, i) => shardPrefix(s.prefix, gen, i) + 'probe')];
  const mastersBefore = await Promise.all(slotKeys.map((k) => cluster.masterOf(k)));
  // First the generation's main slot (the partitions' checkpoints and every unspread read model), key by key,
  // to another master; then whole ranges of slots with redis-cli.
  const mainSlot = Number(await admin.call('CLUSTER', 'KEYSLOT', slotKeys[0]!));
  const mainFrom = mastersBefore[0]!;
  await moveSlot(cluster, mainSlot, masters.find((m) => m.port !== mainFrom)!.port);
  const mainTo = await cluster.masterOf(slotKeys[0]!);
  t.not(mainTo, mainFrom, 'the main slot changed masters');
  // Then partition 0's home slot (its checkpoint and spread record: every batch of it commits there first).
  const homeKey = partitionKeys(s.prefix, gen, 2, 0).checkpoint;
  const homeFrom = await cluster.masterOf(homeKey);
  await moveSlot(cluster, Number(await admin.call('CLUSTER', 'KEYSLOT', homeKey)), masters.find((m) => m.port !== homeFrom)!.port);
  t.not(await cluster.masterOf(homeKey), homeFrom, "partition 0's home slot changed masters");
  // redis-cli moves a source's lowest slots first, so three moves round the ring (0→1, 1→2, 2→0) can carry the
  // same 2,000 slots home again: the moves go on until some shards' slots ended on another master too.
  let mastersAfter = mastersBefore;
  let movedShards = 0;
  while (moves < 12 && (moves < 3 || (statuses.get(200) ?? 0) - ackedBefore < 100 || movedShards === 0)) {
    const [from, to] = [moves % 3, (moves + 1) % 3];
    const r = await run('redis-cli', ['--cluster', 'reshard', `127.0.0.1:${masters[0]!.port}`, '--cluster-from', masters[from]!.id, '--cluster-to', masters[to]!.id, '--cluster-slots', '2000', '--cluster-yes', '--cluster-pipeline', '10']);
    t.equal(r.code, 0, `reshard ${moves + 1}: 2000 slots from master ${from} to ${to}${r.code === 0 ? '' : `: ${r.out.slice(-2000)}`}`);
    moves++;
    mastersAfter = await Promise.all(slotKeys.map((k) => cluster.masterOf(k)));
    movedShards = mastersAfter.slice(1).filter((m, i) => m !== mastersBefore[i + 1]).length;
  }
  const ackedDuring = (statuses.get(200) ?? 0) - ackedBefore;
  t.comment(`${movedShards} of ${SHARDS} shards changed masters`);
  t.ok(movedShards > 0, 'shards changed masters under the projector');
  const headAfter = (await s.store.headPosition())!;
  const acked = await sending;
  t.comment(`sends answered: ${JSON.stringify(Object.fromEntries(statuses))}; ${moves} moves of 2000 slots in ${Date.now() - started} ms, during which ${ackedDuring} sends were acknowledged and the log grew by ${headAfter - headBefore} positions`);
  t.ok(ackedDuring >= 50, `sends were acknowledged while slots moved (${ackedDuring})`);
  t.ok((statuses.get(200) ?? 0) + (statuses.get(503) ?? 0) === total, 'every send answered 200 or 503');
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
  for (const i of [0, 1]) t.equal(await admin.hlen(partitionKeys(s.prefix, gen, 2, i).quarantine), 0, `partition ${i} quarantined no event (a MOVED is not the event's fault)`);
  const live = await dumpCurrent(admin as Redis, s.prefix);
  const histories = Object.keys(live).filter((k) => k.endsWith(':history'));
  t.equal(histories.length, srv.channels.length, 'every channel has its history');
  t.same(await dumpRebuild(t, admin as Redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: 2 }), live, 'the read models (every history included) equal a rebuild');
  t.ok(await admin.exists(controlKeys(s.prefix).generation), 'the service still has its generation');
});
