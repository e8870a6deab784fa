/**
 * Plumbing of the HTTP benchmarks: server processes (bench/serve.ts), autocannon runs, and setting up users,
 * a server and channels over the real API.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import autocannon from 'autocannon';

/** Memory of a server process, in bytes. */
export interface ServerMemory extends NodeJS.MemoryUsage {
  /** Peak resident set size of the process's own address space (VmHWM on Linux). */
  maxRss: number;
}

/** A running server process. */
export interface ServerProcess {
  urls: Record<string, string>;
  /** The process id (CPU times are read from /proc/<pid>). */
  pid: number;
  /** Its memory now (heap figures after a full GC when started with `--expose-gc`). */
  memory(): Promise<ServerMemory>;
  stop(): Promise<void>;
}

/** Starts `bench/serve.ts <mode>` with `env` (and node flags `nodeArgs`) and resolves with the URLs it prints. */
export function startServer(mode: 'service' | 'bare' | 'node' | 'floor' | 'ws', env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<ServerProcess> {
  const root = path.join(import.meta.dirname, '..');
  // BENCH_NODE_ARGS: extra node flags for the server process (e.g. `--cpu-prof` to profile it).
  const extra = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child: ChildProcess = spawn(process.execPath, [...extra, ...nodeArgs, '--import', 'tsx', 'bench/serve.ts', mode], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'error', ...env },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^BENCH (.*)$/m.exec(out);
      if (m) {
        resolve({
          urls: JSON.parse(m[1]!) as Record<string, string>,
          pid: child.pid!,
          memory: () =>
            new Promise<ServerMemory>((r) => {
              child.once('message', (msg) => r((msg as { memory: ServerMemory }).memory));
              child.send('memory');
            }),
          stop: () =>
            new Promise<void>((r) => {
              if (child.exitCode !== null) return r();
              child.once('exit', () => r());
              child.kill('SIGTERM');
              setTimeout(() => child.kill('SIGKILL'), 20_000).unref();
            }),
        });
      }
    });
    child.once('exit', (code) => reject(new Error(`bench server (${mode}) exited with ${code}: ${out.slice(-2000)}`)));
  });
}

/** Sends one JSON request; throws unless the status is `expect`. */
export async function call(url: string, method: string, token: string | undefined, body?: unknown, expect = 200): Promise<any> {
  const res = await fetch(url, {
    method,
    headers: { ...(token ? { 'X-Session-Token': token } : {}), ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (res.status !== expect) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

/** Waits until the API serves an authenticated request (read models caught up). */
export async function waitServing(apiUrl: string, token: string, timeoutMs = 600_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await fetch(`${apiUrl}/users/@me`, { headers: { 'X-Session-Token': token } }).catch(() => null);
    if (r?.status === 200) return;
    if (Date.now() > until) throw new Error('the service did not start serving');
    await new Promise((res) => setTimeout(res, 250));
  }
}

/** A user of the benchmark. */
export interface BenchUser {
  userId: string;
  token: string;
}

let n = 0;
/** Creates, logs in and onboards a user. */
export async function signupUser(apiUrl: string): Promise<BenchUser> {
  const id = `${process.pid}${Date.now().toString(36)}${++n}`;
  const email = `bench${id}@example.test`;
  const password = 'bench password 123';
  await call(`${apiUrl}/auth/account/create`, 'POST', undefined, { email, password }, 204);
  const login = await call(`${apiUrl}/auth/session/login`, 'POST', undefined, { email, password, friendly_name: 'bench' });
  await call(`${apiUrl}/onboard/complete`, 'POST', login.token, { username: `bench${id}`.slice(0, 32) });
  return { userId: login.user_id, token: login.token };
}

/** A server owned by `owner` with `channels` text channels (the first is "General"), joined by `members`. */
export async function setupServer(apiUrl: string, owner: BenchUser, channels: number, members: BenchUser[]): Promise<{ serverId: string; channels: string[] }> {
  const created = await call(`${apiUrl}/servers/create`, 'POST', owner.token, { name: 'Bench' });
  const ids: string[] = [created.channels[0]._id];
  while (ids.length < channels) ids.push((await call(`${apiUrl}/servers/${created.server._id}/channels`, 'POST', owner.token, { name: `c${ids.length}` }))._id);
  const invite = await call(`${apiUrl}/channels/${ids[0]}/invites`, 'POST', owner.token, {});
  for (const m of members) await call(`${apiUrl}/invites/${invite._id}`, 'POST', m.token, {});
  return { serverId: created.server._id, channels: ids };
}

/** One autocannon measurement. */
export interface Measured {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
}

/** Options of one measurement. */
export interface MeasureOptions {
  url: string;
  method: 'GET' | 'POST' | 'PUT';
  /** Called for each request: the path, headers and body to send. */
  next(): { path: string; headers?: Record<string, string>; body?: string };
  connections?: number;
  /** Seconds (default 5). */
  duration?: number;
  /** A fixed number of requests instead of a duration. */
  amount?: number;
}

/**
 * Runs autocannon at 50 connections (by default) and returns req/s and latency percentiles (ms). req/s is
 * responses ÷ the time from the start to the last response: autocannon's own `requests.average` is the mean
 * of whole-second buckets, and a run of a fixed `amount` only ends at the next bucket, so 3,000 requests done
 * in 1.3 s or in 1.9 s both read 1,500 req/s.
 */
export async function measure(o: MeasureOptions): Promise<Measured> {
  const t0 = performance.now();
  let last = t0;
  const run = autocannon({
    url: o.url,
    connections: o.connections ?? 50,
    ...(o.amount !== undefined ? { amount: o.amount } : { duration: o.duration ?? 5 }),
    requests: [
      {
        method: o.method,
        setupRequest: (req: any) => {
          const r = o.next();
          return { ...req, method: o.method, path: r.path, headers: { ...(req.headers ?? {}), ...(r.headers ?? {}) }, ...(r.body !== undefined ? { body: r.body } : {}) };
        },
      },
    ],
  }) as unknown as autocannon.Instance & PromiseLike<autocannon.Result>;
  run.on('response', () => {
    last = performance.now();
  });
  const result = await run;
  return {
    rps: result.requests.total / Math.max(0.001, (last - t0) / 1000),
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}



/** Throws when a measurement saw failures (a figure of errors is no figure). */
export function assertClean(what: string, m: Measured): Measured {
  if (m.non2xx > 0 || m.errors > 0) throw new Error(`${what}: ${m.non2xx} non-2xx answers and ${m.errors} errors in ${m.requests} requests`);
  return m;
}
