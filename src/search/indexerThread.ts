/**
 * The search indexer on a thread of its own. Indexing is CPU work (FTS5 inserts, word segmentation) that
 * would otherwise run on the API's event loop: a rebuild of the index from zero took the process for minutes,
 * and live indexing a tenth of every send. The thread opens its own connection to the event store and to the
 * index file and runs the same `SearchIndexer` (lease, exactly-once batches, checkpoint); the main thread
 * only forwards commit wake-ups (`wake`) and follows its state. A thread that dies is started again, after
 * a delay that doubles while threads keep dying young (`RestartBackoff`).
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { BUILT, builtFile } from '../built.ts';
import type { StoreLocation } from '../eventstore/open.ts';
import type { KeyStoreLocation } from '../personal/keyStore.ts';

/** What the main thread hands to the indexer thread. */
export interface IndexerThreadData {
  store: StoreLocation;
  /**
   * The key store message content is opened with (destructions it repeats go to the same erasure record);
   * default: the one of `store` (KEYSTORE_URL unset).
   */
  keys?: KeyStoreLocation;
  file: string;
  leaseMs: number;
  /** The lease holder's name, the same for every thread this process starts (a restart keeps the lease). */
  holder: string;
  logLevel: string;
}

/** Messages from the thread. */
export type IndexerThreadMessage = { active: boolean } | { caughtUp: true } | { stopped: true };

/**
 * The thread's entry. From the test build (src/built.ts) it is the built `indexerWorker.mjs`, which needs no
 * loader. Otherwise a boot script registers tsx's ESM loader in the thread (the `--import tsx` of the process
 * does not reach worker threads), then imports the entry module: a second tsx start per service, ~0.9 s of
 * CPU, that the build saves (issue 40).
 */
export function indexerThreadEntry(): { entry: string | URL; eval: boolean } {
  if (BUILT) return { entry: pathToFileURL(builtFile(fileURLToPath(new URL('./indexerWorker.ts', import.meta.url)))), eval: false };
  const boot = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then(({ register }) => {
  register();
  return import(${JSON.stringify(new URL('./indexerWorker.ts', import.meta.url).href)});
});`;
  return { entry: boot, eval: true };
}

/** Shortest time between two wake-ups sent to the thread (ms). */
const WAKE_MS = 5;

/** Restart delays of a thread that keeps failing: doubled from `baseMs` after each short-lived thread, up to `maxMs` (ms). */
export interface RestartBackoff {
  baseMs: number;
  maxMs: number;
}
const RESTART: RestartBackoff = { baseMs: 500, maxMs: 30_000 };

/** A thread that lived this long (ms) ran fine: the next restart waits `baseMs` again. */
const HEALTHY_MS = 30_000;

/** Time the thread may take to stop (write what it gathered, release the lease) before it is terminated (ms). */
const STOP_MS = 5000;

/** The main thread's handle on the indexer thread. */
export class SearchIndexerThread {
  private worker: Worker | undefined;
  private stopped = false;
  private isActive = false;
  private wakeTimer: NodeJS.Timeout | undefined;
  private wakeAgain = false;
  private caughtUpResolve!: () => void;
  private startedAt = 0;
  private nextDelayMs: number;
  /** Resolves once the indexer has applied everything that existed when it first took the lease. */
  readonly caughtUp: Promise<void>;

  private readonly data: IndexerThreadData;

  constructor(
    data: Omit<IndexerThreadData, 'holder'>,
    private readonly log: Logger,
    private readonly restart: RestartBackoff = RESTART,
  ) {
    this.nextDelayMs = restart.baseMs;
    this.data = { ...data, holder: randomUUID() };
    this.caughtUp = new Promise((r) => (this.caughtUpResolve = r));
  }

  start(): void {
    if (this.stopped) return;
    const { entry, eval: isScript } = indexerThreadEntry();
    const worker = new Worker(entry, { eval: isScript, execArgv: [], workerData: this.data });
    this.worker = worker;
    this.startedAt = Date.now();
    worker.on('message', (m: IndexerThreadMessage) => {
      if ('active' in m) this.isActive = m.active;
      else if ('caughtUp' in m) this.caughtUpResolve();
    });
    worker.on('error', (err) => this.log.error({ err }, 'search indexer thread failed'));
    worker.on('exit', (code) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.isActive = false;
      if (this.stopped) return;
      // A thread that keeps failing (its event store or index unreachable) is started ever less often.
      if (Date.now() - this.startedAt >= HEALTHY_MS) this.nextDelayMs = this.restart.baseMs;
      const delayMs = this.nextDelayMs;
      this.nextDelayMs = Math.min(this.restart.maxMs, delayMs * 2);
      this.log.warn({ code, delayMs }, 'search indexer thread exited; starting it again');
      setTimeout(() => this.start(), delayMs).unref();
    });
  }

  /** Whether this process's indexer writes the index now (it holds the file's lease). */
  get active(): boolean {
    return this.isActive;
  }

  /**
   * The log has new events (a commit here or in another process): the thread reads them. One message per
   * `WAKE_MS` at most (the indexer gathers events for longer than that anyway); a commit inside that window
   * sends one more at its end.
   */
  wake(): void {
    if (this.wakeTimer) {
      this.wakeAgain = true;
      return;
    }
    this.worker?.postMessage('wake');
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = undefined;
      if (this.wakeAgain) {
        this.wakeAgain = false;
        this.wake();
      }
    }, WAKE_MS);
    this.wakeTimer.unref();
  }

  /** Fault injection: ends the thread as a crash would (it is started again). */
  async kill(): Promise<void> {
    await this.worker?.terminate();
  }

  /** Stops the thread: it writes what it gathered and gives the lease up. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    const worker = this.worker;
    if (!worker) return;
    await new Promise<void>((resolve) => {
      const cut = setTimeout(() => void worker.terminate().then(() => resolve()), STOP_MS);
      worker.once('exit', () => {
        clearTimeout(cut);
        resolve();
      });
      worker.postMessage('stop');
    });
    this.worker = undefined;
    this.isActive = false;
  }
}
