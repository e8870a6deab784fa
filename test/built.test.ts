// The test build (scripts/build-tests.mjs, src/built.ts, issue 40): this file runs both from the build (`npm
// test`) and through tsx (`tap test/built.test.ts`), and checks in each that code knows which it is, keeps
// `import.meta` meaning the source file, starts its children the same way, and that every entry a test starts
// is in the build. The reporter's renaming of built files back to their sources is checked here too.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import module from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t from 'tap';
import { BUILD_DIR, BUILT, builtFile, isMain, moduleSpecifier, nodeArgs, ROOT, scriptNodeArgs, sourceFile } from '../src/built.ts';
import { indexerThreadEntry } from '../src/search/indexerThread.ts';
import { builtName, entries, removeStale } from '../scripts/build-tests.mjs';
import SummaryReporter, { sourceNames } from '../scripts/tap-summary-reporter.mjs';

const SELF = path.join(ROOT, 'test', 'built.test.ts');
/** Whether this process runs this file's build (tap was given `.build/test/built.test.mjs`). */
const fromBuild = path.resolve(process.argv[1]!) === path.join(BUILD_DIR, 'test', 'built.test.mjs');

t.test('code knows whether it runs from the build', async (t) => {
  t.equal(BUILT, fromBuild, `BUILT is ${fromBuild} when the process runs ${process.argv[1]}`);
  t.same(nodeArgs('src/main.ts'), fromBuild ? ['--enable-source-maps', path.join(BUILD_DIR, 'src/main.mjs')] : ['--import', 'tsx', 'src/main.ts']);
  t.same(scriptNodeArgs(), fromBuild ? ['--enable-source-maps'] : ['--import', 'tsx']);
  t.equal(moduleSpecifier('src/config.ts'), pathToFileURL(fromBuild ? path.join(BUILD_DIR, 'src/config.mjs') : path.join(ROOT, 'src/config.ts')).href);
  if (fromBuild) t.throws(() => builtFile('src/nothing-built.ts'), /not in the test build/, 'an entry missing from the build is named');
});

t.test('import.meta keeps meaning the source file in the build', async (t) => {
  t.equal(import.meta.url, pathToFileURL(SELF).href, 'import.meta.url');
  t.equal(import.meta.filename, SELF, 'import.meta.filename');
  t.equal(import.meta.dirname, path.dirname(SELF), 'import.meta.dirname');
  t.equal(ROOT, path.resolve(fileURLToPath(new URL('..', import.meta.url))), "src/built.ts's root is the repository's");
});

t.test('built and source files map to each other', async (t) => {
  t.equal(builtFile('src/main.ts'), path.join(ROOT, '.build/src/main.mjs'));
  t.equal(builtFile(path.join(ROOT, 'src/cli/accounts.ts')), path.join(ROOT, '.build/src/cli/accounts.mjs'), 'an absolute source');
  t.equal(sourceFile(path.join(ROOT, '.build/src/cli/accounts.mjs')), path.join(ROOT, 'src/cli/accounts.ts'));
  t.equal(sourceFile(path.join(ROOT, 'src/cli/accounts.ts')), path.join(ROOT, 'src/cli/accounts.ts'), 'a source stays itself');
  t.equal(sourceFile(path.join(ROOT, '.build/chunks/x.js')), path.join(ROOT, '.build/chunks/x.js'), 'not a built .mjs: as is');
  t.equal(builtName('test/reliability/crash.test.ts'), '.build/test/reliability/crash.test.mjs', "scripts/test.mjs's name for tap");
});

t.test('a CLI module runs its command only as the entry of its process', async (t) => {
  const accounts = pathToFileURL(path.join(ROOT, 'src/cli/accounts.ts')).href;
  const argv1 = process.argv[1]!;
  t.teardown(() => void (process.argv[1] = argv1));
  t.notOk(isMain(accounts), 'not when a test file is the entry');
  process.argv[1] = path.join(ROOT, '.build/src/cli/accounts.mjs');
  t.ok(isMain(accounts), 'its built file started');
  process.argv[1] = path.join(ROOT, 'src/cli/accounts.ts');
  t.ok(isMain(accounts), 'its source started through tsx');
  process.argv[1] = path.join(ROOT, '.build/src/cli/compliance.mjs');
  t.notOk(isMain(accounts), 'another CLI started');
  process.argv[1] = argv1;
  // Imported, the CLIs do nothing: run with this process's arguments they would print their usage and exit.
  await import('../src/cli/accounts.ts');
  await import('../src/cli/compliance.ts');
  t.pass('importing the accounts and compliance CLIs ran neither');
  // Started (the way runCli does), it runs: an unknown command group is a usage error (2).
  const run = spawnSync(process.execPath, [...nodeArgs('src/cli/accounts.ts'), 'frobnicate'], { cwd: ROOT, encoding: 'utf8' });
  t.equal(run.status, 2, `started, the accounts CLI ran (usage error): ${run.stderr}`);
});

