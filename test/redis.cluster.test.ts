// The service on a real Redis Cluster (REDIS_CLUSTER_NODES): three masters on loopback ports, joined with
// `redis-cli --cluster create`. Messages, the gateway (client-event streams, typing over pub/sub, presence)
// and rebuilds (rebuild equals live, a live swap) run against it; then a master is killed. Without a replica:
// 503 JSON errors (never 500, never a hang) and recovery once the node is back. With replicas (six nodes):
// failover under load, and no acknowledged write lost or applied twice.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { moduleSpecifier, scriptNodeArgs } from '../src/built.ts';
import { createLogger } from '../src/log.ts';
import { createRedis, type RedisClient } from '../src/redis.ts';
import { controlKeys, generationPrefix, homeTag, LIVE_SHARDS, partitionKeys, readModelKey, slotOfTag } from '../src/readmodel/keys.ts';
import { rebuild } from '../projections/rebuild.ts';
import { PROJECTIONS } from '../projections/index.ts';
import { signup, type Res, type TestUser } from './helpers/http.ts';
import { createServer, dumpCurrent, dumpRebuild, join } from './helpers/servers.ts';
import { startTestService, waitServing, type TestService } from './helpers/service.ts';
import { haveRedisClusterTools, startRedisCluster } from './helpers/redisCluster.ts';
import { until } from './helpers/wait.ts';
import { connectReady } from './helpers/ws.ts';

/** A request that must answer within `ms` (a hang fails the test instead of stalling it). */
async function within<T>(what: string, p: Promise<T>, ms = 20_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)));
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs `code` (an ES module importing sources through `moduleSpecifier`: their build or tsx, src/built.ts) in a child process that never calls process.exit, and waits for it to end
 * by itself: its stdout and exit code, or 'hung' (killed) when it is still running after `ms`.
 */
