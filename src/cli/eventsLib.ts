/**
 * The operator tool's operations over the event log, as functions (the CLI in `events.ts` parses
 * arguments and calls these; tests call them directly):
 * - `exportEvents`: NDJSON of a stream or of the whole log from a position, streamed (constant memory);
 * - `tailEvents`: follow events live, filtered by stream and type;
 * - `findPosition`: the last position at or before an ISO time;
 * - `migrate`: copy the whole history to another store preserving order, ids and metadata; resumable
 *   (each event is appended with the revision it has in the source, so a copied event is never copied
 *   twice, and a checkpoint lets a restarted run skip what is done).
 */
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import type { EventStore, RecordedEvent, StreamWrite, Subscription } from '../eventstore/port.ts';
import { WrongExpectedRevisionError } from '../eventstore/port.ts';
import { SqliteEventStore } from '../eventstore/sqlite.ts';

/** Opens a store from a URL: `kurrentdb://…`/`kurrent://…`/`esdb://…`, `postgres://…`, or `sqlite:<path>` for an embedded file. */
export async function openStoreUrl(url: string): Promise<EventStore> {
  if (url.startsWith('sqlite:')) return new SqliteEventStore(path.resolve(url.slice('sqlite:'.length)));
  if (/^postgres(ql)?:\/\//.test(url)) {
    const { openPostgresEventStore } = await import('../eventstore/postgres.ts');
    return openPostgresEventStore(url);
  }
  if (/^(kurrentdb|kurrent|esdb|kdb)(\+discover)?:\/\//.test(url)) {
    const { openKurrentEventStore } = await import('../eventstore/kurrent.ts');
    return openKurrentEventStore(url);
  }
  throw new Error(`unknown event store URL "${url}" (kurrentdb://…, kurrent://…, esdb://…, postgres://… or sqlite:<path>)`);
}

/** One NDJSON line of an exported event. */
export function toLine(e: RecordedEvent): string {
  return JSON.stringify({
    position: e.position.toString(),
    stream: e.stream,
    revision: e.revision,
    id: e.id,
    type: e.type,
    data: e.data,
    metadata: e.metadata,
  });
}

/** Writes a line and waits when the destination's buffer is full (so memory stays constant). */
async function writeLine(out: NodeJS.WritableStream, line: string): Promise<void> {
  if (!out.write(line + '\n')) await new Promise<void>((r) => out.once('drain', () => r()));
}

/** Options of an export. */
export interface ExportOptions {
  stream?: string;
  /** Exclusive: events after this position (whole-log export only). */
  after?: bigint;
  onProgress?: (n: number) => void;
}

/** Streams events as NDJSON; returns how many were written. */
export async function exportEvents(store: EventStore, out: NodeJS.WritableStream, o: ExportOptions = {}): Promise<number> {
  let n = 0;
  if (o.stream) {
    let from = 0;
    for (;;) {
      const page = await store.readStream(o.stream, { fromRevision: from, maxCount: 1000 });
      for (const e of page) {
        await writeLine(out, toLine(e));
        n++;
      }
      o.onProgress?.(n);
      if (page.length < 1000) break;
      from = page[page.length - 1]!.revision + 1;
    }
    return n;
  }
  for await (const e of store.readAll(o.after !== undefined ? { after: o.after } : {})) {
    await writeLine(out, toLine(e));
    n++;
    if (n % 1000 === 0) o.onProgress?.(n);
  }
  o.onProgress?.(n);
  return n;
}

/** Filters of `tail`. */
export interface TailOptions {
  /** Stream name, or a prefix ending in `-` / `*` (e.g. `server-` or `message-*`). */
  stream?: string;
  types?: string[];
  /** Exclusive start position; undefined = only new events. */
  after?: bigint;
  fromStart?: boolean;
}

