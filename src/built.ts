/**
 * Whether this code runs from the test build or from the TypeScript sources through tsx, and how to start
 * another process (or thread) the same way. `npm test` bundles the tests and every entry a test starts
 * (scripts/build-tests.mjs: `.build/<path>.mjs` beside `<path>.ts`) so that no test process, spawned service,
 * CLI or indexer thread pays for tsx's loader hooks (issue 40: ~1.7 s of CPU per process start). Everything
 * else (`npm start`, `npm run <cli>`, a test file run with tap directly) runs the sources through tsx, and so
 * does everything it starts.
 *
 * The build keeps `import.meta.url`, `.dirname` and `.filename` meaning the source file (the build substitutes
 * them per file), so paths computed from them are the same either way; only what is started differs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** Defined (as `true`) by scripts/build-tests.mjs; an undeclared global under tsx. */
declare const __STOAT_BUILT__: boolean | undefined;

/** True in code bundled by scripts/build-tests.mjs, false when it runs through tsx. */
export const BUILT: boolean = typeof __STOAT_BUILT__ !== 'undefined' && __STOAT_BUILT__ === true;

/** The repository root. */
export const ROOT = path.resolve(import.meta.dirname, '..');

/** Where scripts/build-tests.mjs writes the build (gitignored). */
export const BUILD_DIR = path.join(ROOT, '.build');

/**
 * The built file of a source file (absolute or relative to the root): `src/main.ts` → `<root>/.build/src/main.mjs`.
 * From a build it must exist: an entry a test starts is listed in scripts/build-tests.mjs (SPAWNED).
 */
export function builtFile(source: string): string {
  const rel = path.relative(ROOT, path.resolve(ROOT, source));
  const file = path.join(BUILD_DIR, rel.replace(/\.ts$/, '.mjs'));
  if (BUILT && !fs.existsSync(file)) throw new Error(`${rel} is not in the test build: add it to SPAWNED in scripts/build-tests.mjs`);
  return file;
}

/** The source file a built file was made from (`<root>/.build/src/main.mjs` → `<root>/src/main.ts`); any other file as is. */
export function sourceFile(file: string): string {
  const rel = path.relative(BUILD_DIR, file);
  if (rel.startsWith('..') || path.isAbsolute(rel) || !rel.endsWith('.mjs')) return file;
  return path.join(ROOT, rel.replace(/\.mjs$/, '.ts'));
}

/**
 * The node arguments that run the TypeScript entry `source` (relative to the root, or absolute) the way this
 * process runs: its built file (with source maps, so a stack names the `.ts` line) from a build, else the
 * source through tsx. `spawn(process.execPath, [...nodeArgs('src/main.ts'), ...args])`.
 */
export function nodeArgs(source: string): string[] {
  return BUILT ? ['--enable-source-maps', builtFile(source)] : ['--import', 'tsx', source];
}

/**
 * The node options for a child that runs an ES module script of its own (`-e`) importing sources through
 * `moduleSpecifier`: none from a build (the built modules need no loader), tsx otherwise.
 */
export function scriptNodeArgs(): string[] {
  return BUILT ? ['--enable-source-maps'] : ['--import', 'tsx'];
}

/** What a child's script imports for the source module `source` (relative to the root, or absolute): its built file from a build. */
export function moduleSpecifier(source: string): string {
  return BUILT ? pathToFileURL(builtFile(source)).href : pathToFileURL(path.resolve(ROOT, source)).href;
}

/**
 * Whether the module whose `import.meta.url` is `moduleUrl` is the process's entry (`node --import tsx
 * src/cli/x.ts`, or its built file): a CLI module runs its command only then, not when a test imports it.
 */
export function isMain(moduleUrl: string): boolean {
  const main = process.argv[1];
  return main !== undefined && moduleUrl === pathToFileURL(sourceFile(path.resolve(main))).href;
}