async function runToExit(code: string, env: NodeJS.ProcessEnv, ms: number): Promise<{ out: string; exited: number | 'hung' }> {
  const child = spawn(process.execPath, [...scriptNodeArgs(), '--input-type=module', '-e', code], {
    cwd: path.join(import.meta.dirname, '..'),
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = await new Promise<number | 'hung'>((resolve) => {
    const cut = setTimeout(() => {
      child.kill('SIGKILL');
      resolve('hung');
    }, ms);
    child.once('exit', (c) => {
      clearTimeout(cut);
      resolve(c ?? -1);
    });
  });
  return { out, exited };
}

/** Every message id of a channel (newest first pages of 100). */
async function history(user: TestUser, channel: string): Promise<string[]> {
  const ids: string[] = [];
  let before: string | undefined;
  for (;;) {
    const r = await user.api.get(`/channels/${channel}/messages?limit=100${before ? `&before=${before}` : ''}`);
    if (r.status !== 200) throw new Error(`history ${r.status} ${r.text}`);
    const page = r.body as Array<{ _id: string }>;
    ids.push(...page.map((m) => m._id));
    if (page.length < 100) return ids;
    before = page[page.length - 1]!._id;
  }
}

/** A read-model key of the generation the service reads now (to find the master that serves it). */
function generationKey(s: TestService): string {
  return generationPrefix(s.prefix, s.readModels.generation!) + 'probe';
}

const skip = haveRedisClusterTools() ? false : 'redis-server and redis-cli are needed for the cluster tests';

t.test('a 3-master Redis Cluster: messages, gateway and rebuild; a master lost without a replica answers 503, then recovers', { skip }, async (t) => {
  // Persistence (AOF, fsync always): the killed master comes back with its data.
  const cluster = await startRedisCluster(t, { masters: 3, persist: true, nodeTimeoutMs: 1000 });
  const s = await startTestService(t, { REDIS_CLUSTER_NODES: cluster.seeds, RATE_LIMITS: 'off', PROJECTOR_PARTITIONS: '2', PROJECTION_WAIT_MS: '3000' });
  t.match(s.config.redisUrl, /^redis-cluster:\/\//, 'REDIS_CLUSTER_NODES selects the cluster');
  const admin: RedisClient = createRedis(s.config.redisUrl);
  t.teardown(() => admin.disconnect());

  const owner = await signup(s);
  const member = await signup(s);
  const srv = await createServer(owner, 'On a cluster');
  await join(owner, srv.general, member);
  const m = await connectReady(s, member.token);
  const o = await connectReady(s, owner.token);
  t.teardown(() => {
    m.close();
    o.close();
  });

  t.test('the keys are spread over the masters by their hash tags', async (t) => {
    const ctl = controlKeys(s.prefix);
    const slots = await Promise.all([ctl.generation, generationKey(s), ctl.presenceEvents, ctl.presenceUsers].map((k) => admin.call('CLUSTER', 'KEYSLOT', k)));
    t.equal(slots[2], slots[3], 'the presence stream and hashes share the {live} slot (one script)');
    // Live shard j of every partition's client events shares one slot (one XREAD); the live shards cover every master.
    const ranges = (await admin.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number]]>;
    const masters = new Set<number>();
    for (let j = 0; j < LIVE_SHARDS; j++) {
      const [a, b] = (await Promise.all([ctl.clientEvents(2, 0, j), ctl.clientEvents(2, 1, j)].map((k) => admin.call('CLUSTER', 'KEYSLOT', k)))) as number[];
      t.equal(a, b, `live shard ${j}: both partitions' streams in one slot`);
      masters.add(ranges.find(([from, to]) => a! >= from && a! <= to)![2][1]);
    }
    t.equal(masters.size, 3, 'the live shards are on every master');
    // Each partition's checkpoint and spread record share its home slot (one WATCH/MULTI, one MGET), not the main slot.
    for (const i of [0, 1]) {
      const home = partitionKeys(s.prefix, s.readModels.generation!, 2, i);
      const [cp, spread] = (await Promise.all([home.checkpoint, home.spread].map((k) => admin.call('CLUSTER', 'KEYSLOT', k)))) as number[];
      t.equal(cp, spread, `partition ${i}: its checkpoint and spread record in one slot`);
      t.equal(cp, slotOfTag(homeTag(s.readModels.generation!, 2, i)), `partition ${i}: that slot is its home tag's`);
      t.not(cp, slots[1], `partition ${i}: not the generation's main slot`);
    }
    t.ok(await admin.exists(ctl.generation), 'the generation key is on the cluster');
  });

  t.test('messages: send, edit, history, and live delivery to members', async (t) => {
    const sent = await owner.api.post(`/channels/${srv.general}/messages`, { content: 'hello cluster' });
    t.equal(sent.status, 200);
    t.equal((await m.waitFor((e) => e.type === 'Message' && e._id === sent.body._id)).content, 'hello cluster', 'the member got the Message event');
    const edited = await owner.api.patch(`/channels/${srv.general}/messages/${sent.body._id}`, { content: 'edited on a cluster' });
    t.equal(edited.status, 200);
    await m.waitFor((e) => e.type === 'MessageUpdate' && e.id === sent.body._id && e.data.content === 'edited on a cluster');
    const ids: string[] = [sent.body._id];
    for (let i = 0; i < 25; i++) {
      const r = await member.api.post(`/channels/${srv.general}/messages`, { content: `m${i}` });
      t.equal(r.status, 200);
      ids.push(r.body._id);
    }
    t.same((await history(owner, srv.general)).slice().sort(), ids.slice().sort(), 'the history holds every message once');
    const page = await owner.api.get(`/channels/${srv.general}/messages?limit=10`);
    t.equal(page.body.length, 10, 'pages (the message-page script) work');
    t.equal((await owner.api.get(`/channels/${srv.general}/messages/${sent.body._id}`)).body.content, 'edited on a cluster');
  });

  t.test('gateway: typing over pub/sub, presence', async (t) => {
    o.send({ type: 'BeginTyping', channel: srv.general });
    t.same(await m.waitFor((e) => e.type === 'ChannelStartTyping'), { type: 'ChannelStartTyping', id: srv.general, user: owner.userId });
    await until('the member online for the owner', async () => (await owner.api.get(`/users/${member.userId}`)).body.online === true);
    m.send({ type: 'Ping', data: 1 });
    await m.waitFor((e) => e.type === 'Pong');
  });

  t.test('rebuild equals live; a live rebuild swaps the generation and the service follows', async (t) => {
    const live = await dumpCurrent(admin, s.prefix);
    t.ok(Object.keys(live).length > 10, `live read models hold ${Object.keys(live).length} keys`);
    t.same(await dumpRebuild(t, admin, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: 2 }), live, 'rebuild equals live');
    const before = s.readModels.generation;
    const r = await rebuild({ store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: 2, projections: PROJECTIONS, log: createLogger('silent') });
    t.not(r.generation, before, 'a new generation');
    t.same(await dumpCurrent(admin, s.prefix), live, 'the swapped-in generation equals the old one');
    await until('the service reads the new generation', () => s.readModels.generation === r.generation);
    await waitServing(s);
    const sent = await owner.api.post(`/channels/${srv.general}/messages`, { content: 'after the swap' });
    t.equal(sent.status, 200, 'writes go on after the swap');
    await m.waitFor((e) => e.type === 'Message' && e._id === sent.body._id);
    t.equal(await admin.exists(readModelKey(s.prefix, before!, `server:${srv.id}`)), 0, 'the old generation was deleted on every master');
    t.equal(await admin.exists(readModelKey(s.prefix, before!, `channel:${srv.general}:history`)), 0, 'its shards too');
  });

  t.test('a master lost without a replica: 503 JSON, never 500 or a hang; recovery once it is back', async (t) => {
    const key = generationKey(s);
    const port = await cluster.masterOf(key);
    await cluster.kill(port);
    const seen: Res[] = [];
    // Reads and writes while the master is gone: each answers (within 20 s) with 503 {"type": …}.
    await until('a 503 for a read', async () => {
      const r = await within('GET /servers/:id', owner.api.get(`/servers/${srv.id}`));
      seen.push(r);
      return r.status === 503;
    }, 30_000, 50);
    const write = await within('POST message', owner.api.post(`/channels/${srv.general}/messages`, { content: 'while a master is down' }));
    seen.push(write);
    t.equal(write.status, 503, 'a write answers 503 too');
    for (const r of seen) {
      t.not(r.status, 500, 'never a 500');
      if (r.status === 503) t.equal(r.body.type, 'InternalError', '503 carries a JSON error type');
    }

    await cluster.restart(port);
    await cluster.healthy(key);
    await until('reads again', async () => (await owner.api.get(`/servers/${srv.id}`)).status === 200, 60_000, 100);
    await waitServing(s, 60_000);
    let after!: Res;
    await until('writes again', async () => {
      after = await owner.api.post(`/channels/${srv.general}/messages`, { content: 'after recovery' });
      return after.status === 200;
    }, 60_000, 200);
    const fresh = await connectReady(s, member.token);
    t.teardown(() => fresh.close());
    const again = await owner.api.post(`/channels/${srv.general}/messages`, { content: 'live again' });
    t.equal(again.status, 200);
    await fresh.waitFor((e) => e.type === 'Message' && e._id === again.body._id);
    const ids = await history(owner, srv.general);
    t.ok(ids.includes(after.body._id) && ids.includes(again.body._id), 'the history has the writes after recovery');
    t.equal(new Set(ids).size, ids.length, 'no message twice');
    t.same(await dumpRebuild(t, admin, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: 2 }), await dumpCurrent(admin, s.prefix), 'rebuild equals live after the outage (nothing applied twice or skipped)');
  });
  t.test('a process that stops its service exits by itself: no connection to the cluster left open (BullMQ\'s shared ones included)', async (t) => {
    // Every role, in a process of its own that never calls process.exit: it ends only when nothing is left open.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stoat-cluster-exit-'));
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
    const code = `
      const { loadConfig } = await import(${JSON.stringify(moduleSpecifier('src/config.ts'))});
      const { startService } = await import(${JSON.stringify(moduleSpecifier('src/service.ts'))});
      const s = await startService(loadConfig());
      console.log('roles ' + s.config.roles.join(','));
      await s.stop();
      console.log('stopped');`;
    const { out, exited } = await runToExit(
      code,
      { ...process.env, REDIS_CLUSTER_NODES: cluster.seeds, REDIS_PREFIX: `exit-${process.pid}-`, DATA_DIR: dir, API_PORT: '0', MEDIA_PORT: '0', LOG_LEVEL: 'silent' },
      // A guard against a process that never exits, not a speed rule: under load (average 48) the start alone
      // outran 30 s (CONTRIBUTING "Tests on a busy machine").
      240_000,
    );
    t.match(out, /roles api,media,projector,worker/, 'every role ran');
    t.match(out, /stopped/, 'the service stopped');
    t.equal(exited, 0, 'the process exited by itself (within the 240 s hang guard)');
  });
  t.test('a client closed while its periodic slot refresh is in flight leaves no timer: the process exits (ioredis 5 re-armed it for ever)', async (t) => {
    for (const close of ['quit', 'disconnect'] as const) {
      // The refresh runs every 2 s; the client is closed in the turn it is seen in flight (`isRefreshing`, internal).
      const code = `
        const { createRedis, clusterUrl } = await import(${JSON.stringify(moduleSpecifier('src/redis.ts'))});
        const c = createRedis(clusterUrl(${JSON.stringify(cluster.seeds)}));
        await new Promise((r) => c.once('ready', r));
        const started = Date.now();
        while (!c.isRefreshing && Date.now() - started < 10_000) await new Promise((r) => setImmediate(r));
        console.log('in flight ' + c.isRefreshing);
        await Promise.resolve(c.${close}()).catch(() => undefined);
        console.log('closed');`;
      const { out, exited } = await runToExit(code, process.env, 20_000);
      t.match(out, /in flight true\nclosed/, `${close}: closed while a slot refresh was in flight`);
      t.equal(exited, 0, `${close}: the process exited by itself`);
    }
  });
});

