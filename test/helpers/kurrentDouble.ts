/**
 * An in-memory KurrentDB gRPC test double (stack-notes §4, Appendix A), grown to what
 * `@kurrent/kurrentdb-client` 1.3.1 needs for `KurrentEventStore`:
 * - `ServerFeatures.GetSupportedMethods` (lists Read, Append, BatchAppend and v2 AppendSession, like a real
 *   25.1 server, so the client appends through `Streams.BatchAppend` — the production path — and allows
 *   `multiStreamAppend`); the version it reports is an option, and `legacy` answers UNIMPLEMENTED like a
 *   server older than 21.10;
 * - `Streams.Append` and `Streams.BatchAppend` (expected revision any / no_stream / stream_exists / exact),
 *   with the server's idempotency: an append whose event ids are already the stream's events at the place
 *   the expectation names (the end of the stream for `any`) succeeds without writing again; a partial
 *   overlap is a WrongExpectedVersion;
 * - NotLeader: `becomeFollower(n)` makes the next n writes answer like a follower (v1: NOT_FOUND with the
 *   `exception: not-leader` and leader endpoint trailers; v2: FAILED_PRECONDITION with
 *   `NotLeaderNodeErrorDetails`), naming this double as the leader. On BatchAppend the NotLeader ends the whole
 *   shared call, as a node losing leadership does: every append in flight on it fails, none is written;
 * - `laggingFollowerReads`: reads that do not require the leader (no `requires-leader: true` header) are
 *   answered like a follower that has not replicated the latest write yet: they do not see its events;
 * - `Streams.Read`: stream and `$all`, forwards and backwards, count, StreamNotFound, `$all` filters
 *   (stream-name or event-type prefix/regex), and subscriptions (confirmation, catch-up, caught-up, live);
 * - v2 `StreamsService.AppendSession` (multi-stream append: all expected revisions hold and everything is
 *   written, or nothing is and a `StreamRevisionConflictErrorDetails` status comes back). Its reply is the
 *   server's: each stream's name and revision, no per-stream position, and the commit position of the whole
 *   write (KurrentDB's `MapToResult` fills only `Stream` and `StreamRevision` per output).
 * Positions grow like byte offsets (not contiguous); commit position = prepare position for every event.
 * The stubs come from the client package itself: they register in google-protobuf's global namespace.
 */
import { createRequire } from 'node:module';
import { EventEmitter } from 'node:events';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type * as StreamsPb from '@kurrent/kurrentdb-client/generated/kurrentdb/protocols/v1/streams_pb.js';
import type * as StreamsGrpc from '@kurrent/kurrentdb-client/generated/kurrentdb/protocols/v1/streams_grpc_pb.js';
import type * as SharedPb from '@kurrent/kurrentdb-client/generated/kurrentdb/protocols/v1/shared_pb.js';
import type * as FeaturesPb from '@kurrent/kurrentdb-client/generated/kurrentdb/protocols/v1/serverfeatures_pb.js';
import type * as FeaturesGrpc from '@kurrent/kurrentdb-client/generated/kurrentdb/protocols/v1/serverfeatures_grpc_pb.js';
import type * as StatusPb from '@kurrent/kurrentdb-client/generated/kurrentdb/protocols/v1/status_pb.js';
import type * as V2Pb from '@kurrent/kurrentdb-client/generated/kurrentdb/protocols/v2/streams/streams_pb.js';
import type * as V2Grpc from '@kurrent/kurrentdb-client/generated/kurrentdb/protocols/v2/streams/streams_grpc_pb.js';
import type * as V2ErrorsPb from '@kurrent/kurrentdb-client/generated/kurrentdb/protocols/v2/streams/errors_pb.js';
import type * as V2CoreErrorsPb from '@kurrent/kurrentdb-client/generated/kurrentdb/protocols/v2/errors_pb.js';
import type * as AnyPb from 'google-protobuf/google/protobuf/any_pb.js';
import type * as TimestampPb from 'google-protobuf/google/protobuf/timestamp_pb.js';

