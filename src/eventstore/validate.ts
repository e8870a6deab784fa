/**
 * Local validation of appends, shared by every adapter, so a request KurrentDB would refuse is refused the
 * same way (and before anything is sent) on every engine:
 * - an event type must match `^[a-zA-Z0-9_.$:-]+$` (the schema-name rule of KurrentDB's v2 append API);
 * - a stream name must not be empty;
 * - a multi-stream append needs at least one stream, at least one event per stream, and names each stream
 *   once — also counting names that differ only in case as the same stream (KurrentDB's multi-stream append
 *   refuses them as duplicates).
 *
 * `encodeWrites` turns an append's payloads into JSON text before it joins a group commit (SQLite, PostgreSQL),
 * so a payload JSON cannot hold (a BigInt, a cycle) fails that append alone, never the others of its group.
 */
import type { ExpectedRevision, NewEvent, StreamWrite } from './port.ts';

/** An event whose data and metadata are already JSON text. */
export interface EncodedEvent {
  id: string;
  type: string;
  data: string;
  metadata: string;
}

/** One stream's part of an append, encoded (`encodeWrites`). */
export interface EncodedWrite {
  stream: string;
  events: EncodedEvent[];
  expected: ExpectedRevision;
}

/** The append was refused before reaching the store: nothing was written. */
export class InvalidAppendError extends TypeError {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidAppendError';
  }
}

export const EVENT_TYPE = /^[a-zA-Z0-9_.$:-]+$/;

/** Checks one stream's events. */
export function validateEvents(stream: string, events: NewEvent[]): void {
  if (stream.length === 0) throw new InvalidAppendError('the stream name is empty');
  for (const e of events) {
    if (typeof e.type !== 'string' || !EVENT_TYPE.test(e.type)) {
      throw new InvalidAppendError(`event type ${JSON.stringify(e.type)} on ${stream}: letters, digits and _.$:- only`);
    }
  }
}

/** Checks a multi-stream append. */
export function validateWrites(writes: StreamWrite[]): void {
  if (writes.length === 0) throw new InvalidAppendError('a multi-stream append needs at least one stream');
  const seen = new Map<string, string>();
  for (const w of writes) {
    validateEvents(w.stream, w.events);
    if (w.events.length === 0) throw new InvalidAppendError(`a multi-stream append needs at least one event per stream (${w.stream} has none)`);
    const key = w.stream.toLowerCase();
    const other = seen.get(key);
    if (other !== undefined) {
      throw new InvalidAppendError(other === w.stream ? `stream ${w.stream} appears twice` : `streams ${other} and ${w.stream} differ only in case`);
    }
    seen.set(key, w.stream);
  }
}

/** Whether a stream at revision `actual` (-1: no stream) satisfies an append's expected revision (SQLite, PostgreSQL). */
export function matchesExpected(expected: ExpectedRevision, actual: number): boolean {
  if (expected === 'any') return true;
  if (expected === 'no_stream') return actual === -1;
  return expected === actual;
}

/** Encodes every event's data (undefined as null) and metadata as JSON text; refuses what JSON cannot hold. */
export function encodeWrites(writes: StreamWrite[]): EncodedWrite[] {
  return writes.map((w) => ({
    stream: w.stream,
    expected: w.expected,
    events: w.events.map((e, i) => ({ id: e.id, type: e.type, data: toJson(e.data ?? null, w.stream, i, 'data'), metadata: toJson(e.metadata, w.stream, i, 'metadata') })),
  }));
}

function toJson(value: unknown, stream: string, index: number, part: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value) as string | undefined;
  } catch (err) {
    throw new InvalidAppendError(`event ${index} on ${stream}: its ${part} is not JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  if (typeof text !== 'string') throw new InvalidAppendError(`event ${index} on ${stream}: its ${part} is not JSON`);
  return text;
}
