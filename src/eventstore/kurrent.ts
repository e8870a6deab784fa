/**
 * The KurrentDB adapter of the event store port, on `@kurrent/kurrentdb-client`.
 *
 * - Events are JSON (`jsonEvent`); our metadata is the event's JSON metadata, as a flat object of strings
 *   (`actor` and `reason` are left out when null/absent), because multi-stream appends accept only
 *   string-valued metadata and both append paths must store the same shape.
 * - A position is the event's commit position.
 * - `append` uses `appendToStream`, which real servers route through `Streams.BatchAppend`; its reply is
 *   checked for `success` (with `throwOnAppendFailure=false` in the URL a failed append is not thrown).
 * - `appendMany` uses the v2 multi-stream append (`AppendSession`, KurrentDB 25.1+), atomic across streams,
 *   called here directly rather than through `multiStreamAppend` (the client does not recognise the v2
 *   NotLeader). Its reply carries each stream's revision but no per-stream position (the server fills only
 *   the stream and its revision), so each stream's position is read back: one read per stream, from the leader
 *   (`requiresLeader`), because a follower (`nodePreference=follower` or `random`) may not have the event
 *   just written yet. There is no non-atomic fallback.
 * - The server version is probed at open: 25.1.1+ (multi-stream appends; 25.1.0 has two multi-stream append
 *   bugs: streams it creates can read as missing, and revisions can be wrong at a chunk boundary; caught-up
 *   signals need 23.10+). Older servers are refused with one line.
 * - A write refused with NotLeader (v1 trailers or v2 `NotLeaderNodeErrorDetails`) reconnects — to the
 *   leader the error names, or through discovery for a cluster URL — and is retried once. A NotLeader ends
 *   the shared BatchAppend call, so every append in flight on it fails at once: the first reconnects, and
 *   the others retry on the client it made (one new client per leader change, not one per append); the old
 *   client is disposed once no call or subscription runs on it any more.
 * - Local validation (`validate.ts`) refuses what the server would, before anything is sent, and a payload
 *   JSON cannot hold (a BigInt, a cycle), as the other engines do.
 * - Identity: the first open writes `$stoat.store-identity` to stream `stoat-store-identity` (a `$` type, so
 *   the `$all` reads below never deliver it); every later open reads it back.
 * - `readAll`, `headPosition` and `subscribe` read `$all`, which needs a user with admin rights (or an
 *   ACL granting `$all` read) on a secured server; they skip system events (types starting with `$`).
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import {
  BACKWARDS,
  END,
  ErrorType,
  FORWARDS,
  KurrentDBClient,
  START,
  convertToCommandError,
  excludeSystemEvents,
  jsonEvent,
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
import { encodeWrites, validateEvents, validateWrites } from './validate.ts';
import type * as V2Pb from '@kurrent/kurrentdb-client/generated/kurrentdb/protocols/v2/streams/streams_pb.js';
import type * as V2Grpc from '@kurrent/kurrentdb-client/generated/kurrentdb/protocols/v2/streams/streams_grpc_pb.js';
import type * as V2ErrorsPb from '@kurrent/kurrentdb-client/generated/kurrentdb/protocols/v2/errors_pb.js';
import type * as StatusPb from '@kurrent/kurrentdb-client/generated/kurrentdb/protocols/v1/status_pb.js';
import type * as StructPb from 'google-protobuf/google/protobuf/struct_pb.js';

// The v2 protocol stubs as the client package ships them (the same google-protobuf instance as the client).
const require = createRequire(import.meta.url);
const clientDir = path.dirname(require.resolve('@kurrent/kurrentdb-client/package.json'));
const clientRequire = createRequire(path.join(clientDir, 'package.json'));
const gen = path.join(clientDir, 'generated/kurrentdb/protocols');
const v2 = clientRequire(`${gen}/v2/streams/streams_pb.js`) as typeof V2Pb;
const v2Grpc = clientRequire(`${gen}/v2/streams/streams_grpc_pb.js`) as typeof V2Grpc;
const v2Errors = clientRequire(`${gen}/v2/errors_pb.js`) as typeof V2ErrorsPb;
const statusPb = clientRequire(`${gen}/v1/status_pb.js`) as typeof StatusPb;
const structPb = clientRequire('google-protobuf/google/protobuf/struct_pb.js') as typeof StructPb;

/** The client's protected plumbing, used to make the AppendSession call ourselves. */
interface ClientInternals {
  execute<C, T>(Client: new (...a: never[]) => C, debugName: string, action: (client: C) => Promise<T>): Promise<T>;
  callArguments(o: { requiresLeader?: boolean }): [grpc.Metadata, grpc.CallOptions];
  readonly capabilities: Promise<{ serverVersion: string }>;
}

