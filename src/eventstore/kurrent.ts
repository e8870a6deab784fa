/**
 * The KurrentDB adapter of the event store port, on `@kurrent/kurrentdb-client`.
 *
 * - Events are JSON (`jsonEvent`); our metadata is the event's JSON metadata, as a flat object of strings
 *   (`actor` and `reason` are left out when null/absent), because multi-stream appends accept only
 *   string-valued metadata and both append paths must store the same shape.
 * - A position is the event's commit position.
 * - `append` uses `Streams.Append`; `appendMany` uses the v2 multi-stream append (`AppendSession`,
 *   KurrentDB 25.1+), which is atomic across streams. There is no non-atomic fallback.
 * - `readAll`, `headPosition` and `subscribe` skip system events (types starting with `$`).
 */
import {
  BACKWARDS,
  END,
  ErrorType,
  FORWARDS,
  KurrentDBClient,
  START,
  excludeSystemEvents,
  jsonEvent,
  type AppendStreamRequest,
  type AppendStreamState,
  type EventData,
  type JSONType,
  type ReadPosition,
  type ResolvedEvent,
  type WrongExpectedVersionError,
} from '@kurrent/kurrentdb-client';
import {
  WrongExpectedRevisionError,
  type AppendResult,
  type EventMetadata,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type StoreStats,
  type StreamWrite,
  type SubscribeOptions,
  type Subscription,
} from './port.ts';

/** The client's event as read back (a stream read, `$all` read or subscription item). */
type ClientResolved = Pick<ResolvedEvent, 'event' | 'commitPosition'>;

/** A server that does not know the position reports 2^64-1 (before KurrentDB 22.6, stream reads did). */
const NO_POSITION = (1n << 64n) - 1n;

/** Our metadata as the flat string map stored with each event. */
function encodeMetadata(m: EventMetadata): Record<string, string> {
  const out: Record<string, string> = { requestId: m.requestId, at: m.at, scope: m.scope };
  if (m.actor !== null) out.actor = m.actor;
  if (m.reason !== undefined) out.reason = m.reason;
  return out;
}

/** Reads our metadata back; events written by others decode with empty fields. */
function decodeMetadata(raw: unknown): EventMetadata {
  const m = raw !== null && typeof raw === 'object' && !(raw instanceof Uint8Array) ? (raw as Record<string, unknown>) : {};
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  const out: EventMetadata = { actor: typeof m.actor === 'string' ? m.actor : null, requestId: str(m.requestId), at: str(m.at), scope: str(m.scope) };
  if (typeof m.reason === 'string') out.reason = m.reason;
  return out;
}

function toEventData(e: NewEvent): EventData {
  // jsonEvent's types want an object/array/string; any JSON value serialises the same way.
  return jsonEvent({ id: e.id, type: e.type, data: e.data as JSONType, metadata: encodeMetadata(e.metadata) });
}

function toStreamState(expected: ExpectedRevision): AppendStreamState {
  return expected === 'any' || expected === 'no_stream' ? expected : BigInt(expected);
}

function isClientError(err: unknown, type: ErrorType): boolean {
  return err !== null && typeof err === 'object' && (err as { type?: unknown }).type === type;
}

/** The actual revision a WrongExpectedVersionError reports (-1 for no stream). */
function actualOf(err: WrongExpectedVersionError): number {
  return typeof err.actualState === 'bigint' ? Number(err.actualState) : -1;
}

function positionOf(r: ClientResolved): bigint | undefined {
  const p = r.event?.position?.commit ?? r.commitPosition;
  return p === undefined || p === NO_POSITION ? undefined : p;
}

/** Converts a read item; undefined for system events and links without their event. */
function toRecorded(r: ClientResolved): RecordedEvent | undefined {
  const e = r.event;
  if (!e || e.type.startsWith('$')) return undefined;
  const position = positionOf(r);
  if (position === undefined) {
    throw new Error(`KurrentDB did not report the position of ${e.streamId}@${e.revision} (KurrentDB 22.6+ is required)`);
  }
  return {
    id: e.id,
    stream: e.streamId,
    revision: Number(e.revision),
    position,
    type: e.type,
    data: e.data,
    metadata: decodeMetadata(e.metadata),
  };
}

function readPosition(after: bigint | undefined): ReadPosition {
  return after === undefined ? START : { commit: after, prepare: after };
}

/** The KurrentDB adapter of `EventStore`. */
export class KurrentEventStore implements EventStore {
  readonly #client: KurrentDBClient;
  readonly #stats: StoreStats = { appends: 0, commits: 0 };
  readonly #pending = new Set<Promise<unknown>>();
  readonly #subscriptions = new Set<Subscription>();
  #closed = false;

  /** Wraps a connected client; the store disposes it on close. */
  constructor(client: KurrentDBClient) {
    this.#client = client;
  }

