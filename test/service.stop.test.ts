// A stopped service leaves nothing behind that keeps its process alive: a process that starts the service,
// serves a request on a kept-alive connection and stops it, exits on its own (no process.exit). A request
// still in flight SHUTDOWN_DRAIN_MS after the stop began is cut.
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import t from 'tap';
import { moduleSpecifier, scriptNodeArgs } from '../src/built.ts';
import { deletePrefix, startTestService, tempDir, TEST_REDIS_URL, uniquePrefix } from './helpers/service.ts';

const script = `
import { loadConfig } from ${JSON.stringify(moduleSpecifier('src/config.ts'))};
import { createLogger } from ${JSON.stringify(moduleSpecifier('src/log.ts'))};
import { startService } from ${JSON.stringify(moduleSpecifier('src/service.ts'))};
const s = await startService(loadConfig(), { log: createLogger('silent') });
const r = await fetch(s.apiUrl + '/', { keepalive: true });
await r.text();
await s.stop();
// Outlive the stop's grace period, as a test's teardown does.
await new Promise((res) => setTimeout(res, 1500));
console.log('stopped');
`;

t.test('the process of a stopped service exits by itself', async (t) => {
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const env = { ...process.env, API_PORT: '0', MEDIA_PORT: '0', HOST: '127.0.0.1', DATA_DIR: tempDir(t), REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix, LOG_LEVEL: 'silent' };
  const child = spawn(process.execPath, [...scriptNodeArgs(), '--input-type=module', '-e', script], { cwd: path.join(import.meta.dirname, '..'), env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 240_000);
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  clearTimeout(timer);
  t.match(out, /stopped/, 'the service stopped');
  t.equal(code, 0, 'and the process exited on its own (not killed after 240 s)');
});

t.test('a request still in flight SHUTDOWN_DRAIN_MS after the stop began is cut', async (t) => {
  const s = await startTestService(t, { SHUTDOWN_DRAIN_MS: '1500', RATE_LIMITS: 'off' });
  // A sign-up whose body never ends: the request stays in flight until the server cuts it.
  const req = http.request(`${s.apiUrl}/auth/account/create`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '1000' } });
  const ended = new Promise<string>((resolve) => {
    req.on('error', (e: Error & { code?: string }) => resolve(`error ${e.code ?? e.message}`));
    req.on('response', (res) => resolve(`status ${res.statusCode}`));
  });
  const received = new Promise((r) => s.apiServer!.once('request', r));
  req.write('{"email":');
  await received;
  const started = Date.now();
  let stopped = false;
  const stop = s.stop().then(() => (stopped = true));
  t.match(await ended, /^error /, 'the request is cut, not answered');
  const ms = Date.now() - started;
  t.ok(ms >= 1400, `not before SHUTDOWN_DRAIN_MS (${ms} ms)`);
  t.ok(ms < 9000, `cut at SHUTDOWN_DRAIN_MS, not at the default ten seconds (${ms} ms)`);
  await stop;
  t.ok(stopped, 'and the stop completes');
});