/** Stream holding the store's identity event. */
export const IDENTITY_STREAM = 'stoat-store-identity';
const IDENTITY_TYPE = '$stoat.store-identity';

/** The oldest server this adapter accepts (major, minor, patch). */
export const MIN_VERSION: readonly [number, number, number] = [25, 1, 1];

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

/** The leader a NotLeader error names (true when it names none), or undefined for any other error. */
function notLeader(err: unknown): { host: string; port: number } | true | undefined {
  if (isClientError(err, ErrorType.NOT_LEADER)) {
    const l = (err as { leader?: { address?: string; port?: number } }).leader;
    return l?.address && l.port ? { host: l.address, port: l.port } : true;
  }
  // The v2 API reports it in the status details, which the client does not convert.
  const md = (err as { metadata?: grpc.Metadata } | null)?.metadata;
  const bin = typeof md?.get === 'function' ? md.get('grpc-status-details-bin')[0] : undefined;
  if (!bin || typeof bin === 'string') return undefined;
  try {
    const details = statusPb.Status.deserializeBinary(new Uint8Array(bin)).getDetails();
    if (!details?.getTypeUrl().endsWith('NotLeaderNodeErrorDetails')) return undefined;
    const leader = v2Errors.NotLeaderNodeErrorDetails.deserializeBinary(details.getValue_asU8()).getCurrentLeader();
    return leader && leader.getHost() && leader.getPort() ? { host: leader.getHost(), port: leader.getPort() } : true;
  } catch {
    return undefined;
  }
}

/** The connection string pointed at one node (cluster URLs keep discovering on their own). */
function toLeaderUrl(url: string, leader: { host: string; port: number }): string {
  const m = /^([a-z+]+:\/\/)([^@/?]*@)?([^/?]*)(.*)$/.exec(url);
  if (!m || m[1]!.includes('+discover') || m[3]!.includes(',')) return url;
  return `${m[1]}${m[2] ?? ''}${leader.host}:${leader.port}${m[4]}`;
}

