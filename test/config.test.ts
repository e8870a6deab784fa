import { spawn } from 'node:child_process';
import http from 'node:http';
import t from 'tap';
import { nodeArgs } from '../src/built.ts';
import { ConfigError, loadConfig } from '../src/config.ts';
import { TEST_REDIS_URL, tempDir, uniquePrefix, deletePrefix } from './helpers/service.ts';
import { until, WAIT_MS } from './helpers/wait.ts';

t.test('defaults', async (t) => {
  const c = loadConfig({});
  t.equal(c.apiPort, 14702);
  t.equal(c.mediaPort, 14704);
  t.equal(c.serverChannelLimit, 200);
  t.equal(c.rateLimits, true, 'rate limits are on by default');
  t.same(c.roles, ['api', 'media', 'projector', 'worker']);
  t.equal(c.eventStoreUrl, undefined, 'embedded SQLite by default');
  t.equal(c.mediaPublicUrl, 'http://127.0.0.1:14704');
  t.equal(c.wsPublicUrl, 'ws://127.0.0.1:14702/ws');
  t.equal(c.uploadIdleTimeoutMs, 30_000, 'an upload body may pause 30 s');
  t.equal(c.uploadBodyTimeoutMs, 600_000, 'and take 10 min in all');
  t.equal(c.shutdownDrainMs, 10_000, 'requests in flight at a stop get 10 s');
  t.equal(loadConfig({ SHUTDOWN_DRAIN_MS: '100' }).shutdownDrainMs, 100, 'at least 100 ms (99 is refused below)');
  t.equal(c.detachedFileRetentionMs, 7 * 86_400_000, 'a detached file\'s bytes are kept 7 days');
  t.equal(loadConfig({ DETACHED_FILE_RETENTION_MS: '0' }).detachedFileRetentionMs, 0, '0: purged at the next sweep');
  t.equal(c.sqliteCommitDelayMs, 1, 'a group may wait 1 ms for announced appends');
  t.equal(loadConfig({ SQLITE_COMMIT_DELAY_MS: '100' }).sqliteCommitDelayMs, 100, 'at most 100 ms (100.5 and -1 are refused below)');
  t.equal(loadConfig({ SQLITE_COMMIT_DELAY_MS: '0' }).sqliteCommitDelayMs, 0, '0: never held');
});

t.test('REDIS_CLUSTER_NODES selects a Redis Cluster; REDIS_URL is then not used', async (t) => {
  const c = loadConfig({ REDIS_URL: 'redis://single:6379', REDIS_CLUSTER_NODES: ' 10.0.0.1:7000, redis-b.local:7001,[::1]:7002 ' });
  t.equal(c.redisUrl, 'redis-cluster://10.0.0.1:7000,redis-b.local:7001,[::1]:7002', 'the seed nodes, normalised');
  t.equal(loadConfig({ REDIS_URL: 'redis://single:6379' }).redisUrl, 'redis://single:6379', 'without it: REDIS_URL');
});

