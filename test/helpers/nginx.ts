/**
 * Debian's nginx for tests: `requireNginx()` fails with a clear message where it is missing (.ci/run installs
 * it), `freePort()` finds a loopback port for it to listen on, and `runNginx()` starts a configuration exactly as
 * the README says (`nginx -p DIR -c DIR/nginx.conf`, which daemonizes) and stops it (`-s quit`) at teardown.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Teardownable } from './service.ts';
import { tempDir } from './service.ts';
import { until, WAIT_MS } from './wait.ts';

/** The nginx binary (Debian installs it in /usr/sbin, which a non-root PATH may lack). */
export function nginxBinary(): string {
  for (const candidate of ['nginx', '/usr/sbin/nginx']) {
    if (spawnSync(candidate, ['-v'], { stdio: 'ignore' }).status === 0) return candidate;
  }
  throw new Error('nginx is not installed: `apt-get install -y nginx-light` (.ci/run installs it when missing)');
}

/** A loopback port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** A running nginx: its prefix directory. */
export interface RunningNginx {
  dir: string;
}

/** `nginx -t` of `conf` in a fresh prefix: its exit status and output. */
export function nginxTest(t: Teardownable, conf: string): { status: number | null; output: string } {
  const dir = tempDir(t, 'stoat-nginx-t');
  fs.writeFileSync(path.join(dir, 'nginx.conf'), conf);
  const r = spawnSync(nginxBinary(), ['-t', '-p', dir, '-c', path.join(dir, 'nginx.conf')], { encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** Starts `conf` with `nginx -p DIR -c DIR/nginx.conf` and waits until `readyUrl` answers at all (nginx is up); quits it at teardown. */
export async function runNginx(t: Teardownable, conf: string, readyUrl: string): Promise<RunningNginx> {
  const bin = nginxBinary();
  const dir = tempDir(t, 'stoat-nginx');
  // Worker processes run as an unprivileged user when nginx starts as root: they must reach the prefix.
  fs.chmodSync(dir, 0o755);
  const file = path.join(dir, 'nginx.conf');
  fs.writeFileSync(file, conf);
  const pidFile = path.join(dir, 'nginx.pid');
  t.teardown(async () => {
    spawnSync(bin, ['-p', dir, '-c', file, '-s', 'quit'], { stdio: 'ignore' });
    // A master that does not quit within the wait is killed by its pid (the one this test started).
    const gone = await until('nginx to quit', () => !fs.existsSync(pidFile) || '', 10_000).catch(() => false);
    if (!gone && fs.existsSync(pidFile)) {
      const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
      if (pid > 0) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  });
  const started = spawnSync(bin, ['-p', dir, '-c', file], { encoding: 'utf8' });
  if (started.status !== 0) throw new Error(`nginx did not start (${started.status}): ${started.stderr}`);
  await until(`nginx to answer ${readyUrl}`, async () => {
    try {
      const r = await fetch(readyUrl);
      await r.arrayBuffer();
      return true;
    } catch {
      return false;
    }
  }, WAIT_MS, 50);
  return { dir };
}
