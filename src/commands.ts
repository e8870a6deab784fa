/**
 * Running a command (DESIGN §1): load facts from read models, decide (pure), append with the stream
 * revisions the decision was based on, and on a conflict catch up and decide again a bounded number of
 * times (then 503, never a 500). Commands on the same stream are serialised inside the process, so
 * conflicts only arise between processes. The command answers once its events are projected
 * (read-your-writes).
 */
import type { AppendResult, EventStore, ExpectedRevision } from './eventstore/port.ts';
import { WrongExpectedRevisionError } from './eventstore/port.ts';
import { toNewEvent, type DomainEvent } from './domain/events.ts';
import { AppError, unavailable } from './errors.ts';
import type { ReadModels } from './readmodel/reader.ts';

/** Who runs a command, for the event metadata. */
export interface CommandMeta {
  /** User id of the caller; null for the system. */
  actor: string | null;
  requestId: string;
  /** From `X-Audit-Log-Reason`. */
  reason?: string;
}

/** The events a command appends to one stream. */
export interface Write {
  stream: string;
  /** Partition key: the server id (server, channel, message streams) or the user id (account, file). */
  scope: string;
  /** Revision the decision was based on. */
  expected: ExpectedRevision;
  events: DomainEvent[];
}

/** What a plan returns: the writes, and a value handed back to the caller after projection. */
export interface Plan<T> {
  writes: Write[];
  result: T;
}

/** Outcome of an executed command. */
export interface Executed<T> {
  result: T;
  appended: AppendResult[];
}

/** A keyed async mutex: runs functions with the same key one after another. */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();
  /** Runs fn once every earlier holder of every key has finished. */
  async run<T>(keys: string[], fn: () => Promise<T>): Promise<T> {
    const sorted = [...new Set(keys)].sort();
    const prev = sorted.map((k) => this.tails.get(k) ?? Promise.resolve());
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    for (const k of sorted) this.tails.set(k, mine);
    await Promise.all(prev.map((p) => p.catch(() => {})));
    try {
      return await fn();
    } finally {
      release();
      for (const k of sorted) if (this.tails.get(k) === mine) this.tails.delete(k);
    }
  }
}

/** Options of the executor. */
export interface ExecutorOptions {
  store: EventStore;
  readModels: ReadModels;
  /** Attempts before giving up with 503 (default 12). */
  maxAttempts?: number;
  now?: () => Date;
}

/** Runs commands. */
export class CommandExecutor {
  private readonly o: ExecutorOptions;
  private readonly mutex = new KeyedMutex();

  constructor(o: ExecutorOptions) {
    this.o = o;
  }

  /** The clock used for event metadata. */
  now(): Date {
    return (this.o.now ?? (() => new Date()))();
  }

  /**
   * Executes a plan. `lock` names the streams (or other keys) to serialise on inside this process;
   * `plan` is called again after each conflict and must re-read its facts. A plan with no writes
   * appends nothing (a no-op command).
   */
  async execute<T>(meta: CommandMeta, lock: string[], plan: (attempt: number) => Promise<Plan<T>>): Promise<Executed<T>> {
    return this.mutex.run(lock, async () => {
      const max = this.o.maxAttempts ?? 12;
      for (let attempt = 1; ; attempt++) {
        // Group commit: the store may hold a queued group back while this command decides (src/eventstore/sqlite.ts).
        const made = this.o.store.expectAppend?.();
        let appending: Promise<AppendResult[]>;
        let p: Plan<T>;
        let writes: Write[];
        try {
          p = await plan(attempt);
          writes = p.writes.filter((w) => w.events.length > 0);
          if (writes.length === 0) return { result: p.result, appended: [] };
          const at = this.now().toISOString();
          const storeWrites = writes.map((w) => ({
            stream: w.stream,
            expected: w.expected,
            events: w.events.map((e) =>
              toNewEvent(e, { actor: meta.actor, requestId: meta.requestId, at, scope: w.scope, ...(meta.reason !== undefined ? { reason: meta.reason } : {}) }),
            ),
          }));
          appending = storeWrites.length === 1
            ? this.o.store.append(storeWrites[0]!.stream, storeWrites[0]!.events, storeWrites[0]!.expected).then((r) => [r])
            : this.o.store.appendMany(storeWrites);
        } finally {
          made?.();
        }
        let appended: AppendResult[];
        try {
          appended = await appending;
        } catch (err) {
          if (!(err instanceof WrongExpectedRevisionError)) throw err;
          if (attempt >= max) throw unavailable();
          // Another process got there first: catch the read models up with the log, then decide again.
          const head = await this.o.store.headPosition();
          if (head !== undefined) await this.o.readModels.waitForAll(head);
          // Exponential backoff (equal jitter, 250 ms cap): a request of a process that keeps losing to another
          // process's queue of commands on the same stream outlasts that queue instead of running out of attempts.
          const backoff = Math.min(250, 5 * 2 ** attempt);
          await new Promise((r) => setTimeout(r, backoff / 2 + (Math.random() * backoff) / 2));
          continue;
        }
        await Promise.all(writes.map((w, i) => this.o.readModels.waitFor(w.scope, appended[i]!.position)));
        return { result: p.result, appended };
      }
    });
  }
}

/** Re-throws anything that is not an AppError as-is; convenience for decide functions' callers. */
export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}
