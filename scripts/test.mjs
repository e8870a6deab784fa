// `npm test`: type-checks and runs the tap suite against the Redis at REDIS_URL (a private redis-server
// when none answers). The type check (incremental: its state is kept in node_modules/.cache) runs beside
// the tests; when it fails, the tests are stopped and the run fails. The tests run in one tap run, two files at
// a time (.taprc `jobs`), longest first (scripts/tap-order.mjs): every test/**/*.test.ts, the reliability suite
// (test/reliability/*.test.ts) included unless SKIP_RELIABILITY=1. One queue instead of the main suite and then
// the reliability suite: the end of each run left one core idle while the other finished a long file (issue 40).
// The expected times come from scripts/test-times.json (committed; a fresh clone, CI) updated by the times this
// machine measured (node_modules/.cache/stoatish/test-times.json, written after each run).
// `--reliability` runs only the reliability suite; extra arguments go to tap and run only the files named
// (e.g. `npm test -- test/servers.test.ts`).
// The reporter ends each run with `N passed, N failed`; this script turns those lines into comments and
// ends with one `N passed, N failed` line over every run (what CI reads), after the skipped count and the
// failed files of all runs.
// The tests run from a build made first (scripts/build-tests.mjs: every test file and every entry a test starts,
// bundled by esbuild into `.build/`, in 3–10 s), not through tsx: tap runs `.build/test/x.test.mjs` with no
// loader, and the services, CLIs and indexer threads the tests start run their built files too (src/built.ts).
// tsx's loader hooks cost ~1.7 s of CPU per process start on Node 20 (issue 40). Files are still named
// `test/x.test.ts` everywhere (arguments, the order, the recorded times, the reporter's output).
// STOAT_TEST_BUILD=0 runs the sources through tsx as before (what `tap test/x.test.ts` run directly does).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { buildTests, builtName } from './build-tests.mjs';
import { ensureRedis } from './redis.mjs';

const args = process.argv.slice(2);
const reliabilityOnly = args.includes('--reliability');
const tapArgs = args.filter((a) => a !== '--reliability');
const skipReliability = /^(1|true|yes|on)$/i.test(process.env.SKIP_RELIABILITY ?? '');
const fromBuild = !/^(0|false|no|off)$/i.test(process.env.STOAT_TEST_BUILD ?? '');

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

const testFiles = (dir) =>
  fs.readdirSync(dir, { recursive: true }).map(String).filter((f) => f.endsWith('.test.ts')).sort().map((f) => path.join(dir, f));
const reliabilityFiles = () => testFiles('test/reliability');
/** What .taprc's include and exclude select: every test file but the reliability suite. */
const mainFiles = () => testFiles('test').filter((f) => !f.startsWith(`test${path.sep}reliability${path.sep}`));

/** The tap runs to make: a label, tap's extra options and the files (named on tap's command line). */
const runs = [];
if (tapArgs.length) {
  // A named directory stands for its test files (tap would look for built files in it otherwise).
  const named = tapArgs.flatMap((a) => (!a.startsWith('-') && fs.existsSync(a) && fs.statSync(a).isDirectory() ? testFiles(a) : [a]));
  runs.push({ label: 'named files', extra: [], files: named });
} else {
  // The reliability files are excluded from a plain tap run (.taprc): they kill and restart their own
  // processes, flush a private Redis and time slow clients. Each has its own prefix, data directory, database
  // and ports, so they run beside the other files, in the same queue; their time limit is .taprc's 1800 s.
  const files = [...(reliabilityOnly ? [] : mainFiles()), ...(reliabilityOnly || !skipReliability ? reliabilityFiles() : [])];
  runs.push({ label: reliabilityOnly ? 'reliability suite' : skipReliability ? 'main suite' : 'main and reliability suites', extra: [], files });
}

/** Expected milliseconds per file: the committed table, then what this machine measured. */
const committedTimes = 'scripts/test-times.json';
const measuredTimes = path.join('node_modules', '.cache', 'stoatish', 'test-times.json');
const readTimes = (file) => {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return {};
  }
};
const expected = { ...readTimes(committedTimes), ...readTimes(measuredTimes) };
/**
 * A file with no time yet (a new one, or any file but the slowest in a fresh clone, whose table lists only
 * those) is expected to take as long as the median file when most files have a time, else 10 s.
 */
const typicalOf = (files) => {
  const ms = files.map((f) => expected[f.split(path.sep).join('/')]).filter((v) => typeof v === 'number').sort((a, b) => a - b);
  return ms.length * 2 >= files.length ? ms[Math.floor(ms.length / 2)] : 10_000;
};
/** The order for scripts/tap-order.mjs: every file of the run with its expected time. */
const orderOf = (files) => {
  const typical = typicalOf(files);
  return Object.fromEntries(files.map((f) => f.split(path.sep).join('/')).map((f) => [f, Math.round(expected[f] ?? typical)]));
};
/** Times measured in this run (from tap's `ok N - file # time=…ms` lines of the files that passed). */
const measured = {};

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
    // From the build: tap gets the built files, and `--node-arg` replaces .taprc's `--import=tsx` (a node-arg
    // given on the command line replaces the .taprc list; tap adds --enable-source-maps itself). The order is
    // keyed by the names tap sees; the reporter names the files back as their sources.
    const tapFile = (f) => (fromBuild && /\.test\.ts$/.test(f) && path.relative('.', f).startsWith(`test${path.sep}`) ? builtName(path.relative('.', f)) : f);
    const order = orderOf(run.files.filter((f) => !f.startsWith('-')));
    const tapOrder = JSON.stringify(Object.fromEntries(Object.entries(order).map(([f, ms]) => [tapFile(f), ms])));
    const child = spawn(process.execPath, ['--import=./scripts/tap-order.mjs', 'node_modules/tap/dist/esm/run.mjs', ...(fromBuild ? ['--node-arg=--enable-source-maps'] : []), ...run.extra, ...run.files.map(tapFile)], {
      stdio: ['inherit', 'pipe', 'inherit'],
      env: { ...process.env, REDIS_URL: redis.url, TEST_REDIS_URL: redis.url, STOAT_TEST_ORDER: tapOrder },
    });
    current = child;
    let summary;
    const lines = readline.createInterface({ input: child.stdout, crlfDelay: Infinity });
    lines.on('line', (line) => {
      const counts = /^(\d+) passed, (\d+) failed$/.exec(line);
      const skipped = /^# (\d+) skipped$/.exec(line);
      const failedFiles = /^# failed files: (.*)$/.exec(line);
      // Only a file that passed: a file stopped by a signal (an interrupted run) reports a few ms.
      const timed = /^ok \d+ - (\S+\.test\.ts) # time=([\d.]+)ms/.exec(line);
      if (timed) measured[timed[1]] = Math.round(Number(timed[2]));
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

let buildFailed = false;
if (fromBuild) {
  try {
    await buildTests();
  } catch {
    // esbuild printed why; the type check says more.
    buildFailed = true;
    console.log('test build failed');
    total.fail += 1;
  }
}
for (const run of runs) if (!typeCheckFailed && !buildFailed) await runTap(run);
await redis.stop();
if (Object.keys(measured).length) {
  fs.writeFileSync(measuredTimes, `${JSON.stringify({ ...readTimes(measuredTimes), ...measured }, null, 1)}\n`);
}
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
