/**
 * A/B of the send path between two checkouts: `node --import tsx bench/ab.ts <dir A> <dir B> [rounds]` starts
 * the service from each directory (both need their node_modules), gives each the bench's users and channels,
 * then alternates 4 s rounds of the send bench's load between them (A B, B A, …) so that the machine's noise
 * falls on both alike. Prints, per side, sends/s of each round and the medians of sends/s and of the CPU spent
 * per send by the service's main thread, its other threads (GC helpers, the search indexer) and Redis, read
 * from /proc (Linux only). Node flags for both services: AB_NODE_ARGS; for one side only: AB_NODE_ARGS_A,
 * AB_NODE_ARGS_B (the same checkout twice then compares flags). AB_MODE=history measures 100-message history
 * pages instead of sends. Also prints the median p99 and the load generator's own CPU per request (this
 * process). Not part of `npm run bench`.
 */
import path from 'node:path';
import os from 'node:os';
import fs from 'node:fs';
import { spawn, execSync } from 'node:child_process';
import { call, measure, setupServer, signupUser, type BenchUser } from './http.ts';
import { SEND_BODY } from './send.ts';
import { deletePrefix } from '../test/helpers/service.ts';
const HZ = 100;
const MODE = process.env.AB_MODE ?? 'send';
const METHOD = MODE === 'history' ? 'GET' : 'POST';
const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
function threads(pid: number): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    const st = fs.readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    const key = t === String(pid) ? 'main' : 'other';
    m.set(key, (m.get(key) ?? 0) + Number(f[11]) + Number(f[12]));
  }
  return m;
}
const redisPid = Number(execSync('pgrep -n redis-server').toString().trim());
async function start(dir: string, label: string) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ab-'));
  const prefix = `ab:${label}:${process.pid}:`;
  const nodeArgs = (process.env[`AB_NODE_ARGS_${label}`] ?? process.env.AB_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'bench/serve.ts', 'service'], { cwd: dir, env: { ...process.env, LOG_LEVEL: 'error', ROLES: 'api,projector', RATE_LIMITS: 'off', API_PORT: '0', HOST: '127.0.0.1', DATA_DIR: path.join(tmp, 'data'), REDIS_URL: REDIS, REDIS_PREFIX: prefix }, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const url = await new Promise<string>((resolve) => { let out = ''; child.stdout!.on('data', (d) => { out += d; const m = /^BENCH (.*)$/m.exec(out); if (m) resolve(JSON.parse(m[1]!).apiUrl); }); });
  const users: BenchUser[] = [];
  for (let i = 0; i < 10; i++) users.push(await signupUser(url));
  const { channels } = await setupServer(url, users[0]!, 20, users.slice(1));
  let i = 0;
  const send = () => { const u = users[i % users.length]!; const c = channels[Math.floor(i / users.length) % channels.length]!; i++; return { path: `/channels/${c}/messages`, headers: { 'X-Session-Token': u.token, 'Content-Type': 'application/json' }, body: SEND_BODY }; };
  // AB_MODE=history: 100-message pages of a channel of 1,000 messages, the newest page and pages before
  // random messages alternating (as the history bench reads).
  const ids: string[] = [];
  if (MODE === 'history') {
    for (let k = 0; k < 1000; k++) ids.push(((await call(`${url}/channels/${channels[0]}/messages`, 'POST', users[0]!.token, JSON.parse(SEND_BODY))) as { _id: string })._id);
  }
  const page = () => { i++; return { path: `/channels/${channels[0]}/messages?limit=100${i % 2 ? '' : `&before=${ids[(i * 7919) % ids.length]}`}`, headers: { 'X-Session-Token': users[0]!.token } }; };
  const next = MODE === 'history' ? page : send;
  const stop = async () => {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    await deletePrefix(REDIS, prefix);
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  return { label, url, next, pid: child.pid!, stop, res: [] as Array<{ rps: number; p99: number; main: number; other: number; redis: number; loadgen: number }> };
}
const A = await start(process.argv[2]!, 'A');
const B = await start(process.argv[3]!, 'B');
for (const s of [A, B]) await measure({ url: s.url, method: METHOD, next: s.next, duration: 3 });
const rounds = Number(process.argv[4] ?? 5);
for (let r = 0; r < rounds; r++) for (const s of r % 2 ? [B, A] : [A, B]) {
  const a = threads(s.pid), r0 = threads(redisPid), g0 = process.cpuUsage();
  const res = await measure({ url: s.url, method: METHOD, next: s.next, duration: 4 });
  const b = threads(s.pid), r1 = threads(redisPid), g1 = process.cpuUsage(g0);
  const per = (k: string, x: Map<string, number>, y: Map<string, number>) => (((y.get(k) ?? 0) - (x.get(k) ?? 0)) / HZ) * 1e6 / res.requests;
  s.res.push({ rps: res.rps, p99: res.p99, main: per('main', a, b), other: per('other', a, b), redis: per('main', r0, r1) + per('other', r0, r1), loadgen: (g1.user + g1.system) / res.requests });
}
const med = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]!; };
for (const s of [A, B]) console.log(`${s.label} ${process.argv[s === A ? 2 : 3]}: rps ${s.res.map((x) => Math.round(x.rps)).join(' ')} | median rps ${Math.round(med(s.res.map((x) => x.rps)))}, p99 ms ${med(s.res.map((x) => x.p99))}, main µs/request ${med(s.res.map((x) => x.main)).toFixed(0)}, other threads ${med(s.res.map((x) => x.other)).toFixed(0)}, redis ${med(s.res.map((x) => x.redis)).toFixed(0)}, load generator ${med(s.res.map((x) => x.loadgen)).toFixed(0)}`);
await Promise.all([A.stop(), B.stop()]);
