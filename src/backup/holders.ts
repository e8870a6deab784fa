/**
 * Which service processes hold a data directory. Every service process writes `DATA_DIR/run/<host>-<pid>.json`
 * when it starts and removes it when it stops; `npm run restore` refuses while a holder is alive. A file left by
 * a process of this machine that is gone (killed) is stale and removed; a file of another machine (a shared
 * volume) cannot be checked from here and counts as alive until the operator removes it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** What a holder file records. */
export interface Holder {
  host: string;
  pid: number;
  /** ISO-8601 time the process started. */
  since: string;
  /** The file it was read from. */
  file: string;
}

function runDir(dataDir: string): string {
  return path.join(dataDir, 'run');
}

/** Registers this process as a holder of `dataDir`; returns the function that unregisters it. */
export function holdDataDir(dataDir: string): () => void {
  const dir = runDir(dataDir);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${os.hostname()}-${process.pid}.json`);
  fs.writeFileSync(file, JSON.stringify({ host: os.hostname(), pid: process.pid, since: new Date().toISOString() }));
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    fs.rmSync(file, { force: true });
  };
}

/** Whether a process of this machine is alive (EPERM: alive, owned by another user). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The live holders of `dataDir` (stale files of dead local processes are removed on the way). */
export function liveHolders(dataDir: string): Holder[] {
  const dir = runDir(dataDir);
  if (!fs.existsSync(dir)) return [];
  const out: Holder[] = [];
  for (const name of fs.readdirSync(dir)) {
    if (!name.endsWith('.json')) continue;
    const file = path.join(dir, name);
    let h: Omit<Holder, 'file'>;
    try {
      h = JSON.parse(fs.readFileSync(file, 'utf8')) as Omit<Holder, 'file'>;
    } catch {
      // Half written by a process starting now: it holds the directory.
      out.push({ host: '?', pid: 0, since: '?', file });
      continue;
    }
    if (h.host === os.hostname() && !alive(h.pid)) {
      fs.rmSync(file, { force: true });
      continue;
    }
    out.push({ ...h, file });
  }
  return out;
}
