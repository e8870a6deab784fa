/**
 * `node --import tsx bench/profileSend.ts [default|split] [sends]`: a CPU profile (`node --cpu-prof`) of every
 * service process under the `footprint` bench's send load (300-byte messages into 20 channels of one server,
 * 50 connections), on a private redis-server. Prints, per process, its CPU per send (/proc) and where its
 * main thread's samples went: by package or source file (self time), and the heaviest functions. The
 * profiles stay in the printed directory for Chrome DevTools. A tool for finding costs, not a bench row.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { startPrivateRedis } from '../scripts/redis.mjs';
import { measure, startServer, type ServerProcess } from './http.ts';
import { env, load } from './footprint.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const ticks = (pid: number) => {
  const st = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};

/** Where a frame's code lives: a package under node_modules, a project file, node itself, or a VM state. */
function place(url: string, fn: string): string {
  if (!url) return `(${fn || 'anonymous'})`;
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return url;
  const root = path.join(import.meta.dirname, '..');
  return url.replace(`file://${root}/`, '');
}

function summarise(file: string, sends: number, windowUs: number): string[] {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  // Only the samples of the measured sends (the last `windowUs` of the profile: the process stopped right after).
  let at = p.startTime;
  const from = p.endTime - windowUs;
  p.samples.forEach((id, i) => {
    at += p.timeDeltas[i] ?? 0;
    if (at >= from) self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
  });
  const byPlace = new Map<string, number>();
  const byFn = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const pl = place(n.callFrame.url, n.callFrame.functionName);
    if (pl === '((idle))' || pl === '((program))') continue;
    busy += us;
    byPlace.set(pl, (byPlace.get(pl) ?? 0) + us);
    const fn = `${n.callFrame.functionName || '(anonymous)'} ${pl}:${n.callFrame.lineNumber + 1}`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + us);
  }
  const top = (m: Map<string, number>, k: number) =>
    [...m].sort((a, b) => b[1] - a[1]).slice(0, k).map(([name, us]) => `    ${(us / sends).toFixed(1).padStart(6)} µs/send ${((100 * us) / busy).toFixed(1).padStart(5)} %  ${name}`);
  return [`  thread busy (sampled, idle and program excluded; GC included): ${(busy / sends).toFixed(0)} µs/send`, '  by place (self time):', ...top(byPlace, 18), '  by function (self time):', ...top(byFn, 25)];
}

const mode = process.argv[2] ?? 'split';
const sends = Number(process.argv[3] ?? 6000);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-send-'));
const redisSrv = await startPrivateRedis({ dir: path.join(tmp, 'redis') });
const prefix = `prof:${randomBytes(3).toString('hex')}:`;
const roles = mode === 'split' ? ['projector', 'worker', 'media', 'api'] : mode === 'api' ? ['api,projector'] : [''];
const procs: Array<{ role: string; proc: ServerProcess; dir: string }> = [];
try {
  for (const role of roles) {
    const dir = path.join(tmp, `prof-${role || 'default'}`.replace(/,/g, '-'));
    fs.mkdirSync(dir);
    procs.push({ role: role || 'default', dir, proc: await startServer('service', env(redisSrv.url, prefix, path.join(tmp, 'data'), role || undefined), ['--cpu-prof', `--cpu-prof-dir=${dir}`]) });
  }
  const api = procs.find((p) => p.role === 'api' || p.role === 'default' || p.role === 'api,projector')!.proc;
  const next = await load(api.urls.apiUrl!);
  await measure({ url: api.urls.apiUrl!, method: 'POST', next, amount: 1000 });
  const t0 = procs.map((p) => ticks(p.proc.pid));
  const started = Date.now();
  const m = await measure({ url: api.urls.apiUrl!, method: 'POST', next, amount: sends });
  await new Promise((r) => setTimeout(r, 3000));
  const cpu = procs.map((p, i) => ((ticks(p.proc.pid) - t0[i]!) * 1e6) / sends);
  console.log(`${mode}: ${sends} sends, ${Math.round(m.rps)} sends/s; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' / ')}`);
  for (const [i, p] of procs.entries()) {
    const windowUs = (Date.now() - started) * 1000;
    await p.proc.stop();
    const file = fs.readdirSync(p.dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => path.join(p.dir, f));
    console.log(`${p.role}: ${cpu[i]!.toFixed(0)} µs CPU per send (all threads, /proc; the profile: the measured sends and the 3 s after)`);
    // The main thread's profile is the one named after the process's first thread (the others are workers).
    // One profile per thread (the main thread's and the search indexer's); an idle one is left out.
    for (const f of file) {
      const lines = summarise(f, sends, windowUs);
      if (!/busy[^:]*: [0-9] µs/.test(lines[0]!)) console.log(`  ${path.basename(f)}`, ...lines.map((l) => `\n${l}`));
    }
  }
  console.log(`profiles in ${tmp}`);
} finally {
  for (const p of procs) await p.proc.stop().catch(() => {});
  await redisSrv.stop();
}
