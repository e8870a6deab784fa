// The gateway across processes and under stress: two API processes both deliver (events, typing, logout),
// a socket that never reads is dropped while the others get every event, a socket that does not answer
// pings is dropped, and a socket that never authenticates is closed.
import t from 'tap';
import { partitionOf } from '../src/partition.ts';
import { nodeArgs } from '../src/built.ts';
import { DEFAULT_PERMISSION_SERVER, Permission as P } from '../src/permissions/bits.ts';
import { client, signup } from './helpers/http.ts';
import { createServer, join } from './helpers/servers.ts';
import { spawn } from 'node:child_process';
import { deletePrefix, startTestService, tempDir, TEST_REDIS_URL, uniquePrefix } from './helpers/service.ts';
import { connectReady, connectWs } from './helpers/ws.ts';
import { until } from './helpers/wait.ts';
import { gatewaySlowDropped } from '../src/metrics/registry.ts';

t.test('two API processes each deliver to their own sockets', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const other = await startTestService(t, { RATE_LIMITS: 'off', DATA_DIR: s.dataDir, REDIS_PREFIX: s.prefix, ROLES: 'api' });
  t.ok(other.gateway, 'the api-only process runs a gateway');
  t.notOk(other.projector, 'and no projector');
  const owner = await signup(s);
  const member = await signup(s);
  const srv = await createServer(owner);
  await join(owner, srv.general, member);

  const here = await connectReady(s, member.token);
  const there = await connectReady(other, member.token);
  const ownerThere = await connectReady(other, owner.token);
  t.same(there.frames[1]!.servers.map((x: any) => x._id), [srv.id], 'Ready on the second process');

  // An event written through the first process reaches sockets on both.
  await owner.api.patch(`/servers/${srv.id}`, { name: 'Both' });
  for (const c of [here, there, ownerThere]) t.match(await c.waitFor((e) => e.type === 'ServerUpdate'), { data: { name: 'Both' } });
  // And one written through the second process too.
  await client(other, owner.token).post(`/servers/${srv.id}/channels`, { name: 'from-other' });
  for (const c of [here, there]) t.match(await c.waitFor((e) => e.type === 'ChannelCreate'), { name: 'from-other' });

  // Typing on one process is relayed to viewers on the other (Redis pub/sub).
  ownerThere.send({ type: 'BeginTyping', channel: srv.general });
  t.same(await here.waitFor((e) => e.type === 'ChannelStartTyping'), { type: 'ChannelStartTyping', id: srv.general, user: owner.userId });

  // A logout through one process closes the session's sockets on both.
  await member.api.post('/auth/session/logout');
  for (const c of [here, there]) {
    await c.waitFor((e) => e.type === 'Logout');
    t.equal((await c.closed).code, 1000);
  }
  t.equal(ownerThere.ws.readyState, ownerThere.ws.OPEN, 'other users stay connected');
  ownerThere.close();
});

t.test('with several projector partitions, the gateway reads every partition\'s stream', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', PROJECTOR_PARTITIONS: '3' });
  const owner = await signup(s);
  // Ids are random: create servers until every partition has one.
  const servers = [];
  while (new Set(servers.map((x) => partitionOf(x.id, 3))).size < 3) {
    if (servers.length > 40) throw new Error('40 server ids, not in all three partitions');
    servers.push(await createServer(owner, `p${servers.length}`));
  }
  const c = await connectReady(s, owner.token);
  t.equal(c.frames[1]!.servers.length, servers.length);
  await Promise.all(servers.map((x) => owner.api.patch(`/servers/${x.id}`, { description: `d-${x.id}` })));
  for (const x of servers) t.ok(await c.waitFor((e) => e.type === 'ServerUpdate' && e.id === x.id), `partition ${partitionOf(x.id, 3)}: delivered`);
  // The account stream's partition too.
  await owner.api.patch('/users/@me', { display_name: 'Partitioned' });
  t.match(await c.waitFor((e) => e.type === 'UserUpdate'), { id: owner.userId, data: { display_name: 'Partitioned' } });
  c.close();
});

