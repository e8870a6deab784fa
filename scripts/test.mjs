// `npm test`: type-checks and runs the tap suite against the Redis at REDIS_URL (a private redis-server
// when none answers). The type check (incremental: its state is kept in node_modules/.cache) runs beside
// the tests; when it fails, the tests are stopped and the run fails. The tests run in two runs:
//   1. every test/**/*.test.ts except the reliability suite, files in parallel (.taprc);
//   2. the reliability suite (test/reliability/*.test.ts), two files at a time with 1800 s per file —
//      skipped when SKIP_RELIABILITY=1.
// `--reliability` runs only the second; extra arguments go to tap and run only the files named
// (e.g. `npm test -- test/servers.test.ts`).
// The reporter ends each run with `N passed, N failed`; this script turns those lines into comments and
// ends with one `N passed, N failed` line over every run (what CI reads), after the skipped count and the
// failed files of all runs.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { ensureRedis } from './redis.mjs';

const args = process.argv.slice(2);
const reliabilityOnly = args.includes('--reliability');
const tapArgs = args.filter((a) => a !== '--reliability');
const skipReliability = /^(1|true|yes|on)$/i.test(process.env.SKIP_RELIABILITY ?? '');

const started = Date.now();
/** The tap run under way (stopped on a signal, or when the type check fails). */
let current;
const buildInfo = path.join('node_modules', '.cache', 'stoatish', 'tsc.tsbuildinfo');
fs.mkdirSync(path.dirname(buildInfo), { recursive: true });
const tsc = spawn(process.execPath, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'tsconfig.json', '--incremental', '--tsBuildInfoFile', buildInfo], {
  stdio: ['ignore', 'pipe', 'pipe'],
});
let tscOutput = '';
tsc.stdout.on('data', (d) => (tscOutput += d));
tsc.stderr.on('data', (d) => (tscOutput += d));
let typeCheckFailed = false;
/** Resolves with the type check's exit code (and stops the tests at once when it failed). */
const typeChecked = new Promise((resolve) =>
  tsc.on('close', (code) => {
    if (code !== 0) {
      typeCheckFailed = true;
      current?.kill('SIGTERM');
    }
    resolve(code);
  }),
);

const reliabilityFiles = () =>
  fs.readdirSync('test/reliability').filter((f) => f.endsWith('.test.ts')).sort().map((f) => path.join('test/reliability', f));

/** The tap runs to make: a label, tap's extra options and the files (none: .taprc's include/exclude). */
const runs = [];
if (tapArgs.length) runs.push({ label: 'named files', extra: [], files: tapArgs });
else {
  if (!reliabilityOnly) runs.push({ label: 'main suite', extra: [], files: [] });
  // The reliability files are excluded from the default run (.taprc) and run with a longer time limit: they
  // kill and restart their own processes, flush a private Redis and time slow clients. Each has its own
  // prefix, data directory, database and ports, so two run at a time (issue 40).
  if (reliabilityOnly || !skipReliability) runs.push({ label: 'reliability suite', extra: ['--jobs=2', '--timeout=1800'], files: reliabilityFiles() });
}

// tap rebuilds its test class when .taprc's plugins differ from the ones it was built with (a fresh `npm ci`
// installs the default set, @tapjs/typescript included), but only *after* its runner has chosen the `--import`
// loaders of the test processes from the old build: every file of the first run after an install then loaded
// @tapjs/typescript's ts-node hooks beside tsx, 2.9 s of CPU per test process (measured: 3.5 s against 0.6 s for
// a small import). So the build happens here, before the first run, when the built class still imports a plugin
// that .taprc removes.
{
  const removed = [...fs.readFileSync('.taprc', 'utf8').matchAll(/^\s*-\s*"!([^"]+)"/gm)].map((m) => m[1]);
  const built = path.join('node_modules', '@tapjs', 'test', 'test-built', 'src', 'index.ts');
  const source = fs.existsSync(built) ? fs.readFileSync(built, 'utf8') : '';
  if (removed.some((name) => source.includes(`from "${name}"`))) {
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync(process.execPath, ['node_modules/tap/dist/esm/run.mjs', 'build'], { stdio: ['ignore', 'ignore', 'inherit'] });
    if (r.status !== 0) console.error(`# tap build exited ${r.status}: the first run's test processes load tap's default plugins`);
  }
}

const redis = await ensureRedis(process.env.REDIS_URL || 'redis://127.0.0.1:6379', path.join(os.tmpdir(), `stoat-test-redis-${process.pid}`));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => current?.kill(sig));

const total = { pass: 0, fail: 0, skip: 0, failedFiles: [], exitCodes: [] };

/** Runs tap once, passing its output through except the summary lines, which it counts. */
function runTap(run) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['node_modules/tap/dist/esm/run.mjs', ...run.extra, ...run.files], {
      stdio: ['inherit', 'pipe', 'inherit'],
      env: { ...process.env, REDIS_URL: redis.url, TEST_REDIS_URL: redis.url },
    });
    current = child;
    let summary;
    const lines = readline.createInterface({ input: child.stdout, crlfDelay: Infinity });
    lines.on('line', (line) => {
      const counts = /^(\d+) passed, (\d+) failed$/.exec(line);
      const skipped = /^# (\d+) skipped$/.exec(line);
      const failedFiles = /^# failed files: (.*)$/.exec(line);
      if (counts) {
        summary = { pass: Number(counts[1]), fail: Number(counts[2]) };
        console.log(`# ${run.label}: ${line} (${Math.round((Date.now() - started) / 1000)} s)`);
      } else if (skipped) total.skip += Number(skipped[1]);
      else if (failedFiles) total.failedFiles.push(...failedFiles[1].split(' ').filter(Boolean));
      else console.log(line);
    });
    const exited = new Promise((r) => child.on('close', (code) => r(code)));
    const read = new Promise((r) => lines.once('close', r));
    Promise.all([exited, read]).then(([code]) => {
      // No summary line: the run broke before its reporter could count (a failure).
      const s = summary ?? { pass: 0, fail: 1 };
      total.pass += s.pass;
      total.fail += s.fail;
      total.exitCodes.push(code ?? 1);
      resolve();
    });
  });
}

for (const run of runs) if (!typeCheckFailed) await runTap(run);
await redis.stop();
const tscCode = await typeChecked;
if (tscOutput) process.stdout.write(tscOutput);
if (tscCode !== 0) {
  console.log('type check failed');
  total.fail += 1;
}
console.log(`# type check and tests: ${Math.round((Date.now() - started) / 1000)} s`);
if (total.failedFiles.length) console.log(`# failed files: ${total.failedFiles.join(' ')}`);
console.log(`# ${total.skip} skipped`);
console.log(`${total.pass} passed, ${total.fail} failed`);
process.exit(total.fail > 0 || total.exitCodes.some((c) => c !== 0) ? 1 : 0);