/** A connection string without its password, for messages. */
function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
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
  #client: KurrentDBClient;
  readonly #url: string;
  /** Clients replaced after a NotLeader; each is disposed once its last user is done (`#hold`). */
  readonly #retired = new Set<KurrentDBClient>();
  /** Calls and subscriptions under way, by client. */
  readonly #users = new Map<KurrentDBClient, number>();
  readonly #stats: StoreStats & { reconnects?: number } = { appends: 0, commits: 0 };
  readonly #pending = new Set<Promise<unknown>>();
  readonly #subscriptions = new Set<Subscription>();
  #closed = false;
  #identity: string | undefined;

  /** A store on a connection string; `openKurrentEventStore` also checks the server and reads the identity. */
  constructor(url: string) {
    this.#url = url;
    this.#client = KurrentDBClient.connectionString(url);
  }

  /** Checks the server version (one clear line when too old) and reads or creates the store's identity. */
  async init(): Promise<void> {
    const version = (await (this.#client as unknown as ClientInternals).capabilities).serverVersion;
    const m = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(version ?? '');
    if (!m) {
      throw new Error(`KurrentDB at ${redact(this.#url)} does not report its version (older than 21.10): Stoatish needs KurrentDB ${MIN_VERSION.join('.')} or later`);
    }
    const have = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
    const at = have.findIndex((v, i) => v !== MIN_VERSION[i]);
    if (at !== -1 && have[at]! < MIN_VERSION[at]!) {
      const why = have[0] === 25 && have[1] === 1 ? "25.1.0's multi-stream appends can leave new streams reading as missing and miscount revisions at a chunk boundary" : 'multi-stream appends need 25.1.1, subscription caught-up signals 23.10';
      throw new Error(`KurrentDB ${version} at ${redact(this.#url)} is too old: Stoatish needs ${MIN_VERSION.join('.')} or later (${why})`);
    }
    this.#identity = await this.#readIdentity();
  }

  async #readIdentity(): Promise<string> {
    const read = async (): Promise<string | undefined> => {
      try {
        return await this.#using(async (c) => {
          for await (const r of c.readStream(IDENTITY_STREAM, { fromRevision: START, maxCount: 1 })) {
            const id = (r.event?.data as { identity?: unknown } | undefined)?.identity;
            if (typeof id === 'string') return id;
          }
          return undefined;
        });
      } catch (err) {
        if (!isClientError(err, ErrorType.STREAM_NOT_FOUND)) throw err;
      }
      return undefined;
    };
    const found = await read();
    if (found) return found;
    const identity = `kurrentdb:${randomUUID()}`;
    try {
      const r = await this.#onLeader((c) => c.appendToStream(IDENTITY_STREAM, jsonEvent({ type: IDENTITY_TYPE, data: { identity } }), { streamState: 'no_stream' }));
      if (r.success) return identity;
    } catch (err) {
      if (!isClientError(err, ErrorType.WRONG_EXPECTED_VERSION)) throw err;
    }
    // Another process created it first.
    const again = await read();
    if (!again) throw new Error(`KurrentDB stream ${IDENTITY_STREAM} holds no store identity`);
    return again;
  }

  /** The store's identity (read at open). */
  async identity(): Promise<string> {
    if (this.#identity === undefined) this.#identity = await this.#readIdentity();
    return this.#identity;
  }

  /** Appends to one stream (BatchAppend on real servers, Append otherwise). */
  append(stream: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    return this.#track(async () => {
      this.#stats.appends++;
      validateEvents(stream, events);
      // A payload JSON cannot hold is refused here, as on the other engines (inside the client it would throw
      // where nothing catches it, and the append would never settle).
      encodeWrites([{ stream, events, expected }]);
      if (events.length === 0) return this.#appendNothing(stream, expected);
      try {
        const r = await this.#onLeader((c) => c.appendToStream(stream, events.map(toEventData), { streamState: toStreamState(expected) }));
        if (!r.success) {
          // throwOnAppendFailure=false: the failure comes back as a value (and its revision is not reliable).
          throw new WrongExpectedRevisionError(stream, expected, await this.streamRevision(stream));
        }
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
      validateWrites(writes);
      encodeWrites(writes);
      let result: Map<string, { revision: number; position: bigint | undefined }>;
      try {
        result = await this.#onLeader((c) => this.#appendSession(c, writes));
      } catch (err) {
        if (isClientError(err, ErrorType.WRONG_EXPECTED_VERSION)) {
          const e = err as WrongExpectedVersionError;
          const write = writes.find((w) => w.stream === e.streamName);
          throw new WrongExpectedRevisionError(e.streamName, write?.expected ?? 'any', actualOf(e));
        }
        throw err;
      }
      this.#stats.commits++;
      return Promise.all(
        writes.map(async (w): Promise<AppendResult> => {
          const r = result.get(w.stream);
          if (!r) throw new Error(`KurrentDB's multi-stream append reply has no result for ${w.stream}`);
          // Real servers leave the per-stream position out of the reply: read it back (from the leader).
          const position = r.position ?? (await this.#positionAt(w.stream, r.revision));
          if (position === undefined) throw new Error(`KurrentDB did not report the position of the append to ${w.stream}`);
          return { revision: r.revision, position };
        }),
      );
    });
  }

  /** One v2 AppendSession call; the reply's per-stream revisions (and positions, if a server ever sends them), by stream. */
  #appendSession(on: KurrentDBClient, writes: StreamWrite[]): Promise<Map<string, { revision: number; position: bigint | undefined }>> {
    const client = on as unknown as ClientInternals;
    return client.execute(v2Grpc.StreamsServiceClient as never, 'multiStreamAppend', (c: V2Grpc.StreamsServiceClient) => {
      return new Promise((resolve, reject) => {
        const sink = c.appendSession(...client.callArguments({ requiresLeader: true }), (error, response) => {
          // NotLeader stays raw (the client does not know the v2 form); everything else as the client's errors.
          if (error) return reject(notLeader(error) ? error : convertToCommandError(error));
          if (!response) return reject(new Error('KurrentDB sent an empty multi-stream append reply'));
          const out = new Map<string, { revision: number; position: bigint | undefined }>();
          for (const o of response.getOutputList()) {
            // Each stream's position is that of its last event (read back only if a server leaves it out).
            const p = o.hasPosition() ? o.getPosition() : undefined;
            out.set(o.getStream(), { revision: Number(o.getStreamRevision()), position: p === undefined ? undefined : BigInt(p) });
          }
          resolve(out);
        });
        sink.on('error', reject);
        for (const w of writes) {
          const req = new v2.AppendRequest().setStream(w.stream).setExpectedRevision(w.expected === 'any' ? '-2' : w.expected === 'no_stream' ? '-1' : String(w.expected));
          for (const e of w.events) {
            const record = new v2.AppendRecord().setRecordId(e.id).setSchema(new v2.SchemaInfo().setFormat(v2.SchemaFormat.SCHEMA_FORMAT_JSON).setName(e.type));
            for (const [k, v] of Object.entries(encodeMetadata(e.metadata))) record.getPropertiesMap().set(k, new structPb.Value().setStringValue(v));
            record.setData(Buffer.from(JSON.stringify(e.data ?? null), 'utf8'));
            req.addRecords(record);
          }
          sink.write(req);
        }
        sink.end();
      });
    });
  }

  /**
   * Runs a write on the current client; on NotLeader, runs it once more on a client connected to the leader.
   * Only the first write to fail on a client reconnects (to the named leader, or by discovery): the others that
   * were in flight on it (a NotLeader ends the shared BatchAppend call for all of them) retry on that new client.
   */
  async #onLeader<T>(fn: (client: KurrentDBClient) => Promise<T>): Promise<T> {
    const used = this.#client;
    let failure: unknown;
    try {
      return await this.#using(fn, used);
    } catch (err) {
      failure = err;
    }
    const leader = notLeader(failure);
    if (!leader) throw failure;
    if (this.#client === used) {
      this.#stats.reconnects = (this.#stats.reconnects ?? 0) + 1;
      this.#reconnect(leader);
    }
    return this.#using(fn, this.#client);
  }

  /** A new client; the old one is disposed once the calls and subscriptions still on it are done. */
  #reconnect(leader: { host: string; port: number } | true): void {
    const old = this.#client;
    this.#retired.add(old);
    this.#client = KurrentDBClient.connectionString(leader === true ? this.#url : toLeaderUrl(this.#url, leader));
    this.#disposeIfIdle(old);
  }

  /** Runs `fn` on a client (the current one by default), counted as one of its users. */
  async #using<T>(fn: (client: KurrentDBClient) => Promise<T>, on: KurrentDBClient = this.#client): Promise<T> {
    const release = this.#hold(on);
    try {
      return await fn(on);
    } finally {
      release();
    }
  }

  /** Counts a user of a client; the returned function ends it (once). */
  #hold(client: KurrentDBClient): () => void {
    this.#users.set(client, (this.#users.get(client) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const n = (this.#users.get(client) ?? 1) - 1;
      if (n > 0) this.#users.set(client, n);
      else {
        this.#users.delete(client);
        this.#disposeIfIdle(client);
      }
    };
  }

  /** Disposes a retired client nothing uses any more. */
  #disposeIfIdle(client: KurrentDBClient): void {
    if (!this.#retired.has(client) || this.#users.has(client)) return;
    this.#retired.delete(client);
    void client.dispose().catch(() => undefined);
  }

  /** Reads a stream; a missing stream reads as empty. */
  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const direction = options.direction ?? 'forwards';
    const out: RecordedEvent[] = [];
    if (options.maxCount !== undefined && options.maxCount <= 0) return out;
    try {
      await this.#using(async (c) => {
        for await (const r of c.readStream(stream, {
          direction: direction === 'backwards' ? BACKWARDS : FORWARDS,
          fromRevision: options.fromRevision !== undefined ? BigInt(options.fromRevision) : direction === 'backwards' ? END : START,
          ...(options.maxCount !== undefined ? { maxCount: options.maxCount } : {}),
        })) {
          const e = toRecorded(r);
          if (e) out.push(e);
        }
      });
    } catch (err) {
      if (isClientError(err, ErrorType.STREAM_NOT_FOUND)) return [];
      throw err;
    }
    return out;
  }

  /** Current revision of a stream, -1 when it does not exist. */
  async streamRevision(stream: string): Promise<number> {
    try {
      const found = await this.#using(async (c) => {
        for await (const r of c.readStream(stream, { direction: BACKWARDS, fromRevision: END, maxCount: 1 })) {
          if (r.event) return Number(r.event.revision);
        }
        return undefined;
      });
      if (found !== undefined) return found;
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
    const client = this.#client;
    const release = this.#hold(client);
    try {
      for await (const r of client.readAll({ fromPosition: readPosition(after), direction: FORWARDS, maxCount, filter: excludeSystemEvents() })) {
        const e = toRecorded(r);
        if (!e || (after !== undefined && e.position <= after)) continue;
        yield e;
        if (--remaining <= 0) return;
      }
    } finally {
      release();
    }
  }

  /** Position of the last non-system event in `$all`, or undefined when there is none. */
  async headPosition(): Promise<bigint | undefined> {
    return this.#using(async (c) => {
      for await (const r of c.readAll({ fromPosition: END, direction: BACKWARDS, maxCount: 1, filter: excludeSystemEvents() })) {
        const e = toRecorded(r);
        if (e) return e.position;
      }
      return undefined;
    });
  }

  /** Id of the event at a commit position of `$all` (a truncated or restored `$all` has none there, or another). */
  async eventIdAt(position: bigint): Promise<string | undefined> {
    try {
      for await (const r of this.#client.readAll({ fromPosition: readPosition(position), direction: FORWARDS, maxCount: 1, filter: excludeSystemEvents() })) {
        const e = toRecorded(r);
        return e && e.position === position ? e.id : undefined;
      }
    } catch (err) {
      // A position past the end, or not an event boundary of this log: nothing is there.
      if (isClientError(err, ErrorType.INVALID_ARGUMENT)) return undefined;
      throw err;
    }
    return undefined;
  }

  /** Subscribes to `$all` after a checkpoint, delivering batches with back pressure. */
  subscribe(options: SubscribeOptions): Subscription {
    const batchSize = Math.max(1, options.batchSize ?? 500);
    const client = this.#client;
    const source = client.subscribeToAll({ fromPosition: readPosition(options.after), filter: excludeSystemEvents() });
    // The subscription keeps its client in use (after a reconnection too) until it ends.
    const release = this.#hold(client);
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
    void running.finally(() => {
      this.#subscriptions.delete(subscription);
      release();
    });
    return subscription;
  }

  /** Counters: appends requested, appends the server committed, reconnections, and clients open (the current one and retired ones still in use). */
  stats(): StoreStats {
    return { ...this.#stats, clients: 1 + this.#retired.size } as StoreStats;
  }

  /** Waits for pending appends, stops subscriptions and disposes the client. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#pending]);
    await Promise.allSettled([...this.#subscriptions].map((s) => s.close()));
    await Promise.allSettled([this.#client, ...this.#retired].map((c) => c.dispose()));
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
    // From the leader (a follower may not have the event just written yet; one that knows it is not the
    // leader answers NotLeader, and the read moves to the leader like a write).
    return this.#onLeader(async (c) => {
      try {
        for await (const r of c.readStream(stream, { fromRevision: BigInt(revision), maxCount: 1, requiresLeader: true })) return positionOf(r);
      } catch (err) {
        if (!isClientError(err, ErrorType.STREAM_NOT_FOUND)) throw err;
      }
      return undefined;
    });
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

/**
 * Connects to KurrentDB (`kurrentdb://host:2113?tls=false`, `kurrent://…`, `esdb://…`), checks the server
 * version, reads (or creates) the store's identity, and checks that it answers a read of `$all` (which needs
 * admin rights on a secured server).
 */
export async function openKurrentEventStore(url: string): Promise<KurrentEventStore> {
  const store = new KurrentEventStore(url);
  try {
    await store.init();
    await store.headPosition();
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}