t.test('3 masters with a replica each: a master killed under load fails over; no acknowledged write lost', { skip }, async (t) => {
  const cluster = await startRedisCluster(t, { masters: 3, replicasPerMaster: 1, nodeTimeoutMs: 1000 });
  const s = await startTestService(t, { REDIS_CLUSTER_NODES: cluster.seeds, RATE_LIMITS: 'off', PROJECTOR_PARTITIONS: '2', PROJECTION_WAIT_MS: '5000' });
  const admin: RedisClient = createRedis(s.config.redisUrl);
  t.teardown(() => admin.disconnect());
  const owner = await signup(s);
  const member = await signup(s);
  const srv = await createServer(owner, 'Failover');
  await join(owner, srv.general, member);
  const m = await connectReady(s, member.token);
  t.teardown(() => m.close());

  // Load: two writers send messages until told to stop; an acknowledged (200) message must survive.
  const acked: string[] = [];
  const statuses = new Map<number, number>();
  let stop = false;
  let n = 0;
  const writer = async (u: TestUser) => {
    while (!stop) {
      const r = await within('POST message', u.api.post(`/channels/${srv.general}/messages`, { content: `load ${n++}` }));
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (r.status === 200) acked.push(r.body._id);
      else if (r.status === 503) t.equal(r.body.type, 'InternalError', '503 carries a JSON error type');
      else t.fail(`unexpected ${r.status} ${r.text}`);
    }
  };
  const writers = [writer(owner), writer(member)];
  await until('some writes before the kill', () => acked.length >= 20, 60_000);

  const key = generationKey(s);
  const port = await cluster.masterOf(key);
  const ackedBefore = acked.length;
  await cluster.kill(port);
  await cluster.healthy(key, 60_000);
  t.not(await cluster.masterOf(key), port, 'a replica took over the generation\'s slot');
  await until('writes acknowledged after the failover', () => acked.length >= ackedBefore + 20, 90_000, 50);
  stop = true;
  await Promise.all(writers);
  t.notOk(statuses.has(500), `no 500 (answers: ${JSON.stringify(Object.fromEntries(statuses))})`);

  await waitServing(s, 60_000);
  const last = await owner.api.post(`/channels/${srv.general}/messages`, { content: 'the last one' });
  t.equal(last.status, 200);
  acked.push(last.body._id);
  await m.waitFor((e) => e.type === 'Message' && e._id === last.body._id, 30_000);
  const ids = await history(owner, srv.general);
  const have = new Set(ids);
  t.same(acked.filter((id) => !have.has(id)), [], `every acknowledged message (${acked.length}) is in the history`);
  t.equal(have.size, ids.length, 'no message twice');
  // A client made before the kill may still hold the dead master in its node list: compare through a fresh
  // one, as an operator's `npm run rebuild` after a failover would.
  const after: RedisClient = createRedis(s.config.redisUrl);
  t.teardown(() => after.disconnect());
  t.same(await dumpRebuild(t, after, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: 2 }), await dumpCurrent(after, s.prefix), 'rebuild equals live after the failover (exactly once)');
});

// Known leak (left open): after a master is killed, some Redis connection keeps retrying the dead node and holds
// the event loop, so this file would never exit. Every assertion above has run by then; end the process.
t.teardown(() => {
  const open = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles()
    .map((h) => (h as { remotePort?: number }).remotePort)
    .filter((port) => port !== undefined);
  if (open.length > 0) console.error(`# cluster test: sockets still open to ports ${open.join(',')}`);
  setTimeout(() => process.exit(process.exitCode ?? 0), 3000).unref();
});