t.test('a socket that never reads is dropped; the others get every event', async (t) => {
  // The paused socket cannot answer pings either: with the default 30 s heartbeat it was dropped as dead
  // before it was dropped as slow when the toggles below took over a minute (load average ~35, issue 40).
  // The heartbeat has its own test; here it is out of the way (the largest value the config accepts).
  const s = await startTestService(t, { RATE_LIMITS: 'off', GATEWAY_MAX_BUFFERED_BYTES: String(64 * 1024), GATEWAY_HEARTBEAT_MS: '600000' });
  const owner = await signup(s);
  const member = await signup(s);
  const srv = await createServer(owner);
  await join(owner, srv.general, member);
  // A burst big enough to pass the kernel's socket buffers (~4 MB on loopback): each time the server default
  // permissions give ViewChannel back, every member socket gets ChannelCreate for 100 channels of ~4 KB.
  const big = '😀'.repeat(1000);
  for (let i = 0; i < 100; i += 10) {
    await Promise.all(Array.from({ length: 10 }, (_, k) => owner.api.post(`/servers/${srv.id}/channels`, { name: `c${i + k}`, description: big })));
  }
  const healthy = await connectReady(s, member.token);
  const slow = await connectReady(s, member.token);
  t.equal(slow.frames[1]!.channels.length, 101);
  // Stop reading: the kernel buffers fill, then the gateway's unsent data grows past the limit.
  (slow.ws as unknown as { _socket: { pause(): void } })._socket.pause();
  const slowBefore = (await gatewaySlowDropped.get()).values[0]?.value ?? 0;

  const hide = Number(DEFAULT_PERMISSION_SERVER & ~P.ViewChannel);
  const show = Number(DEFAULT_PERMISSION_SERVER);
  const updates = () => healthy.events.filter((e) => e.type === 'ServerUpdate' && 'default_permissions' in e.data);
  let toggles = 0;
  while (s.gateway!.stats.dropped.slow === 0 && toggles < 60) {
    for (const permissions of [hide, show]) {
      const r = await owner.api.put(`/servers/${srv.id}/permissions/default`, { permissions });
      if (r.status !== 200) throw new Error(`${r.status} ${r.text}`);
    }
    toggles++;
    // Each toggle is delivered before the next (the gateway delivers an event to every socket before the
    // next event), so the loop counts bytes sent at the slow socket, not requests ahead of a lagging delivery.
    await until(`toggle ${toggles} delivered to the healthy socket`, () => updates().length === 2 * toggles);
  }
  await until('the slow socket is dropped', () => s.gateway!.stats.dropped.slow === 1);
  t.equal(s.gateway!.stats.dropped.dead, 0, 'dropped as slow, not for a missed heartbeat');
  t.equal((await gatewaySlowDropped.get()).values[0]!.value, slowBefore + 1, 'gateway_slow_sockets_dropped_total counted it');
  t.ok(toggles >= 5, `dropped after ${toggles} toggles (more than the kernel buffers hold)`);
  // The healthy socket got every event, in order: each hide removed the 101 channels, each show brought them back.
  await until('every ServerUpdate reached the healthy socket', () => updates().length === 2 * toggles);
  t.same(updates().map((e) => e.data.default_permissions), Array.from({ length: 2 * toggles }, (_, i) => (i % 2 ? show : hide)));
  t.equal(healthy.events.filter((e) => e.type === 'ChannelCreate').length, 101 * toggles);
  t.equal(healthy.events.filter((e) => e.type === 'ChannelDelete').length, 101 * toggles);
  t.equal(healthy.ws.readyState, healthy.ws.OPEN);
  t.equal(s.gateway!.stats.connections, 1, 'only the healthy socket is left');
  // Once it reads again, the slow client finds its connection cut.
  (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
  const closed = await slow.closed;
  t.not(closed.code, 1000, `cut, not closed normally (${closed.code})`);
  healthy.close();
});

t.test('heartbeat: a socket that does not answer pings is dropped; authentication has a deadline', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', GATEWAY_HEARTBEAT_MS: '300', GATEWAY_AUTH_TIMEOUT_MS: '500' });
  const u = await signup(s);
  const live = await connectReady(s, u.token);
  const dead = await connectReady(s, u.token, { autoPong: false });
  const closed = await dead.closed;
  t.equal(closed.code, 1006, 'cut without a closing handshake');
  t.equal(s.gateway!.stats.dropped.dead, 1);
  // The live socket has answered several pings by now and is still there, receiving events.
  await u.api.patch('/users/@me', { status: { text: 'still here' } });
  await live.waitFor((e) => e.type === 'UserUpdate' && e.data?.status?.text === 'still here');
  t.equal(live.ws.readyState, live.ws.OPEN);

  const silent = connectWs(s);
  await silent.closed;
  t.same(silent.frames, [{ type: 'Error', data: { type: 'InvalidSession' } }], 'no Authenticate in time');
  live.close();
});

t.test('SIGTERM: the process closes its sockets with 1001 and exits 0', async (t) => {
  const dir = tempDir(t);
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const env = { ...process.env, API_PORT: '0', MEDIA_PORT: '0', HOST: '127.0.0.1', DATA_DIR: dir, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix, LOG_LEVEL: 'info', RATE_LIMITS: 'off' };
  const child = spawn(process.execPath, nodeArgs('src/main.ts'), { env, stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let out = '';
  const apiUrl = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)","msg":"api listening"/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.on('exit', () => reject(new Error('exited early: ' + out)));
  });
  await until('the service started', () => out.includes('"msg":"service started"'), 30_000);
  let u;
  for (let i = 0; ; i++) {
    try {
      u = await signup({ apiUrl });
      break;
    } catch (err) {
      if (i > 100) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const c = await connectReady({ apiUrl }, u.token);
  const started = Date.now();
  child.kill('SIGTERM');
  const closed = await c.closed;
  t.equal(closed.code, 1001, 'going away');
  const code = await new Promise((r) => (child.exitCode !== null ? r(child.exitCode) : child.on('exit', r)));
  t.equal(code, 0, 'exit code 0');
  t.ok(Date.now() - started < 9000, `stopped in ${Date.now() - started} ms, not at the 10 s cut`);
  t.notOk(out.includes('"level":50'), 'no error logged');
});
