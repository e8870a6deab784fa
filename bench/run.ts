/**
 * `npm run bench [-- name ...] [--quick]`: runs the benchmarks (all, or the named ones), prints a table
 * and one `bench <name> ratio=<x.xx>` line per figure, and writes bench/RESULTS.md.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureRedis } from '../scripts/redis.mjs';
import type { Bench, BenchResult } from './lib.ts';
import { BENCHES } from './index.ts';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const names = args.filter((a) => !a.startsWith('--'));
const selected = names.length ? BENCHES.filter((b) => names.includes(b.name)) : BENCHES;
const unknown = names.filter((n) => !BENCHES.some((b) => b.name === n));
if (unknown.length) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; known: ${BENCHES.map((b) => b.name).join(', ')}`);
  process.exit(1);
}

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'stoat-bench-'));
const redis = await ensureRedis(process.env.REDIS_URL || 'redis://127.0.0.1:6379', path.join(tmpRoot, 'redis'));
const results: Array<BenchResult & { bench: string }> = [];
const sharedDir = fs.mkdtempSync(path.join(tmpRoot, 'shared-'));
const atEnd: Array<() => Promise<void>> = [];
const started = Date.now();
try {
  for (const b of selected as Bench[]) {
    const dir = fs.mkdtempSync(path.join(tmpRoot, `${b.name}-`));
    console.error(`# ${b.name}: ${b.description}`);
    const t0 = Date.now();
    const rs = await b.run({
      tmpDir: dir,
      sharedDir,
      atEnd: (fn) => void atEnd.push(fn),
      redisUrl: redis.url,
      repeats: quick ? 1 : 3,
      quick,
      log: (m) => console.error(`  ${m}`),
    });
    console.error(`  (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    for (const r of rs) results.push({ ...r, bench: b.name });
    fs.rmSync(dir, { recursive: true, force: true });
  }
} finally {
  for (const fn of atEnd) await fn().catch((err: unknown) => console.error(`clean-up failed: ${String(err)}`));
  await redis.stop();
  fs.rmSync(tmpRoot, { recursive: true, force: true });
}

const fmt = (n: number | undefined) =>
  n === undefined || Number.isNaN(n) ? '' : n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2);
const rows = results.map((r) => [
  r.name,
  r.figure,
  `${fmt(r.median)} ${r.unit}`,
  r.p50 === undefined ? '' : `${fmt(r.p50)} / ${fmt(r.p99)} ms`,
  `${fmt(r.ceiling)} (${r.ceilingLabel})`,
  r.ratio.toFixed(2),
]);
const header = ['name', 'figure', 'median', 'p50 / p99', 'ceiling (same run)', 'ratio'];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
console.log(line(header));
console.log(widths.map((w) => '-'.repeat(w)).join('  '));
for (const r of rows) console.log(line(r));
console.log('');
for (const r of results) console.log(`bench ${r.name} ratio=${r.ratio.toFixed(2)}`);

const cpus = os.cpus();
const md = [
  '# Benchmark results',
  '',
  `Latest run: ${new Date().toISOString()} on ${os.hostname()} (${cpus.length} × ${cpus[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}), ${((Date.now() - started) / 1000).toFixed(0)} s${quick ? ', --quick' : ''}; load average at the end ${os.loadavg().map((l) => l.toFixed(1)).join(' / ')} (1 / 5 / 15 min: other work may share the machine).`,
  '',
  'Each figure is compared with a ceiling measured in the same run; the ratio is figure ÷ ceiling for throughput and ceiling ÷ figure for latency and memory (1.00 = as good as the ceiling).',
  '',
  `| ${header.join(' | ')} |`,
  `| ${header.map(() => '---').join(' | ')} |`,
  ...rows.map((r) => `| ${r.join(' | ')} |`),
  '',
  ...results.filter((r) => r.notes).map((r) => `- **${r.name}**: ${r.notes}`),
  '',
];
if (names.length === 0 || process.env.BENCH_WRITE_RESULTS === '1') {
  fs.writeFileSync(path.join(import.meta.dirname, 'RESULTS.md'), md.join('\n'));
  console.error('wrote bench/RESULTS.md');
}
