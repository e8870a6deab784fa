/**
 * Partitioned projectors in separate processes over one SQLite store and one Redis: writes made through
 * an API process wait for the projector process that owns their scope (read-your-writes across
 * processes); when that process is killed with SIGKILL, another takes its partition over once the lease
 * expires, and no event is applied twice or skipped (the read models equal a rebuild from zero).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import t from 'tap';
import { Redis } from 'ioredis';
import { nodeArgs } from '../src/built.ts';
import { partitionOf } from '../src/partition.ts';
import { controlKeys } from '../src/readmodel/keys.ts';
import { dumpCurrent, dumpRebuild } from './helpers/servers.ts';
import { startTestService, TEST_REDIS_URL } from './helpers/service.ts';
import { signup, type TestUser } from './helpers/http.ts';

function startProjector(env: Record<string, string>, partition: number): ChildProcess {
  const child = spawn(process.execPath, nodeArgs('src/main.ts'), {
    env: { ...process.env, ...env, ROLES: 'projector', PROJECTOR_PARTITION: String(partition) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return child;
}

t.test('two projector processes share the partitions and take over from a dead one', async (t) => {
  const api = await startTestService(t, { ROLES: 'api', PROJECTOR_PARTITIONS: '2', RATE_LIMITS: 'off', PROJECTOR_LEASE_MS: '1500' });
  const env = {
    DATA_DIR: api.dataDir,
    REDIS_URL: api.config.redisUrl,
    REDIS_PREFIX: api.prefix,
    PROJECTOR_PARTITIONS: '2',
    PROJECTOR_LEASE_MS: '1500',
    LOG_LEVEL: 'warn',
  };
  const p0 = startProjector(env, 0);
  const p1 = startProjector(env, 1);
  const children = [p0, p1];
  t.teardown(() => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL')));
  const until = Date.now() + 120_000; // two process starts on a possibly loaded machine
  while (!(await api.readModels.serving())) {
    if (Date.now() > until) throw new Error('projector processes did not catch up');
    await new Promise((r) => setTimeout(r, 50));
  }
  const redis = new Redis(TEST_REDIS_URL);
  t.teardown(() => redis.disconnect());
  const ctl = controlKeys(api.prefix);
  // A process that started first may stand in for the other's partition until that one announces itself
  // and gets it back; wait for the steady state rather than asserting the first moment.
  let holders: Array<string | null> = [];
  for (const end = Date.now() + 120_000; Date.now() < end; ) {
    holders = await Promise.all([0, 1].map((i) => redis.get(ctl.lease(2, i))));
    if (holders[0] && holders[1] && holders[0] !== holders[1]) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.ok(holders[0] && holders[1] && holders[0] !== holders[1], 'each process holds its own partition');

  // Ids are random: sign up until both partitions had writes (6 at least).
  const before: TestUser[] = [];
  while (before.length < 6 || new Set(before.map((u) => partitionOf(u.userId, 2))).size < 2) {
    if (before.length > 40) throw new Error('40 user ids, all in one partition');
    before.push(await signup(api));
  }
  for (const u of before) t.equal((await u.api.get('/users/@me')).status, 200, 'read-your-writes across processes');

  p1.kill('SIGKILL');
  await new Promise((r) => p1.once('exit', r));
  // Writes owned by partition 1 now wait until process 0 takes the partition over.
  const after: TestUser[] = [];
  while (after.length < 6 || !after.some((u) => partitionOf(u.userId, 2) === 1)) {
    if (after.length > 40) throw new Error('40 user ids, none in the dead partition');
    after.push(await signup(api));
  }
  for (const u of after) t.equal((await u.api.get('/users/@me')).body._id, u.userId);
  t.equal(await redis.get(ctl.lease(2, 1)), await redis.get(ctl.lease(2, 0)), 'process 0 now holds both leases');

  const live = await dumpCurrent(redis, api.prefix);
  t.same(live, await dumpRebuild(t, redis, { store: api.store, redisUrl: TEST_REDIS_URL, prefix: api.prefix, partitions: 2 }), 'no event applied twice or skipped: the read models equal a rebuild from zero');
});