/** True when an event passes the tail filters. */
export function tailMatches(e: RecordedEvent, o: TailOptions): boolean {
  if (o.types && o.types.length && !o.types.includes(e.type)) return false;
  if (o.stream) {
    const s = o.stream.endsWith('*') ? o.stream.slice(0, -1) : o.stream;
    if (o.stream.endsWith('*') || o.stream.endsWith('-')) return e.stream.startsWith(s);
    return e.stream === s;
  }
  return true;
}

/** How `tailEvents` reacts to a dropped subscription. */
export interface TailControl {
  /** Resubscriptions allowed in a row without a delivered event in between (default 5). */
  maxResubscribes?: number;
  /** Called when the subscription dropped and tail resubscribes after the last delivered event. */
  onResubscribe?: (err: Error, attempt: number) => void;
  /** Called once when tail gives up (the subscription kept dropping); nothing is delivered afterwards. */
  onFatal?: (err: Error) => void;
}

/**
 * Follows the log, calling `onEvent` for matching events until the returned stop function is called. A
 * dropped subscription is resubscribed after the last event seen (nothing missed, nothing repeated); when it
 * keeps dropping, `onFatal` says so instead of going quiet.
 */
export async function tailEvents(store: EventStore, o: TailOptions, onEvent: (e: RecordedEvent) => void, control: TailControl = {}): Promise<() => Promise<void>> {
  let after = o.fromStart ? undefined : o.after ?? (await store.headPosition());
  let sub: Subscription | undefined;
  let stopped = false;
  let drops = 0;
  let timer: NodeJS.Timeout | undefined;
  const max = control.maxResubscribes ?? 5;
  const start = () => {
    sub = store.subscribe({
      ...(after !== undefined ? { after } : {}),
      onEvents: (events) => {
        if (stopped) return;
        drops = 0;
        for (const e of events) {
          after = e.position;
          if (tailMatches(e, o)) onEvent(e);
        }
      },
      onError: (err) => {
        if (stopped) return;
        if (++drops > max) {
          stopped = true;
          control.onFatal?.(new Error(`the subscription dropped ${drops} times in a row: ${err.message}`));
          return;
        }
        control.onResubscribe?.(err, drops);
        timer = setTimeout(start, Math.min(5000, 100 * 2 ** (drops - 1)));
      },
    });
  };
  start();
  return async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    await sub?.close();
  };
}

/** The position of the last event recorded at or before `at` (undefined when none). */
export async function findPosition(store: EventStore, at: Date): Promise<bigint | undefined> {
  let last: bigint | undefined;
  const limit = at.getTime();
  for await (const e of store.readAll()) {
    if (Date.parse(e.metadata.at) > limit) break;
    last = e.position;
  }
  return last;
}

/** The target holds a different event at a revision the source's event needs: nothing is skipped silently. */
export class MigrationConflictError extends Error {
  constructor(
    readonly stream: string,
    readonly revision: number,
    readonly sourceId: string,
    readonly targetId: string,
  ) {
    super(`migrate: ${stream}@${revision} is event ${targetId} in the target but ${sourceId} in the source; the target holds other history, aborting`);
    this.name = 'MigrationConflictError';
  }
}

/** Client errors after which the outcome of a multi-stream append is unknown or it is not available. */
function isFallbackError(err: unknown): boolean {
  const type = err !== null && typeof err === 'object' ? (err as { type?: unknown }).type : undefined;
  return type === 'unavailable' || type === 'unknown' || type === 'unsupported';
}

/** Options of a migration. */
export interface MigrateOptions {
  /** Where the checkpoint file lives (a run that stops can resume). */
  checkpointDir: string;
  /** Identifies the target for the checkpoint file name. */
  targetId: string;
  /** Events per append batch (consecutive events of one stream are appended together). */
  batch?: number;
  onProgress?: (copied: number, skipped: number) => void;
  /** Injected fault for tests: called after each batch with the events copied so far. */
  afterBatch?: (copied: number) => void;
}

/** Result of a migration. */
export interface MigrateResult {
  copied: number;
  skipped: number;
}