t.test("the indexer thread runs the built worker from the build, tsx's boot otherwise", async (t) => {
  const { entry, eval: isScript } = indexerThreadEntry();
  if (fromBuild) {
    t.equal(isScript, false);
    t.equal(String(entry), pathToFileURL(path.join(BUILD_DIR, 'src/search/indexerWorker.mjs')).href);
    t.ok(fs.existsSync(fileURLToPath(entry)), 'and it is built');
  } else {
    t.equal(isScript, true);
    t.match(String(entry), /tsx/);
    t.match(String(entry), /indexerWorker\.ts/);
  }
});

t.test('every entry a test starts is in the build', async (t) => {
  const built = new Set<string>(entries());
  // What the tests start: nodeArgs('…'), moduleSpecifier('…') and runCli's `script: '…'`.
  const started = new Set<string>(['src/cli/events.ts']); // runCli's default
  for (const f of fs.readdirSync(path.join(ROOT, 'test'), { recursive: true }).map(String).filter((f) => f.endsWith('.ts'))) {
    const text = fs.readFileSync(path.join(ROOT, 'test', f), 'utf8');
    for (const m of text.matchAll(/(?:nodeArgs|moduleSpecifier)\('([^']+\.ts)'\)|script: '([^']+\.ts)'/g)) started.add(m[1] ?? m[2]!);
  }
  started.delete('src/nothing-built.ts'); // this file's own example of a missing entry
  t.ok(started.size >= 10, `found what the tests start (${started.size})`);
  for (const s of started) t.ok(built.has(s), `${s} is built`);
  for (const f of fs.readdirSync(path.join(ROOT, 'test'), { recursive: true }).map(String).filter((f) => f.endsWith('.test.ts'))) {
    t.ok(built.has(`test/${f.split(path.sep).join('/')}`), `test/${f} is built`);
  }
});

t.test('test processes and their children register no processinfo module hook', async (t) => {
  t.equal(module.register.name, 'registerUnlessProcessinfo', 'this process loaded scripts/tap-processinfo-idle.mjs first');
  // A registration of processinfo's hook is dropped: this one names no file, and would throw if Node tried it.
  t.doesNotThrow(() => module.register('file:///nonexistent/node_modules/@tapjs/processinfo/dist/esm/loader.mjs'), "processinfo's hook is not registered");
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', "import m from 'node:module'; console.log(m.register.name)"], { cwd: '/', encoding: 'utf8' });
  t.equal(child.stdout.trim(), 'registerUnlessProcessinfo', 'a child (started in another directory) too');
});

t.test('the reporter names built files as their sources', async (t) => {
  t.equal(sourceNames('ok 3 - .build/test/reliability/crash.test.mjs # time=12.5ms'), 'ok 3 - test/reliability/crash.test.ts # time=12.5ms');
  t.equal(sourceNames('# Subtest: ./.build/test/x.test.mjs'), '# Subtest: test/x.test.ts');
  t.equal(sourceNames('    not ok 2 - .build/test/x.test.mjs # time=1ms'), '    not ok 2 - test/x.test.ts # time=1ms', 'indented');
  t.equal(sourceNames('  fileName: .build/test/x.test.mjs'), '  fileName: .build/test/x.test.mjs', "a failure's generated position: as is");
  t.equal(sourceNames('ok 1 - .build/test/x.test.mjs.orig'), 'ok 1 - .build/test/x.test.mjs.orig', 'only a whole name');
  const reporter = new SummaryReporter();
  const out = new PassThrough();
  let text = '';
  out.on('data', (d: Buffer) => (text += d.toString()));
  reporter.pipe(out);
  // A name cut between two chunks of tap's stream is renamed all the same.
  reporter.write('TAP version 14\nnot ok 1 - .build/test/a.te');
  reporter.write('st.mjs # time=2000ms\nok 2 - .build/test/b.test.mjs # time=1000ms\n# { total: 3, pass: 2, fail: 1 }\n');
  reporter.end();
  await new Promise((r) => out.on('end', r));
  t.match(text, /^not ok 1 - test\/a\.test\.ts # time=2000ms$/m);
  t.match(text, /^# slowest files: test\/a\.test\.ts 2\.0 s, test\/b\.test\.ts 1\.0 s$/m);
  t.match(text, /^# failed files: test\/a\.test\.ts$/m);
  t.match(text, /^2 passed, 1 failed$/m);
  t.notMatch(text, /\.build\//, 'no built name left');
});

t.test('a file the build no longer makes is removed only once it is old (a running test may still import it)', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stoat-built-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, ageMs: number) => {
    const f = path.join(dir, name);
    fs.mkdirSync(path.dirname(f), { recursive: true });
    fs.writeFileSync(f, name);
    const at = new Date(Date.now() - ageMs);
    fs.utimesSync(f, at, at);
    return f;
  };
  const hour = 60 * 60 * 1000;
  const kept = file('test/x.test.mjs', 5 * hour);
  const recent = file('chunks/chunk-NEW.mjs', hour / 2);
  const stale = file('chunks/chunk-OLD.mjs', 5 * hour);
  t.equal(removeStale(dir, new Set([kept]), 3 * hour), 1, 'one file removed');
  t.ok(fs.existsSync(kept), 'a file of this build stays, however old');
  t.ok(fs.existsSync(recent), 'a file of a recent build stays');
  t.notOk(fs.existsSync(stale), 'an old file no build makes is removed');
});