t.test('a bad value names the variable in one line', async (t) => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ API_PORT: 'abc' }, 'API_PORT'],
    [{ API_PORT: '70000' }, 'API_PORT'],
    [{ ROLES: 'api,chef' }, 'ROLES'],
    [{ RATE_LIMITS: 'maybe' }, 'RATE_LIMITS'],
    [{ REDIS_URL: 'not a url' }, 'REDIS_URL'],
    [{ REDIS_CLUSTER_NODES: 'redis.local' }, 'REDIS_CLUSTER_NODES'],
    [{ REDIS_CLUSTER_NODES: '10.0.0.1:7000,10.0.0.2:70000' }, 'REDIS_CLUSTER_NODES'],
    [{ REDIS_CLUSTER_NODES: '10.0.0.1:7000,,redis://x:1' }, 'REDIS_CLUSTER_NODES'],
    [{ EVENTSTORE_URL: 'http://x' }, 'EVENTSTORE_URL'],
    [{ SQLITE_COMMIT_DELAY_MS: '100.5' }, 'SQLITE_COMMIT_DELAY_MS'],
    [{ SQLITE_COMMIT_DELAY_MS: '-1' }, 'SQLITE_COMMIT_DELAY_MS'],
    [{ VOICE_ENABLED: 'true' }, 'LIVEKIT_URL'],
    [{ VOICE_ENABLED: 'true', LIVEKIT_URL: 'wss://lk.example' }, 'LIVEKIT_API_KEY'],
    [{ VOICE_ENABLED: 'true', LIVEKIT_URL: 'wss://lk.example', LIVEKIT_API_KEY: 'k' }, 'LIVEKIT_API_SECRET'],
    [{ VOICE_ENABLED: 'true', LIVEKIT_API_KEY: 'k', LIVEKIT_API_SECRET: 's'.repeat(32) }, 'LIVEKIT_URL'],
    [{ VOICE_ENABLED: 'true', LIVEKIT_URL: 'wss://lk.example', LIVEKIT_API_KEY: 'k', LIVEKIT_API_SECRET: 's'.repeat(31) }, 'LIVEKIT_API_SECRET'],
    [{ VOICE_ENABLED: 'true', LIVEKIT_URL: 'ftp://lk.example', LIVEKIT_API_KEY: 'k', LIVEKIT_API_SECRET: 's'.repeat(32) }, 'LIVEKIT_URL'],
    [{ VOICE_ENABLED: 'sometimes' }, 'VOICE_ENABLED'],
    [{ PROJECTOR_PARTITIONS: '2', PROJECTOR_PARTITION: '2' }, 'PROJECTOR_PARTITION'],
    [{ SERVER_CHANNEL_LIMIT: '0' }, 'SERVER_CHANNEL_LIMIT'],
    [{ UPLOAD_IDLE_TIMEOUT_MS: '99' }, 'UPLOAD_IDLE_TIMEOUT_MS'],
    [{ UPLOAD_IDLE_TIMEOUT_MS: 'soon' }, 'UPLOAD_IDLE_TIMEOUT_MS'],
    [{ UPLOAD_BODY_TIMEOUT_MS: '3600001' }, 'UPLOAD_BODY_TIMEOUT_MS'],
    [{ SHUTDOWN_DRAIN_MS: '99' }, 'SHUTDOWN_DRAIN_MS'],
    [{ SHUTDOWN_DRAIN_MS: '600001' }, 'SHUTDOWN_DRAIN_MS'],
    [{ UPLOAD_IDLE_TIMEOUT_MS: '5001', UPLOAD_BODY_TIMEOUT_MS: '5000' }, 'UPLOAD_IDLE_TIMEOUT_MS'],
    [{ DETACHED_FILE_RETENTION_MS: '-1' }, 'DETACHED_FILE_RETENTION_MS'],
    [{ DETACHED_FILE_RETENTION_MS: 'a week' }, 'DETACHED_FILE_RETENTION_MS'],
    [{ DETACHED_FILE_RETENTION_MS: String(3650 * 86_400_000 + 1) }, 'DETACHED_FILE_RETENTION_MS'],
  ];
  for (const [env, name] of cases) {
    t.throws(() => loadConfig(env), ConfigError);
    try {
      loadConfig(env);
    } catch (err) {
      const msg = (err as Error).message;
      t.ok(msg.includes(name), `${JSON.stringify(env)} → "${msg}"`);
      t.notOk(msg.includes('\n'), 'one line');
    }
  }
});

t.test('a secret is not repeated in the error line', async (t) => {
  const secret = 'too-short-but-secret';
  const err = t.throws(() => loadConfig({ VOICE_ENABLED: 'true', LIVEKIT_URL: 'wss://lk.example', LIVEKIT_API_KEY: 'k', LIVEKIT_API_SECRET: secret }));
  t.match(String(err), /LIVEKIT_API_SECRET/);
  t.notOk(String(err).includes(secret), String(err));
});

t.test('voice settings: all three LiveKit variables exactly when voice is on', async (t) => {
  const livekit = { LIVEKIT_URL: 'wss://lk.example', LIVEKIT_API_KEY: 'key', LIVEKIT_API_SECRET: 's'.repeat(32) };
  t.strictSame(loadConfig({}).voice, { enabled: false }, 'off by default');
  t.strictSame(loadConfig({ VOICE_ENABLED: 'true', ...livekit }).voice, { enabled: true, url: 'wss://lk.example', apiKey: 'key', apiSecret: 's'.repeat(32) });
  t.strictSame(loadConfig({ VOICE_ENABLED: 'false', ...livekit }).voice, { enabled: false }, 'off: the LiveKit settings are not used');
  t.strictSame(loadConfig({ VOICE_ENABLED: 'true', ...livekit, LIVEKIT_URL: 'https://lk.example' }).voice.enabled, true, 'an https URL is fine too');
});

