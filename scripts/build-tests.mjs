// The test build (issue 40): bundles every test file and every entry a test starts into `.build/` (gitignored),
// `<path>.ts` → `.build/<path>.mjs`, so that `npm test`'s test processes, the services and CLIs they spawn and
// the search indexer's thread run plain JavaScript instead of going through tsx's loader hooks (those cost
// ~1.7 s of CPU per process start on Node 20, and the indexer thread paid its own tsx start again).
// `scripts/test.mjs` runs it before tap; `node scripts/build-tests.mjs` builds by hand. It does not type-check
// (tsc does, beside the tests).
//
// - esbuild (the transform tsx itself uses, with the project's tsconfig): ESM, platform node, target node20,
//   packages external (they resolve from the repo's node_modules, as `.build/` is inside the repo), linked
//   source maps (tap runs its test processes with --enable-source-maps, and src/built.ts starts children with
//   it, so a stack names the `.ts` line).
// - Code splitting: modules shared by several entries live in `.build/chunks/`, once, so a process that loads
//   two entries (a child script importing `src/config.ts` and `src/service.ts`) has one copy of each module,
//   as under tsx, and the build is a few MB instead of one service copy per test file.
// - `import.meta.url`, `.dirname` and `.filename` are replaced per file by the source file's values: tests
//   and src find fixtures, the repo root and packages (createRequire) from them, and must find the same ones.
//   Code that must start the build's files instead uses src/built.ts (`__STOAT_BUILT__` is defined here).
// - Files are rewritten only when their content changed, each through a rename, and files no longer built are
//   removed once they are three hours old: a run changes nothing under a test that is reading the build (chunk
//   names carry a hash of their content, so an edited module is a new chunk beside the old one), and an
//   unchanged tree costs only esbuild's time (~180 entries: 2.5–10 s at load averages 9–16 on the 2-core machine).
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = path.resolve(import.meta.dirname, '..');
export const BUILD_DIR = path.join(ROOT, '.build');

/**
 * What a test starts besides its own file: `src/main.ts` (startRoleProcess and the tests that spawn it), every
 * CLI (runCli and spawnSync), the indexer thread's entry, and the modules that child scripts of their own
 * (`node -e`: service.stop, redis.cluster, eventstore.sqlite) import through `moduleSpecifier`. A test that
 * starts another one must add it here (src/built.ts says so when it is missing).
 */
const SPAWNED = ['src/main.ts', 'src/search/indexerWorker.ts', 'src/config.ts', 'src/log.ts', 'src/service.ts', 'src/redis.ts', 'src/eventstore/sqlite.ts'];

const list = (dir, keep) =>
  fs.existsSync(path.join(ROOT, dir))
    ? fs.readdirSync(path.join(ROOT, dir), { recursive: true }).map(String).filter(keep).sort().map((f) => path.posix.join(dir, f.split(path.sep).join('/')))
    : [];

/** Every entry of the build, relative to the root (`test/x.test.ts`, `src/main.ts`). */
export function entries() {
  return [...new Set([...list('test', (f) => f.endsWith('.test.ts')), ...list('src/cli', (f) => f.endsWith('.ts') && !f.includes(path.sep)), ...SPAWNED])];
}

/** The built file of a test or entry (`test/x.test.ts` → `.build/test/x.test.mjs`), relative to the root. */
export const builtName = (file) => path.posix.join('.build', file.split(path.sep).join('/').replace(/\.ts$/, '.mjs'));

/** Replaces `import.meta.url`, `.dirname` and `.filename` in the repo's own sources by the source file's. */
const sourceMeta = {
  name: 'source-import-meta',
  setup(build) {
    build.onLoad({ filter: /\.(ts|mjs)$/ }, async (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      const text = await fs.promises.readFile(args.path, 'utf8');
      const values = { url: pathToFileURL(args.path).href, dirname: path.dirname(args.path), filename: args.path };
      const contents = text.replace(/\bimport\.meta\.(url|dirname|filename)\b/g, (_, k) => JSON.stringify(values[k]));
      return { contents, loader: args.path.endsWith('.ts') ? 'ts' : 'js', resolveDir: path.dirname(args.path) };
    });
  },
};

/**
 * How long a file the build no longer makes is kept (ms). A test process that started from an older build
 * (another `npm test` in the same checkout, sources edited since) loads some chunks only later (`import()` of
 * the workers): a chunk removed under it failed every test of the file (`ERR_MODULE_NOT_FOUND`).
 */
const STALE_MS = 3 * 60 * 60 * 1000;

/** Removes the files under `dir` that are not in `keep` (absolute paths) and older than `staleMs`; returns how many. */
export function removeStale(dir, keep, staleMs = STALE_MS) {
  if (!fs.existsSync(dir)) return 0;
  const before = Date.now() - staleMs;
  let removed = 0;
  for (const f of fs.readdirSync(dir, { recursive: true }).map((f) => path.join(dir, String(f)))) {
    if (keep.has(f)) continue;
    const stat = fs.statSync(f, { throwIfNoEntry: false });
    if (!stat || stat.isDirectory() || stat.mtimeMs > before) continue;
    fs.rmSync(f, { force: true });
    removed++;
  }
  return removed;
}

/** Writes `file` (absolute) when its content differs, through a rename (a reader never sees half a file). */
function writeIfChanged(file, contents) {
  try {
    const old = fs.readFileSync(file);
    if (old.equals(contents)) return false;
  } catch {
    // not there yet
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, contents);
  fs.renameSync(tmp, file);
  return true;
}

/**
 * Builds every entry into `.build/`. Resolves with `{ entries, written, removed, ms }`; rejects with esbuild's
 * error (its messages already printed) when a source does not compile.
 */
export async function buildTests({ log = true } = {}) {
  const started = Date.now();
  const all = entries();
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: all,
    outdir: BUILD_DIR,
    outbase: ROOT,
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    tsconfig: path.join(ROOT, 'tsconfig.json'),
    sourcemap: 'linked',
    sourcesContent: false,
    // Names as under tsx: bundling renames a top-level name two modules share (`log` → `log2`), and a class's or
    // function's `.name` is read (pino's `err.type`, stack frames).
    keepNames: true,
    define: { __STOAT_BUILT__: 'true' },
    plugins: [sourceMeta],
    write: false,
    logLevel: 'error',
  });
  const keep = new Set();
  let written = 0;
  for (const out of result.outputFiles) {
    keep.add(out.path);
    if (writeIfChanged(out.path, Buffer.from(out.contents))) written++;
  }
  const removed = removeStale(BUILD_DIR, keep);
  const ms = Date.now() - started;
  if (log) console.log(`# test build: ${all.length} entries, ${result.outputFiles.length} files (${written} written, ${removed} removed) in ${(ms / 1000).toFixed(1)} s`);
  return { entries: all, written, removed, ms };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await buildTests().catch(() => process.exit(1));
}
