// Finds a Redis for the service and the tests (DESIGN §4 "Redis on a fresh machine"): the one at
// REDIS_URL when it answers, else a private `redis-server` on its own port and folder, started here.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/** Sends PING to host:port; resolves true on +PONG (or a NOAUTH answer: a server is there). */
export function ping(host, port, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    const done = (ok) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.on('error', () => done(false));
    sock.on('connect', () => sock.write('PING\r\n'));
    sock.on('data', (d) => done(/^(\+PONG|-NOAUTH)/.test(d.toString())));
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** True when the `redis-server` binary is on PATH. */
export function haveRedisServer() {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** The one line printed when Redis is needed but cannot be had. */
export const INSTALL_HINT =
  'redis-server is not installed and no Redis answers at REDIS_URL: install it with `sudo apt-get install -y redis-server` (Debian/Ubuntu) or `brew install redis` (macOS), or set REDIS_URL.';

/**
 * Starts a private redis-server in `dir` on a free port (or `port`). Resolves `{url, port, stop}` when it
 * answers PING. Nothing is persisted unless `persist` is set.
 */
export async function startPrivateRedis({ dir, port, persist = false } = {}) {
  port ??= await freePort();
  dir ??= path.resolve('.redis-' + port);
  fs.mkdirSync(dir, { recursive: true });
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--daemonize', 'no', '--logfile', ''];
  if (!persist) args.push('--save', '', '--appendonly', 'no');
  else args.push('--appendonly', 'yes', '--appendfsync', 'everysec');
  const child = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'inherit'] });
  let exited = false;
  child.on('exit', () => (exited = true));
  for (let i = 0; i < 200; i++) {
    if (exited) throw new Error(`redis-server exited while starting on port ${port}`);
    if (await ping('127.0.0.1', port, 200)) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  const stop = () =>
    new Promise((resolve) => {
      if (exited) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  return { url: `redis://127.0.0.1:${port}`, port, dir, child, stop };
}

/**
 * Resolves the Redis to use: `{url, stop}`. When nothing answers at `url`, starts a private server
 * under `dir`; when the binary is missing, prints INSTALL_HINT and exits 1.
 */
export async function ensureRedis(url, dir) {
  const u = new URL(url);
  const port = Number(u.port || 6379);
  if (await ping(u.hostname, port)) return { url, stop: async () => {}, private: false };
  if (!haveRedisServer()) {
    console.error(INSTALL_HINT);
    process.exit(1);
  }
  const r = await startPrivateRedis({ dir });
  console.error(`no Redis answered at ${url}; started a private redis-server at ${r.url} (folder ${r.dir})`);
  return { url: r.url, stop: r.stop, private: true };
}