t.test('VOICE_ENABLED without LiveKit stops the process: one line naming the variable, exit code 1', async (t) => {
  const env = { ...process.env, VOICE_ENABLED: 'true', LIVEKIT_URL: '', LIVEKIT_API_KEY: '', LIVEKIT_API_SECRET: '' };
  const child = spawn(process.execPath, nodeArgs('src/main.ts'), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise((r) => child.on('exit', r));
  t.equal(code, 1);
  t.equal(err.trim().split('\n').length, 1, 'one line');
  t.match(err, /LIVEKIT_URL/);
});

t.test('the process stops with that line and exit code 1', async (t) => {
  const child = spawn(process.execPath, nodeArgs('src/main.ts'), { env: { ...process.env, API_PORT: 'nope' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise((r) => child.on('exit', r));
  t.equal(code, 1);
  t.equal(err.trim().split('\n').length, 1);
  t.match(err, /API_PORT/);
});

t.test('SIGTERM drains in-flight requests, then exits 0', async (t) => {
  const dir = tempDir(t);
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const env = { ...process.env, API_PORT: '0', MEDIA_PORT: '0', HOST: '127.0.0.1', DATA_DIR: dir, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix, LOG_LEVEL: 'info', RATE_LIMITS: 'off',
    // The twenty sign-ups (scrypt each) may take longer than the default ten seconds on a loaded machine;
    // this test is about draining, not about the cut.
    SHUTDOWN_DRAIN_MS: '300000' };
  const child = spawn(process.execPath, nodeArgs('src/main.ts'), { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)","msg":"api listening"/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.on('exit', () => reject(new Error('exited early: ' + out)));
  });
  // Wait until it serves (bounded by time: 200 tries of 25 ms, 5 s, a loaded machine can outrun, and the test
  // went on unserved), then fire sign-ups and SIGTERM while they are in flight.
  await until('the service to serve', async () => (await fetch(url + '/users/@me').catch(() => null))?.status === 401, WAIT_MS, 25);
  // Twenty keep-alive connections are opened (and used once) first, so every request below is on a
  // connection the server has accepted: those requests must complete although SIGTERM arrives while they
  // are being handled. (A connection still in the kernel's accept queue when the listener closes is reset
  // by the kernel; that is not an in-flight request, and this setup keeps it out of the test.)
  const agent = new http.Agent({ keepAlive: true, maxSockets: 20 });
  t.teardown(() => agent.destroy());
  const call = (method: string, path: string, body?: string) =>
    new Promise<string>((resolve) => {
      const req = http.request(url + path, { method, agent, headers: body ? { 'content-type': 'application/json' } : {} }, (res) => {
        res.resume();
        res.on('end', () => resolve(`status ${res.statusCode}`));
      });
      req.on('error', (e: Error & { code?: string }) => resolve(`error ${e.code ?? e.message}`));
      req.end(body);
    });
  await Promise.all(Array.from({ length: 20 }, () => call('GET', '/')));
  const inflight = Array.from({ length: 20 }, (_, i) =>
    call('POST', '/auth/account/create', JSON.stringify({ email: `drain${i}@example.test`, password: 'long enough password' })),
  );
  await new Promise((r) => setTimeout(r, 50));
  child.kill('SIGTERM');
  const code = await new Promise((r) => child.on('exit', r));
  const results = await Promise.all(inflight);
  t.equal(code, 0, 'exit code 0');
  t.match(out, /"msg":"stopping"/);
  t.comment(`outcomes: ${results.join(', ')}`);
  t.ok(results.some((r) => r === 'status 204'), 'in-flight requests completed');
  t.notOk(results.some((r) => /status 5/.test(r)), 'no 5xx during shutdown');
  t.same(results.filter((r) => r !== 'status 204'), [], 'every request on an accepted connection completed');
  t.notOk(out.includes('"level":50'), 'no error logged during shutdown');
});

t.test('EVENTSTORE_URL selects the engine by scheme', async (t) => {
  for (const url of ['kurrentdb://h:2113?tls=false', 'kurrent://h:2113?tls=false', 'kurrent+discover://h:2113', 'esdb://h:2113', 'postgres://u@h:5432/db', 'postgresql://u@h/db?schema=stoat']) {
    t.equal(loadConfig({ EVENTSTORE_URL: url }).eventStoreUrl, url, url);
  }
  for (const url of ['mysql://h/db', 'sqlite:/tmp/x', 'kurrentdbx://h']) t.throws(() => loadConfig({ EVENTSTORE_URL: url }), ConfigError, url);
});