const require = createRequire(import.meta.url);
const clientDir = path.dirname(require.resolve('@kurrent/kurrentdb-client/package.json'));
const gen = path.join(clientDir, 'generated/kurrentdb/protocols');
// google-protobuf as the client resolves it, so the well-known types are the same instances.
const clientRequire = createRequire(path.join(clientDir, 'package.json'));
const pb = require(`${gen}/v1/streams_pb.js`) as typeof StreamsPb;
const streamsGrpc = require(`${gen}/v1/streams_grpc_pb.js`) as typeof StreamsGrpc;
const shared = require(`${gen}/v1/shared_pb.js`) as typeof SharedPb;
const featuresPb = require(`${gen}/v1/serverfeatures_pb.js`) as typeof FeaturesPb;
const featuresGrpc = require(`${gen}/v1/serverfeatures_grpc_pb.js`) as typeof FeaturesGrpc;
const statusPb = require(`${gen}/v1/status_pb.js`) as typeof StatusPb;
const v2 = require(`${gen}/v2/streams/streams_pb.js`) as typeof V2Pb;
const v2Grpc = require(`${gen}/v2/streams/streams_grpc_pb.js`) as typeof V2Grpc;
const v2Errors = require(`${gen}/v2/streams/errors_pb.js`) as typeof V2ErrorsPb;
const v2CoreErrors = require(`${gen}/v2/errors_pb.js`) as typeof V2CoreErrorsPb;
const anyPb = clientRequire('google-protobuf/google/protobuf/any_pb.js') as typeof AnyPb;
const timestampPb = clientRequire('google-protobuf/google/protobuf/timestamp_pb.js') as typeof TimestampPb;

/** One event as the double stores it. */
export interface DoubleEvent {
  id: string;
  stream: string;
  revision: number;
  position: bigint;
  type: string;
  contentType: string;
  /** .NET ticks as a decimal string. */
  created: string;
  customMetadata: Uint8Array;
  data: Uint8Array;
}

/** Options of `startKurrentDouble`. */
export interface KurrentDoubleOptions {
  /** Answer ServerFeatures with UNIMPLEMENTED, like a server older than 21.10. */
  legacy?: boolean;
  /** The version ServerFeatures reports (default 25.1.1). Before 25.1 AppendSession is not advertised. */
  version?: string;
  /** Reads without `requires-leader` miss the latest write's events, like a lagging follower's. */
  laggingFollowerReads?: boolean;
  /** Leave BatchAppend out of ServerFeatures (the client then uses Streams.Append). */
  noBatchAppend?: boolean;
}

/** A running double. */
export interface KurrentDouble {
  /** Connection string for `KurrentDBClient.connectionString`. */
  url: string;
  port: number;
  /** The global log, in position order (for assertions). */
  readonly log: readonly DoubleEvent[];
  /** RPCs served, by name (`append`, `appendSession`, `read`, `getSupportedMethods`; `read:filtered` and
   * `subscribe:filtered` for `$all` reads and subscriptions that carried a server-side filter; `read:leader`
   * for reads that required the leader). */
  readonly calls: Record<string, number>;
  /** The next `n` writes (Append, BatchAppend, AppendSession) answer NotLeader, naming this node as leader. */
  becomeFollower(n: number): void;
  /** Ends every open subscription from the server side (like a node restart or a leader change). */
  dropSubscriptions(): void;
  /**
   * Cuts `$all` back to its events up to `position` (a node restored from a backup, or a cluster that lost its
   * last commits); later writes continue from the end of what is left, so they may take the positions of lost events.
   */
  truncate(position: bigint): void;
  /** Shuts the server down, cancelling open subscriptions. */
  stop(): Promise<void>;
}

type Proposed = { id: string; type: string; contentType: string; customMetadata: Uint8Array; data: Uint8Array };

const EXPECT_ANY = -2n;
const EXPECT_NO_STREAM = -1n;
const EXPECT_EXISTS = -4n;