/** Copies every event of `source` to `target`, in order, with the same ids, types, data and metadata. */
export async function migrate(source: EventStore, target: EventStore, o: MigrateOptions): Promise<MigrateResult> {
  const cpFile = path.join(o.checkpointDir, `migrate-${createHash('sha256').update(o.targetId).digest('hex').slice(0, 16)}.json`);
  let after: bigint | undefined;
  if (fs.existsSync(cpFile)) after = BigInt((JSON.parse(fs.readFileSync(cpFile, 'utf8')) as { after: string }).after);
  let copied = 0;
  let skipped = 0;
  let pending: RecordedEvent[] = [];
  /**
   * Appends runs one by one. A run whose revisions the target already holds is skipped only when the target
   * has the very same events there (by id); a partly copied run is completed; anything else aborts, since
   * skipping it would lose the source's events silently.
   */
  const appendRuns = async (runs: StreamWrite[]) => {
    for (const write of runs) {
      try {
        await target.append(write.stream, write.events, write.expected);
        copied += write.events.length;
      } catch (err) {
        if (!(err instanceof WrongExpectedRevisionError)) throw err;
        const first = write.expected === 'no_stream' ? 0 : (write.expected as number) + 1;
        const there = await target.readStream(write.stream, { fromRevision: first, maxCount: write.events.length });
        for (let k = 0; k < there.length; k++) {
          if (there[k]!.id !== write.events[k]!.id) {
            throw new MigrationConflictError(write.stream, first + k, write.events[k]!.id, there[k]!.id);
          }
        }
        if (there.length === 0) {
          const have = await target.streamRevision(write.stream);
          throw new Error(`target stream ${write.stream} is at revision ${have}, cannot place revision ${first}: it has events of its own`);
        }
        skipped += there.length;
        const rest = write.events.slice(there.length);
        if (rest.length > 0) {
          await target.append(write.stream, rest, first + there.length - 1);
          copied += rest.length;
        }
      }
    }
  };
  const flush = async () => {
    if (pending.length === 0) return;
    // Consecutive events of one stream form a run, appended with the source revision before the run.
    const runs: StreamWrite[] = [];
    for (let i = 0; i < pending.length; ) {
      const first = pending[i]!;
      let j = i + 1;
      while (j < pending.length && pending[j]!.stream === first.stream && pending[j]!.revision === pending[j - 1]!.revision + 1) j++;
      runs.push({
        stream: first.stream,
        expected: first.revision === 0 ? 'no_stream' : first.revision - 1,
        events: pending.slice(i, j).map((e) => ({ id: e.id, type: e.type, data: e.data, metadata: e.metadata })),
      });
      i = j;
    }
    // Runs of distinct streams go in one atomic, ordered multi-stream append; a stream seen again starts a new group.
    let group: StreamWrite[] = [];
    const seen = new Set<string>();
    const flushGroup = async () => {
      if (group.length === 0) return;
      try {
        await target.appendMany(group);
        copied += group.reduce((n, w) => n + w.events.length, 0);
      } catch (err) {
        // A conflict, or an outcome we cannot know (the server went away, an unknown error, a server
        // without multi-stream appends): append stream by stream, where every revision is checked by id.
        if (!(err instanceof WrongExpectedRevisionError) && !isFallbackError(err)) throw err;
        await appendRuns(group);
      }
      group = [];
      seen.clear();
    };
    for (const r of runs) {
      if (seen.has(r.stream)) await flushGroup();
      group.push(r);
      seen.add(r.stream);
    }
    await flushGroup();
    const last = pending[pending.length - 1]!.position;
    fs.mkdirSync(o.checkpointDir, { recursive: true });
    fs.writeFileSync(cpFile + '.tmp', JSON.stringify({ after: last.toString() }));
    fs.renameSync(cpFile + '.tmp', cpFile);
    pending = [];
    o.onProgress?.(copied, skipped);
    o.afterBatch?.(copied);
  };
  for await (const e of source.readAll(after !== undefined ? { after } : {})) {
    pending.push(e);
    if (pending.length >= (o.batch ?? 500)) await flush();
  }
  await flush();
  return { copied, skipped };
}
