import path from 'node:path';
import t from 'tap';
import { Redis } from 'ioredis';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import type { NewEvent } from '../src/eventstore/port.ts';
import { createLogger } from '../src/log.ts';
import { PartitionRunner } from '../projections/runner.ts';
import { rebuild } from '../projections/rebuild.ts';
import { PROJECTIONS } from '../projections/index.ts';
import type { Projection } from '../projections/types.ts';
import { generationPrefix, partitionKeys } from '../src/readmodel/keys.ts';
import { dumpCurrent } from './helpers/servers.ts';
import { deletePrefix, startTestService, tempDir, TEST_REDIS_URL, uniquePrefix, waitServing } from './helpers/service.ts';
import { client, signup } from './helpers/http.ts';
import { until, WAIT_MS } from './helpers/wait.ts';

const log = createLogger('silent');

t.test('a rebuild from zero produces the same read models as the live projector', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const users = await Promise.all([signup(s), signup(s), signup(s)]);
  await users[0]!.api.patch('/users/@me', { display_name: 'Renamed', status: { text: 'away' } });
  await users[1]!.api.post('/auth/session/logout');
  await client(s).post('/auth/session/login', { email: users[2]!.email, password: 'wrong password!' });
  const redis = new Redis(TEST_REDIS_URL);
  t.teardown(() => redis.disconnect());
  const before = await dumpCurrent(redis, s.prefix);
  t.ok(Object.keys(before).length > 10, `live read models hold ${Object.keys(before).length} keys`);
  const genBefore = s.readModels.generation;
  const r = await rebuild({ store: s.store, redisUrl: TEST_REDIS_URL, prefix: s.prefix, partitions: 1, projections: PROJECTIONS, log });
  t.not(r.generation, genBefore, 'a new generation was built');
  t.same(await dumpCurrent(redis, s.prefix), before, 'the same keys with the same values');
  // The live service follows the swap and keeps serving and writing.
  await waitServing(s);
  const u = await signup(s);
  t.equal((await u.api.get('/users/@me')).status, 200);
  t.equal((await users[0]!.api.get('/users/@me')).body.display_name, 'Renamed');
});

t.test('Redis losing the read models: 503, then a rebuild by itself', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const u = await signup(s);
  await u.api.patch('/users/@me', { display_name: 'Before Loss' });
  await deletePrefix(TEST_REDIS_URL, s.prefix);
  // The reader notices within its cache period; until the projector has rebuilt, the API answers 503.
  let saw503 = false;
  let ok = false;
  // Bounded by WAIT_MS: the rebuild time is not under test, and a loaded machine can outrun 15 s.
  const end = Date.now() + WAIT_MS;
  while (Date.now() < end) {
    const r = await u.api.get('/users/@me');
    if (r.status === 503) {
      saw503 = true;
      t.equal(r.body.type, 'InternalError', '503 carries a JSON error');
    }
    if (r.status === 200) {
      ok = true;
      t.equal(r.body.display_name, 'Before Loss', 'state restored from the log');
      break;
    }
    await new Promise((res) => setTimeout(res, 20));
  }
  t.ok(ok, 'served again after the automatic rebuild');
  t.comment(saw503 ? 'observed 503 while rebuilding' : 'rebuild finished before a request saw 503');
});

t.test('two runners racing on one partition apply every event exactly once', async (t) => {
  const dir = tempDir(t);
  const store = new SqliteEventStore(path.join(dir, 'e.sqlite'), { pollIntervalMs: 5 });
  t.teardown(() => store.close());
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const counter: Projection = {
    name: 'counter',
    handles: ['EmailClaimed'],
    async apply(e, tx) {
      const c = (await tx.getJson<{ n: number; seen: string[] }>('count')) ?? { n: 0, seen: [] };
      tx.setJson('count', { n: c.n + 1, seen: [...c.seen, e.id].slice(-5) });
    },
  };
  const meta = { actor: null, requestId: 'r', at: new Date(0).toISOString(), scope: 'x' };
  const total = 600;
  for (let i = 0; i < total; i += 50) {
    const batch: NewEvent[] = Array.from({ length: 50 }, () => ({ id: crypto.randomUUID(), type: 'EmailClaimed', data: { userId: 'u' }, metadata: meta }));
    await store.append(`email-${i}`, batch, 'no_stream');
  }
  const conns = [new Redis(TEST_REDIS_URL), new Redis(TEST_REDIS_URL), new Redis(TEST_REDIS_URL)];
  t.teardown(() => conns.forEach((c) => c.disconnect()));
  const stops: string[] = [];
  const mk = (redis: Redis, batchSize: number) =>
    new PartitionRunner({ store, redis, prefix, generation: 1, partition: 0, partitions: 1, projections: [counter], log, rebuilding: false, batchSize, onStop: (r) => stops.push(r) });
  const a = mk(conns[0]!, 7);
  const b = mk(conns[1]!, 11);
  await Promise.all([a.start(), b.start()]);
  const cpKey = partitionKeys(prefix, 1, 1, 0).checkpoint;
  const head = (await store.headPosition())!.toString();
  // Bounded by time, not by a count of 25 ms polls (10 s in all, which a loaded machine can outrun); a
  // checkpoint that never reaches the head fails the assertion below, after both runners are stopped.
  await until('the checkpoint at the head', async () => (await conns[2]!.get(cpKey)) === head).catch(() => undefined);
  await Promise.all([a.stop(), b.stop()]);
  const count = JSON.parse((await conns[2]!.get(generationPrefix(prefix, 1) + 'count'))!) as { n: number };
  t.equal(count.n, total, 'every event counted once');
  t.equal(await conns[2]!.get(cpKey), head, 'checkpoint at the head');
  t.ok(stops.includes('checkpoint-lost'), 'the loser of the race noticed and stopped');
});

t.test('partitioned projector: writes wait for the partition of their scope', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', PROJECTOR_PARTITIONS: '4' });
  t.same(s.projector!.partitions, [0, 1, 2, 3], 'one process claims every partition');
  const users = await Promise.all(Array.from({ length: 6 }, () => signup(s)));
  for (const u of users) t.equal((await u.api.get('/users/@me')).body._id, u.userId);
});
