/**
 * Service roles as real OS processes, for multi-process tests: `src/main.ts` (its build under `npm test`, else
 * through tsx: src/built.ts) with the environment given (on top of the test's own), its URLs read from its `service started` log line (so
 * LOG_LEVEL must let info through), killed with SIGKILL at teardown.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { nodeArgs } from '../../src/built.ts';
import type { Teardownable } from './service.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** How much of a process's output is kept for error messages. */
const TAIL_CHARS = 16_000;

/** A running role process. */
export interface RoleProcess {
  child: ChildProcess;
  pid: number;
  /** Base URL of its API (role `api`), else undefined. */
  apiUrl: string | undefined;
  /** Base URL of its media server (role `media`), else undefined. */
  mediaUrl: string | undefined;
  /** Its BullMQ worker name (`<hostname>:<pid>`, as `workers/media/worker.ts` names its workers). */
  workerName: string;
  /** The end of what it printed on stdout. */
  tail(): string;
  /** Resolves once it has exited. */
  exited(): Promise<void>;
  /** Sends `signal` (SIGKILL by default) and resolves once it has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** Resolves once the child has exited (at once when it already has: its 'exit' event is not replayed). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once('exit', () => r()));
}

/**
 * Starts `src/main.ts` with `env` and resolves once it logged `service started` (rejects with the end of its
 * output when it exits first or takes longer than `timeoutMs`: a hang guard, far above the 120 s a start took on
 * a loaded machine, issue 40). It is SIGKILLed at teardown if still running.
 */
export function startRoleProcess(t: Teardownable, env: Record<string, string>, timeoutMs = 300_000): Promise<RoleProcess> {
  const child = spawn(process.execPath, nodeArgs('src/main.ts'), {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const stop = async (signal: NodeJS.Signals = 'SIGKILL') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited(child);
  };
  t.teardown(() => stop('SIGKILL'));
  let out = '';
  let line = '';
  return new Promise<RoleProcess>((resolve, reject) => {
    let started = false;
    const timer = setTimeout(() => {
      void stop('SIGKILL');
      reject(new Error(`${env.ROLES ?? 'service'} did not start within ${timeoutMs} ms: ${out}`));
    }, timeoutMs);
    // Read to the end (a full pipe would block the child), keeping only the tail.
    child.stdout!.on('data', (d: Buffer) => {
      const text = d.toString();
      out = (out + text).slice(-TAIL_CHARS);
      if (started) return;
      line += text;
      for (let nl = line.indexOf('\n'); nl >= 0; nl = line.indexOf('\n')) {
        const entry = line.slice(0, nl);
        line = line.slice(nl + 1);
        if (!entry.includes('"service started"')) continue;
        const logged = JSON.parse(entry) as { api?: string; media?: string };
        started = true;
        line = '';
        clearTimeout(timer);
        resolve({
          child,
          pid: child.pid!,
          apiUrl: logged.api,
          mediaUrl: logged.media,
          workerName: `${os.hostname()}:${child.pid}`,
          tail: () => out,
          exited: () => exited(child),
          stop,
        });
        return;
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (!started) reject(new Error(`${env.ROLES ?? 'service'} exited (${code ?? signal}) before starting: ${out}`));
    });
  });
}