  /** Appends to one stream through `Streams.Append`. */
  append(stream: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    return this.#track(async () => {
      this.#stats.appends++;
      if (events.length === 0) return this.#appendNothing(stream, expected);
      try {
        const r = await this.#client.appendToStream(stream, events.map(toEventData), { streamState: toStreamState(expected) });
        this.#stats.commits++;
        const revision = Number(r.nextExpectedRevision);
        const position = r.position?.commit ?? (await this.#positionAt(stream, revision));
        if (position === undefined) throw new Error(`KurrentDB did not report the position of the append to ${stream}`);
        return { revision, position };
      } catch (err) {
        if (isClientError(err, ErrorType.WRONG_EXPECTED_VERSION)) {
          throw new WrongExpectedRevisionError(stream, expected, actualOf(err as WrongExpectedVersionError));
        }
        throw err;
      }
    });
  }

  /** Appends to several streams atomically through the v2 multi-stream append. */
  appendMany(writes: StreamWrite[]): Promise<AppendResult[]> {
    return this.#track(async () => {
      this.#stats.appends++;
      const names = new Set(writes.map((w) => w.stream));
      if (names.size !== writes.length) throw new TypeError('appendMany: each stream may appear only once');
      if (writes.length === 0) return [];
      const requests: AppendStreamRequest[] = writes.map((w) => ({
        streamName: w.stream,
        expectedState: toStreamState(w.expected),
        events: w.events.map(toEventData),
      }));
      let result;
      try {
        result = await this.#client.multiStreamAppend(requests);
      } catch (err) {
        if (isClientError(err, ErrorType.WRONG_EXPECTED_VERSION)) {
          const e = err as WrongExpectedVersionError;
          const write = writes.find((w) => w.stream === e.streamName);
          throw new WrongExpectedRevisionError(e.streamName, write?.expected ?? 'any', actualOf(e));
        }
        throw err;
      }
      this.#stats.commits++;
      const revisions = new Map(result.responses.map((r) => [r.streamName, Number(r.revision)]));
      // The reply carries one position for the whole append; each stream's own is that of its last event,
      // read back at its exact revision (revisions never move, so this does not race with other writers).
      return Promise.all(
        writes.map(async (w): Promise<AppendResult> => {
          const revision = revisions.get(w.stream) ?? -1;
          return { revision, position: (await this.#positionAt(w.stream, revision)) ?? result.position };
        }),
      );
    });
  }

  /** Reads a stream; a missing stream reads as empty. */
  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const direction = options.direction ?? 'forwards';
    const out: RecordedEvent[] = [];
    if (options.maxCount !== undefined && options.maxCount <= 0) return out;
    try {
      for await (const r of this.#client.readStream(stream, {
        direction: direction === 'backwards' ? BACKWARDS : FORWARDS,
        fromRevision: options.fromRevision !== undefined ? BigInt(options.fromRevision) : direction === 'backwards' ? END : START,
        ...(options.maxCount !== undefined ? { maxCount: options.maxCount } : {}),
      })) {
        const e = toRecorded(r);
        if (e) out.push(e);
      }
    } catch (err) {
      if (isClientError(err, ErrorType.STREAM_NOT_FOUND)) return [];
      throw err;
    }
    return out;
  }

  /** Current revision of a stream, -1 when it does not exist. */
  async streamRevision(stream: string): Promise<number> {
    try {
      for await (const r of this.#client.readStream(stream, { direction: BACKWARDS, fromRevision: END, maxCount: 1 })) {
        if (r.event) return Number(r.event.revision);
      }
    } catch (err) {
      if (!isClientError(err, ErrorType.STREAM_NOT_FOUND)) throw err;
    }
    return -1;
  }

  /** Reads `$all` forwards (without system events) after a checkpoint. */
  async *readAll(options: ReadAllOptions = {}): AsyncIterable<RecordedEvent> {
    const { after } = options;
    let remaining = options.maxCount ?? Number.MAX_SAFE_INTEGER;
    if (remaining <= 0) return;
    // A read from a position includes the event there; the checkpoint is exclusive, so ask for one more.
    const maxCount = after === undefined || remaining === Number.MAX_SAFE_INTEGER ? remaining : remaining + 1;
    for await (const r of this.#client.readAll({ fromPosition: readPosition(after), direction: FORWARDS, maxCount, filter: excludeSystemEvents() })) {
      const e = toRecorded(r);
      if (!e || (after !== undefined && e.position <= after)) continue;
      yield e;
      if (--remaining <= 0) return;
    }
  }

  /** Position of the last non-system event in `$all`, or undefined when there is none. */
  async headPosition(): Promise<bigint | undefined> {
    for await (const r of this.#client.readAll({ fromPosition: END, direction: BACKWARDS, maxCount: 1, filter: excludeSystemEvents() })) {
      const e = toRecorded(r);
      if (e) return e.position;
    }
    return undefined;
  }

  /** Subscribes to `$all` after a checkpoint, delivering batches with back pressure. */
  subscribe(options: SubscribeOptions): Subscription {
    const batchSize = Math.max(1, options.batchSize ?? 500);
    const source = this.#client.subscribeToAll({ fromPosition: readPosition(options.after), filter: excludeSystemEvents() });
    let stopped = false;
    let readCount = 0; // items taken from the source
    let doneCount = 0; // items whose batch has been handled
    let caughtUpAt: number | undefined; // items that precede the caught-up marker
    let caughtUpCalled = false;
    let wake: (() => void) | undefined;
    const signal = () => {
      const w = wake;
      wake = undefined;
      w?.();
    };
    let failure: Error | undefined;
    const fail = (err: unknown) => {
      if (stopped) return;
      failure = err instanceof Error ? err : new Error(String(err));
      signal();
    };
    source.on('caughtUp', () => {
      // Everything pushed so far came before the marker: what we have taken plus what is buffered.
      caughtUpAt ??= readCount + source.readableLength;
      signal();
    });
    source.on('readable', signal);
    source.on('error', fail);
    source.on('end', signal);

    const loop = async () => {
      while (!stopped && !failure) {
        const batch: RecordedEvent[] = [];
        let taken = 0;
        while (batch.length < batchSize) {
          // Do not run past the caught-up marker, so onCaughtUp follows exactly the catch-up events.
          if (!caughtUpCalled && caughtUpAt !== undefined && readCount === caughtUpAt) break;
          const item = source.read() as ClientResolved | null;
          if (item === null) break;
          readCount++;
          taken++;
          try {
            const e = toRecorded(item);
            if (e && (options.after === undefined || e.position > options.after)) batch.push(e);
          } catch (err) {
            fail(err);
            break;
          }
        }
        if (failure) break;
        if (batch.length > 0) {
          try {
            await options.onEvents(batch);
          } catch (err) {
            fail(err);
            break;
          }
        }
        doneCount += taken;
        if (!caughtUpCalled && caughtUpAt !== undefined && doneCount >= caughtUpAt && !stopped) {
          caughtUpCalled = true;
          try {
            options.onCaughtUp?.();
          } catch (err) {
            fail(err);
            break;
          }
        }
        if (taken === 0) {
          if (stopped) break;
          if (source.readableEnded) {
            fail(new Error('the KurrentDB subscription ended'));
            break;
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
            // Data may have been pushed while read() ran or while the batch was being handled.
            if (source.readableLength > 0 || source.readableEnded || failure || stopped) signal();
          });
        }
      }
      if (failure && !stopped) {
        stopped = true;
        await source.unsubscribe().catch(() => undefined);
        options.onError?.(failure);
      }
    };
    // The loop catches everything it calls except onError; a throwing onError must not become an unhandled rejection.
    const running = loop().catch(() => undefined);

    const subscription: Subscription = {
      close: async () => {
        this.#subscriptions.delete(subscription);
        if (!stopped) {
          stopped = true;
          signal();
          await source.unsubscribe().catch(() => undefined);
        }
        await running;
      },
    };
    this.#subscriptions.add(subscription);
    void running.finally(() => this.#subscriptions.delete(subscription));
    return subscription;
  }

  /** Counters: appends requested, and appends the server committed. */
  stats(): StoreStats {
    return { ...this.#stats };
  }

  /** Waits for pending appends, stops subscriptions and disposes the client. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#pending]);
    await Promise.allSettled([...this.#subscriptions].map((s) => s.close()));
    await this.#client.dispose();
  }

  /** An empty append only checks the expectation; its position is that of the stream's last event (0 if none). */
  async #appendNothing(stream: string, expected: ExpectedRevision): Promise<AppendResult> {
    const cur = await this.streamRevision(stream);
    const holds = expected === 'any' || (expected === 'no_stream' ? cur === -1 : expected === cur);
    if (!holds) throw new WrongExpectedRevisionError(stream, expected, cur);
    return { revision: cur, position: (await this.#positionAt(stream, cur)) ?? 0n };
  }

  /** Position of the event at an exact revision (revisions never move, so this does not race). */
  async #positionAt(stream: string, revision: number): Promise<bigint | undefined> {
    if (revision < 0) return undefined;
    try {
      for await (const r of this.#client.readStream(stream, { fromRevision: BigInt(revision), maxCount: 1 })) return positionOf(r);
    } catch (err) {
      if (!isClientError(err, ErrorType.STREAM_NOT_FOUND)) throw err;
    }
    return undefined;
  }

  #track<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('the event store is closed'));
    const p = fn();
    this.#pending.add(p);
    void p.then(
      () => this.#pending.delete(p),
      () => this.#pending.delete(p),
    );
    return p;
  }
}

/** Connects to KurrentDB (`kurrentdb://host:2113?tls=false`) and checks that it answers a read of `$all`. */
export async function openKurrentEventStore(url: string): Promise<KurrentEventStore> {
  const store = new KurrentEventStore(KurrentDBClient.connectionString(url));
  try {
    await store.headPosition();
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}
