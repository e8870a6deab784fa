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
import type { EventStore, RecordedEvent, StreamWrite } from '../eventstore/port.ts';
import { WrongExpectedRevisionError } from '../eventstore/port.ts';
import { SqliteEventStore } from '../eventstore/sqlite.ts';

/** Opens a store from a URL: `kurrentdb://…`/`esdb://…`, or `sqlite:<path>` for an embedded file. */
export async function openStoreUrl(url: string): Promise<EventStore> {
  if (url.startsWith('sqlite:')) return new SqliteEventStore(path.resolve(url.slice('sqlite:'.length)));
  if (/^(kurrentdb|esdb|kdb)(\+discover)?:\/\//.test(url)) {
    const { openKurrentEventStore } = await import('../eventstore/kurrent.ts');
    return openKurrentEventStore(url);
  }
  throw new Error(`unknown event store URL "${url}" (kurrentdb://…, esdb://… or sqlite:<path>)`);
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

/** Follows the log, calling `onEvent` for matching events until the returned stop function is called. */
export async function tailEvents(store: EventStore, o: TailOptions, onEvent: (e: RecordedEvent) => void): Promise<() => Promise<void>> {
  const after = o.fromStart ? undefined : o.after ?? (await store.headPosition());
  const sub = store.subscribe({
    ...(after !== undefined ? { after } : {}),
    onEvents: (events) => {
      for (const e of events) if (tailMatches(e, o)) onEvent(e);
    },
  });
  return () => sub.close();
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
  /** Appends runs one by one, skipping runs a previous (interrupted) run already copied. */
  const appendRuns = async (runs: StreamWrite[]) => {
    for (const write of runs) {
      try {
        await target.append(write.stream, write.events, write.expected);
        copied += write.events.length;
      } catch (err) {
        if (!(err instanceof WrongExpectedRevisionError)) throw err;
        const have = await target.streamRevision(write.stream);
        const lastRevision = (write.expected === 'no_stream' ? -1 : (write.expected as number)) + write.events.length;
        if (have >= lastRevision) skipped += write.events.length;
        else throw new Error(`target stream ${write.stream} is at revision ${have}, cannot place revision ${lastRevision}: it has events of its own`);
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
        if (!(err instanceof WrongExpectedRevisionError)) throw err;
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
