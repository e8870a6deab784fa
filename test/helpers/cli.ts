/**
 * Runs an operator tool (`npm run events -- …` by default: the CLI file directly, its build under `npm test`,
 * else through tsx: src/built.ts) as a child process for tests.
 */
import { spawn } from 'node:child_process';
import { nodeArgs } from '../../src/built.ts';

/** Output of one run. */
export interface CliRun {
  code: number | null;
  out: string;
  err: string;
}

/**
 * Runs `src/cli/events.ts` (or `script`) with `args` and the environment `env` added to this process's.
 * `until` sends SIGINT once stdout satisfies it (for `tail`); a run that never ends is killed after 240 s,
 * failing the test (60 s killed a normal export on a loaded machine: issue 40).
 */
export function runCli(
  env: Record<string, string>,
  args: string[],
  opts: { until?: (out: string) => boolean; onStderr?: (err: string) => void; script?: string } = {},
): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...nodeArgs(opts.script ?? 'src/cli/events.ts'), ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const guard = setTimeout(() => child.kill('SIGKILL'), 240_000);
    child.stdout.on('data', (d) => {
      out += d;
      if (opts.until?.(out)) child.kill('SIGINT');
    });
    child.stderr.on('data', (d) => {
      err += d;
      opts.onStderr?.(err);
    });
    child.on('exit', (code) => {
      clearTimeout(guard);
      resolve({ code, out, err });
    });
  });
}