/** Starts a double on 127.0.0.1 and an ephemeral port. */
export async function startKurrentDouble(options: KurrentDoubleOptions = {}): Promise<KurrentDouble> {
  const streams = new Map<string, DoubleEvent[]>();
  const log: DoubleEvent[] = [];
  const bus = new EventEmitter();
  bus.setMaxListeners(0);
  const calls: Record<string, number> = {};
  const count = (name: string) => {
    calls[name] = (calls[name] ?? 0) + 1;
  };
  let boundPort = 0;
  let nextPosition = 4096n; // like a chunk header in front of the first record
  /** Position of the first event of the latest write (what a lagging follower has not replicated yet). */
  let latestWriteFrom: bigint | undefined;

  const ticks = () => (BigInt(Date.now()) * 10_000n + 621_355_968_000_000_000n).toString();
  const current = (stream: string) => (streams.get(stream)?.length ?? 0) - 1; // -1: no stream
  const holds = (expected: bigint, cur: number) =>
    expected === EXPECT_ANY ||
    (expected === EXPECT_NO_STREAM && cur === -1) ||
    (expected === EXPECT_EXISTS && cur >= 0) ||
    (expected >= 0n && expected === BigInt(cur));

  /**
   * The server's idempotency check: where the expectation says the events go (after `expected`, or at the
   * end of the stream for `any`), are they already there, by id? 'all' = every one is (a retry: succeed
   * without writing), 'some' = a partial overlap (refused), 'none' = a new write.
   */
  const alreadyWritten = (stream: string, expected: bigint, proposed: Proposed[]): 'all' | 'some' | 'none' => {
    const s = streams.get(stream) ?? [];
    if (proposed.length === 0 || s.length === 0) return 'none';
    let from: number;
    if (expected >= 0n) from = Number(expected) + 1;
    else if (expected === EXPECT_NO_STREAM) from = 0;
    else {
      // 'any' / stream_exists: the first id, looked up in the stream (the server keeps recent ids).
      from = s.findIndex((e) => e.id === proposed[0]!.id);
      if (from === -1) return 'none';
    }
    if (from >= s.length || s[from]!.id !== proposed[0]!.id) return 'none';
    for (let i = 0; i < proposed.length; i++) if (s[from + i]?.id !== proposed[i]!.id) return 'some';
    return 'all';
  };
  let followerFor = 0;
  const notLeaderTrailers = () => {
    const md = new grpc.Metadata();
    md.set('exception', 'not-leader');
    md.set('leader-endpoint-host', '127.0.0.1');
    md.set('leader-endpoint-port', String(boundPort));
    return md;
  };
  /** True (once per remaining count) when this write must be refused as a follower would. */
  const asFollower = () => {
    if (followerFor <= 0) return false;
    followerFor--;
    count('notLeader');
    return true;
  };

  /** Set while one write (an AppendSession) spans several streams. */
  let writing = false;
  /** Writes one stream's events; the caller has checked the expected revision. */
  const write = (stream: string, proposed: Proposed[]): DoubleEvent[] => {
    const s = streams.get(stream) ?? [];
    streams.set(stream, s);
    const created = ticks();
    if (!writing) latestWriteFrom = nextPosition;
    return proposed.map((p) => {
      const e: DoubleEvent = { ...p, stream, revision: s.length, position: nextPosition, created };
      // A record takes its header plus its payload: positions are byte offsets, not counters.
      nextPosition += 80n + BigInt(stream.length + p.type.length + p.data.length + p.customMetadata.length);
      s.push(e);
      log.push(e);
      return e;
    });
  };
  const publish = (events: DoubleEvent[]) => {
    for (const e of events) bus.emit('event', e);
  };

  const uuidString = (u: SharedPb.UUID | undefined): string => {
    const st = u?.getStructured();
    if (!st) return u?.getString() ?? '';
    const hex = (v: string) => BigInt.asUintN(64, BigInt(v)).toString(16).padStart(16, '0');
    const h = hex(st.getMostSignificantBits()) + hex(st.getLeastSignificantBits());
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  };
  const uuid = (id: string, structured: boolean) => {
    const u = new shared.UUID();
    if (!structured) return u.setString(id);
    const hex = id.replace(/-/g, '');
    const signed = (h: string) => BigInt.asIntN(64, BigInt(`0x${h}`)).toString();
    const st = new shared.UUID.Structured();
    st.setMostSignificantBits(signed(hex.slice(0, 16)));
    st.setLeastSignificantBits(signed(hex.slice(16)));
    return u.setStructured(st);
  };
  const toReadResp = (e: DoubleEvent, structured: boolean) => {
    const r = new pb.ReadResp.ReadEvent.RecordedEvent();
    r.setId(uuid(e.id, structured));
    r.setStreamIdentifier(new shared.StreamIdentifier().setStreamName(Buffer.from(e.stream)));
    r.setStreamRevision(String(e.revision));
    r.setPreparePosition(String(e.position));
    r.setCommitPosition(String(e.position));
    const m = r.getMetadataMap();
    m.set('type', e.type);
    m.set('content-type', e.contentType);
    m.set('created', e.created);
    r.setCustomMetadata(e.customMetadata);
    r.setData(e.data);
    const ev = new pb.ReadResp.ReadEvent().setEvent(r).setCommitPosition(String(e.position));
    return new pb.ReadResp().setEvent(ev);
  };
  const streamName = (id: SharedPb.StreamIdentifier | undefined) =>
    Buffer.from(id?.getStreamName_asU8() ?? new Uint8Array()).toString('utf8');

  /** The `$all` filter of a read request, as a predicate. */
  const filterOf = (o: StreamsPb.ReadReq.Options): ((e: DoubleEvent) => boolean) => {
    const f = o.getFilter();
    if (!o.hasFilter() || !f) return () => true;
    const onStream = f.hasStreamIdentifier();
    const expr = onStream ? f.getStreamIdentifier() : f.getEventType();
    if (!expr) return () => true;
    const prefixes = expr.getPrefixList();
    const regex = expr.getRegex() ? new RegExp(expr.getRegex()) : undefined;
    return (e) => {
      const subject = onStream ? e.stream : e.type;
      if (prefixes.length > 0) return prefixes.some((p) => subject.startsWith(p));
      return regex ? regex.test(subject) : true;
    };
  };

  const streamsImpl: grpc.UntypedServiceImplementation = {
    append(call: grpc.ServerReadableStream<StreamsPb.AppendReq, StreamsPb.AppendResp>, cb: grpc.sendUnaryData<StreamsPb.AppendResp>) {
      count('append');
      let opts: StreamsPb.AppendReq.Options | undefined;
      const proposed: Proposed[] = [];
      call.on('data', (req: StreamsPb.AppendReq) => {
        if (req.hasOptions()) opts = req.getOptions();
        const m = req.getProposedMessage();
        if (!m) return;
        const meta = m.getMetadataMap();
        proposed.push({
          id: uuidString(m.getId()),
          type: meta.get('type') ?? '',
          contentType: meta.get('content-type') ?? 'application/octet-stream',
          customMetadata: m.getCustomMetadata_asU8(),
          data: m.getData_asU8(),
        });
      });
      call.on('end', () => {
        if (!opts) return cb({ code: grpc.status.INVALID_ARGUMENT, details: 'append without options' });
        const stream = streamName(opts.getStreamIdentifier());
        const C = pb.AppendReq.Options.ExpectedStreamRevisionCase;
        const c = opts.getExpectedStreamRevisionCase();
        const expected =
          c === C.REVISION ? BigInt(opts.getRevision()) : c === C.NO_STREAM ? EXPECT_NO_STREAM : c === C.STREAM_EXISTS ? EXPECT_EXISTS : EXPECT_ANY;
        if (asFollower()) return cb({ code: grpc.status.NOT_FOUND, details: 'Leader info available', metadata: notLeaderTrailers() });
        const cur = current(stream);
        const resp = new pb.AppendResp();
        const dup = alreadyWritten(stream, expected, proposed);
        if (dup === 'all') {
          count('idempotent');
          const ok = new pb.AppendResp.Success().setCurrentRevision(String(cur));
          const p = String(streams.get(stream)![cur]!.position);
          ok.setPosition(new pb.AppendResp.Position().setCommitPosition(p).setPreparePosition(p));
          return cb(null, resp.setSuccess(ok));
        }
        if (!holds(expected, cur) || dup === 'some') {
          const w = new pb.AppendResp.WrongExpectedVersion();
          if (cur === -1) w.setCurrentNoStream(new shared.Empty());
          else w.setCurrentRevision(String(cur));
          if (c === C.REVISION) w.setExpectedRevision(opts.getRevision());
          else if (c === C.NO_STREAM) w.setExpectedNoStream(new shared.Empty());
          else w.setExpectedStreamExists(new shared.Empty());
          return cb(null, resp.setWrongExpectedVersion(w));
        }
        const added = write(stream, proposed);
        const ok = new pb.AppendResp.Success();
        const after = current(stream);
        if (after === -1) ok.setNoStream(new shared.Empty());
        else ok.setCurrentRevision(String(after));
        const last = added[added.length - 1];
        if (last) {
          const p = String(last.position);
          ok.setPosition(new pb.AppendResp.Position().setCommitPosition(p).setPreparePosition(p));
        } else ok.setNoPosition(new shared.Empty());
        cb(null, resp.setSuccess(ok));
        publish(added);
      });
    },

    read(call: grpc.ServerWritableStream<StreamsPb.ReadReq, StreamsPb.ReadResp>) {
      count('read');
      const o = call.request.getOptions();
      if (o?.hasFilter()) count(o.hasSubscription() ? 'subscribe:filtered' : 'read:filtered');
      if (!o) return void call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: 'read without options' });
      const structured = o.getUuidOption()?.hasStructured() ?? false;
      const leaderRead = call.metadata.get('requires-leader')[0] === 'true';
      if (leaderRead) count('read:leader');
      // A lagging follower has not replicated the latest write: a read that does not require the leader misses it.
      const cut = options.laggingFollowerReads && !leaderRead && !o.hasSubscription() ? latestWriteFrom : undefined;
      const replicated = (l: DoubleEvent[]) => (cut === undefined ? l : l.filter((e) => e.position < cut));
      const backwards = o.getReadDirection() === pb.ReadReq.Options.ReadDirection.BACKWARDS;
      const subscription = o.hasSubscription();
      const all = o.getStreamOptionCase() === pb.ReadReq.Options.StreamOptionCase.ALL;
      const matches = all ? filterOf(o) : () => true;
      const send = (e: DoubleEvent) => call.write(toReadResp(e, structured));

      // `src` holds the events to read (a stream or the log); `from` is the index of the first one to send.
      let src: DoubleEvent[];
      let name = '$all';
      let from: number; // backwards reads go down from it
      if (all) {
        src = replicated(log);
        const a = o.getAll();
        const pos = a?.getPosition();
        if (pos) {
          const p = BigInt(pos.getCommitPosition());
          // Reads include the event at the position; subscriptions start after it; backwards reads go before it.
          from = subscription
            ? src.findIndex((e) => e.position > p)
            : backwards
              ? src.findLastIndex((e) => e.position < p)
              : src.findIndex((e) => e.position >= p);
          if (from === -1 && !backwards) from = src.length;
        } else if (a?.hasEnd()) from = backwards ? src.length - 1 : src.length;
        else from = backwards ? -1 : 0;
      } else {
        const so = o.getStream();
        name = streamName(so?.getStreamIdentifier());
        const stored = streams.get(name);
        const s = stored && !subscription ? replicated(stored) : stored;
        if ((!s || s.length === 0) && !subscription) {
          const nf = new pb.ReadResp.StreamNotFound().setStreamIdentifier(so?.getStreamIdentifier());
          call.write(new pb.ReadResp().setStreamNotFound(nf));
          return call.end();
        }
        src = s ?? [];
        if (so?.hasRevision()) {
          const r = Number(so.getRevision());
          from = subscription ? r + 1 : backwards ? Math.min(r, src.length - 1) : r;
        } else if (so?.hasEnd()) from = backwards ? src.length - 1 : src.length;
        else from = backwards ? -1 : 0;
      }

      if (!subscription) {
        let n = o.hasCount() ? BigInt(o.getCount()) : BigInt(Number.MAX_SAFE_INTEGER);
        if (backwards) {
          for (let i = from; i >= 0 && n > 0n; i--) if (matches(src[i]!)) (send(src[i]!), n--);
        } else {
          for (let i = from; i < src.length && n > 0n; i++) if (matches(src[i]!)) (send(src[i]!), n--);
        }
        return call.end();
      }

      // Subscription: confirmation, catch-up, caught-up, then live events. Nothing can be appended while
      // this synchronous block runs, so no event falls between the catch-up and the live listener.
      call.write(new pb.ReadResp().setConfirmation(new pb.ReadResp.SubscriptionConfirmation().setSubscriptionId(`sub-${Math.random().toString(36).slice(2)}`)));
      const snapshot = all ? log : (streams.get(name) ?? []);
      for (let i = from; i < snapshot.length; i++) if (matches(snapshot[i]!)) send(snapshot[i]!);
      const caughtUp = new pb.ReadResp.CaughtUp().setTimestamp(timestampPb.Timestamp.fromDate(new Date()));
      const tail = snapshot[snapshot.length - 1];
      if (all && tail) {
        const p = String(tail.position);
        caughtUp.setPosition(new pb.ReadResp.Position().setCommitPosition(p).setPreparePosition(p));
      } else if (!all && tail) caughtUp.setStreamRevision(String(tail.revision));
      call.write(new pb.ReadResp().setCaughtUp(caughtUp));
      const onEvent = (e: DoubleEvent) => {
        if ((all || e.stream === name) && matches(e)) send(e);
      };
      bus.on('event', onEvent);
      const stop = () => {
        bus.off('event', onEvent);
      };
      call.on('cancelled', stop);
      call.on('close', stop);
      call.on('error', stop);
      subscriptions.add(call);
      call.on('close', () => subscriptions.delete(call));
    },

    delete(_call: unknown, cb: grpc.sendUnaryData<unknown>) {
      cb({ code: grpc.status.UNIMPLEMENTED });
    },
    tombstone(_call: unknown, cb: grpc.sendUnaryData<unknown>) {
      cb({ code: grpc.status.UNIMPLEMENTED });
    },
    batchAppend(call: grpc.ServerDuplexStream<StreamsPb.BatchAppendReq, StreamsPb.BatchAppendResp>) {
      count('batchAppend');
      // One duplex stream carries many appends, each a run of requests sharing a correlation id; the
      // first carries the options, the last `is_final`.
      const open = new Map<string, { options: StreamsPb.BatchAppendReq.Options | undefined; proposed: Proposed[]; correlation: SharedPb.UUID | undefined }>();
      let ending = false;
      call.on('data', (req: StreamsPb.BatchAppendReq) => {
        // This node is no longer the leader: whatever else arrives on the call is not written.
        if (ending) return;
        const key = uuidString(req.getCorrelationId());
        const entry = open.get(key) ?? { options: undefined, proposed: [], correlation: req.getCorrelationId() };
        open.set(key, entry);
        if (req.hasOptions()) entry.options = req.getOptions();
        for (const m of req.getProposedMessagesList()) {
          const meta = m.getMetadataMap();
          entry.proposed.push({
            id: uuidString(m.getId()),
            type: meta.get('type') ?? '',
            contentType: meta.get('content-type') ?? 'application/octet-stream',
            customMetadata: m.getCustomMetadata_asU8(),
            data: m.getData_asU8(),
          });
        }
        if (!req.getIsFinal()) return;
        open.delete(key);
        count('batchAppend:append');
        const o = entry.options;
        const resp = new pb.BatchAppendResp().setCorrelationId(entry.correlation);
        const fail = (code: number, message: string, detail?: { pack: Uint8Array; type: string }) => {
          const status = new statusPb.Status().setCode(code).setMessage(message);
          if (detail) {
            const any = new anyPb.Any();
            any.pack(detail.pack, detail.type);
            status.setDetails(any);
          }
          call.write(resp.setError(status));
        };
        if (!o) return fail(3, 'the first request of an append must carry its options');
        resp.setStreamIdentifier(o.getStreamIdentifier());
        if (asFollower()) {
          // A follower ends the whole call like the v1 Append answers: NOT_FOUND with the leader trailers. The
          // appends still in flight on the call (their requests arrive in the meantime) fail with it.
          ending = true;
          setTimeout(() => call.emit('error', { code: grpc.status.NOT_FOUND, details: 'Leader info available', metadata: notLeaderTrailers() }), 20);
          return;
        }
        const stream = streamName(o.getStreamIdentifier());
        const C = pb.BatchAppendReq.Options.ExpectedStreamPositionCase;
        const c = o.getExpectedStreamPositionCase();
        const expected =
          c === C.STREAM_POSITION ? BigInt(o.getStreamPosition()) : c === C.NO_STREAM ? EXPECT_NO_STREAM : c === C.STREAM_EXISTS ? EXPECT_EXISTS : EXPECT_ANY;
        if (c === C.STREAM_POSITION) resp.setStreamPosition(o.getStreamPosition());
        else if (c === C.NO_STREAM) resp.setNoStream(new shared.Empty());
        else if (c === C.STREAM_EXISTS) resp.setStreamExists(new shared.Empty());
        else resp.setAny(new shared.Empty());
        const cur = current(stream);
        const dup = alreadyWritten(stream, expected, entry.proposed);
        const success = (revision: number, position: bigint | undefined) => {
          const ok = new pb.BatchAppendResp.Success();
          if (revision === -1) ok.setNoStream(new shared.Empty());
          else ok.setCurrentRevision(String(revision));
          if (position === undefined) ok.setNoPosition(new shared.Empty());
          else ok.setPosition(new shared.AllStreamPosition().setCommitPosition(String(position)).setPreparePosition(String(position)));
          call.write(resp.setSuccess(ok));
        };
        if (dup === 'all') {
          count('idempotent');
          return success(cur, streams.get(stream)![cur]!.position);
        }
        if (!holds(expected, cur) || dup === 'some') {
          const w = new shared.WrongExpectedVersion();
          if (cur === -1) w.setCurrentNoStream(new shared.Empty());
          else w.setCurrentStreamRevision(String(cur));
          if (c === C.STREAM_POSITION) w.setExpectedStreamPosition(o.getStreamPosition());
          else if (c === C.NO_STREAM) w.setExpectedNoStream(new shared.Empty());
          else if (c === C.STREAM_EXISTS) w.setExpectedStreamExists(new shared.Empty());
          else w.setExpectedAny(new shared.Empty());
          return fail(9, `WrongExpectedVersion on ${stream}`, { pack: w.serializeBinary(), type: 'event_store.client.WrongExpectedVersion' });
        }
        const added = write(stream, entry.proposed);
        success(current(stream), added[added.length - 1]?.position);
        publish(added);
      });
      call.on('end', () => call.end());
    },
  };

  const v2Impl: grpc.UntypedServiceImplementation = {
    appendSession(call: grpc.ServerReadableStream<V2Pb.AppendRequest, V2Pb.AppendSessionResponse>, cb: grpc.sendUnaryData<V2Pb.AppendSessionResponse>) {
      count('appendSession');
      const requests: V2Pb.AppendRequest[] = [];
      call.on('data', (req: V2Pb.AppendRequest) => requests.push(req));
      call.on('end', () => {
        if (asFollower()) {
          const leader = new v2CoreErrors.NotLeaderNodeErrorDetails().setCurrentLeader(
            new v2CoreErrors.NotLeaderNodeErrorDetails.NodeInfo().setHost('127.0.0.1').setPort(boundPort),
          );
          const any = new anyPb.Any();
          any.pack(leader.serializeBinary(), 'kurrent.rpc.NotLeaderNodeErrorDetails');
          const status = new statusPb.Status().setCode(9).setMessage('not the leader').setDetails(any);
          const md = new grpc.Metadata();
          md.set('grpc-status-details-bin', Buffer.from(status.serializeBinary()));
          return cb({ code: grpc.status.FAILED_PRECONDITION, details: 'not the leader', metadata: md });
        }
        // Check every stream first; write only when all hold (atomic).
        const seen = new Set<string>();
        for (const req of requests) {
          const stream = req.getStream();
          if (seen.has(stream)) return cb({ code: grpc.status.INVALID_ARGUMENT, details: `stream ${stream} appears twice in the session` });
          seen.add(stream);
          const expected = BigInt(req.getExpectedRevision() ?? EXPECT_ANY);
          const cur = current(stream);
          if (!holds(expected, cur)) {
            const d = new v2Errors.StreamRevisionConflictErrorDetails()
              .setStream(stream)
              .setExpectedRevision(expected.toString())
              .setActualRevision(String(cur));
            const any = new anyPb.Any();
            any.pack(d.serializeBinary(), 'kurrentdb.protocol.v2.streams.errors.StreamRevisionConflictErrorDetails');
            const status = new statusPb.Status().setCode(9).setMessage(`revision conflict on ${stream}`).setDetails(any);
            const md = new grpc.Metadata();
            md.set('grpc-status-details-bin', Buffer.from(status.serializeBinary()));
            return cb({ code: grpc.status.FAILED_PRECONDITION, details: `revision conflict on ${stream}`, metadata: md });
          }
        }
        const added: DoubleEvent[] = [];
        const resp = new v2.AppendSessionResponse();
        latestWriteFrom = nextPosition;
        writing = true;
        for (const req of requests) {
          const stream = req.getStream();
          const proposed = req.getRecordsList().map((r): Proposed => {
            const props: Record<string, unknown> = {};
            for (const [k, v] of r.getPropertiesMap().entries()) props[k] = v.toJavaScript();
            const format = r.getSchema()?.getFormat();
            return {
              id: r.getRecordId() ?? '',
              type: r.getSchema()?.getName() ?? '',
              contentType: format === v2.SchemaFormat.SCHEMA_FORMAT_JSON ? 'application/json' : 'application/octet-stream',
              // Properties surface as the event's JSON metadata, as KurrentDB does for v1 readers.
              customMetadata: Object.keys(props).length ? Buffer.from(JSON.stringify(props)) : new Uint8Array(),
              data: r.getData_asU8(),
            };
          });
          const events = write(stream, proposed);
          added.push(...events);
          // Like the server: the stream and its revision only (no per-stream position).
          resp.addOutput(new v2.AppendResponse().setStream(stream).setStreamRevision(String(current(stream))));
        }
        writing = false;
        resp.setPosition(String(added[added.length - 1]?.position ?? -1n));
        cb(null, resp);
        publish(added);
      });
    },
    appendRecords(_call: unknown, cb: grpc.sendUnaryData<unknown>) {
      cb({ code: grpc.status.UNIMPLEMENTED });
    },
  };

  const featuresImpl: grpc.UntypedServiceImplementation = {
    getSupportedMethods(_call: unknown, cb: grpc.sendUnaryData<FeaturesPb.SupportedMethods>) {
      count('getSupportedMethods');
      const method = (service: string, name: string) => new featuresPb.SupportedMethod().setServiceName(service).setMethodName(name);
      const version = options.version ?? '25.1.1';
      const [major = 0, minor = 0] = version.split('.').map(Number);
      const methods = [method('event_store.client.streams.Streams', 'Read'), method('event_store.client.streams.Streams', 'Append')];
      if (!options.noBatchAppend) methods.push(method('event_store.client.streams.Streams', 'BatchAppend'));
      if (major > 25 || (major === 25 && minor >= 1)) methods.push(method('kurrentdb.protocol.v2.streams.StreamsService', 'AppendSession'));
      const res = new featuresPb.SupportedMethods().setEventStoreServerVersion(version).setMethodsList(methods);
      cb(null, res);
    },
  };

  const subscriptions = new Set<grpc.ServerWritableStream<StreamsPb.ReadReq, StreamsPb.ReadResp>>();
  const server = new grpc.Server();
  server.addService(streamsGrpc.StreamsService, streamsImpl);
  if (!options.legacy) {
    server.addService(v2Grpc.StreamsServiceService, v2Impl);
    server.addService(featuresGrpc.ServerFeaturesService, featuresImpl);
  }
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  boundPort = port;
  return {
    url: `kurrentdb://127.0.0.1:${port}?tls=false`,
    port,
    log,
    calls,
    becomeFollower: (n: number) => {
      followerFor = n;
    },
    dropSubscriptions: () => {
      for (const s of subscriptions) s.end();
    },
    truncate: (position: bigint) => {
      const keep = log.filter((e) => e.position <= position);
      log.length = 0;
      log.push(...keep);
      streams.clear();
      for (const e of keep) {
        const s = streams.get(e.stream) ?? [];
        s.push(e);
        streams.set(e.stream, s);
      }
      const last = keep[keep.length - 1];
      nextPosition = last ? last.position + 80n + BigInt(last.stream.length + last.type.length + last.data.length + last.customMetadata.length) : 4096n;
    },
    stop: async () => {
      for (const s of subscriptions) s.end();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.forceShutdown(), 2000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}
