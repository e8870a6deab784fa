// KurrentEventStore: the event store contract over the gRPC test double (and over a real KurrentDB when
// KURRENT_TEST_URL is set), plus checks of how the adapter uses the KurrentDB protocol.
import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { KurrentDBClient, jsonEvent } from '@kurrent/kurrentdb-client';
import { eventStoreContract } from './eventstore.contract.ts';
import { startKurrentDouble, type KurrentDouble } from './helpers/kurrentDouble.ts';
import { IDENTITY_STREAM, KurrentEventStore, openKurrentEventStore } from '../src/eventstore/kurrent.ts';
import { InvalidAppendError } from '../src/eventstore/validate.ts';
import { WrongExpectedRevisionError, type EventMetadata, type NewEvent, type RecordedEvent } from '../src/eventstore/port.ts';
import { until, WAIT_MS } from './helpers/wait.ts';

const meta = (): EventMetadata => ({ actor: 'user-1', requestId: 'req-1', at: new Date().toISOString(), scope: 'scope-1' });
const ev = (type = 'ThingHappened'): NewEvent => ({ id: randomUUID(), type, data: { n: 1 }, metadata: meta() });
const stream = () => `kurrent-${randomUUID().replace(/-/g, '')}`;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/** The double's log without the store's identity event. */
const ours = (double: KurrentDouble) => double.log.filter((e) => e.stream !== IDENTITY_STREAM);
/** A double and a store on it, both shut down by the subtest's teardown. */
async function openOnDouble(t: Test, options: Parameters<typeof startKurrentDouble>[0] = {}): Promise<{ double: KurrentDouble; store: KurrentEventStore }> {
  const double = await startKurrentDouble(options);
  const store = await openKurrentEventStore(double.url);
  t.teardown(async () => {
    await store.close();
    await double.stop();
  });
  return { double, store };
}

void eventStoreContract(t, 'KurrentDB (gRPC double)', async () => {
  const double = await startKurrentDouble();
  const store = await openKurrentEventStore(double.url);
  return {
    store,
    cleanup: async () => {
      await store.close();
      await double.stop();
    },
  };
});

const realUrl = process.env.KURRENT_TEST_URL;
if (realUrl) {
  void eventStoreContract(t, `KurrentDB at ${realUrl}`, async () => {
    const store = await openKurrentEventStore(realUrl);
    return { store, cleanup: () => store.close() };
  });
} else {
  t.test('KurrentDB (real server)', { skip: 'KURRENT_TEST_URL is not set (e.g. kurrentdb://127.0.0.1:2113?tls=false)' }, () => {});
}

t.test('appendMany is one multi-stream AppendSession on the wire', async (t) => {
  const { double, store } = await openOnDouble(t);
  const [a, b] = [stream(), stream()];
  const before = { ...double.calls };
  await store.appendMany([
    { stream: a, events: [ev(), ev()], expected: 'no_stream' },
    { stream: b, events: [ev()], expected: 'no_stream' },
  ]);
  t.equal((double.calls.appendSession ?? 0) - (before.appendSession ?? 0), 1, 'one AppendSession call');
  t.equal(double.calls.append ?? 0, before.append ?? 0, 'no single-stream Append calls');
  t.equal(ours(double).length, 3, 'three events in the log');

  const logged = double.log.length;
  await t.rejects(
    store.appendMany([
      { stream: stream(), events: [ev()], expected: 'no_stream' },
      { stream: a, events: [ev()], expected: 0 },
    ]),
    WrongExpectedRevisionError,
    'a revision conflict from the server becomes WrongExpectedRevisionError',
  );
  t.equal(double.log.length, logged, 'the double wrote nothing for the failed session');
  t.equal((double.calls.appendSession ?? 0) - (before.appendSession ?? 0), 2, 'the failed attempt was one AppendSession too');
});

t.test('servers too old are refused at open with one line', async (t) => {
  for (const [options, pattern] of [
    [{ legacy: true }, /does not report its version \(older than 21\.10\).*25\.1\.1 or later/],
    [{ version: '24.10.0' }, /KurrentDB 24\.10\.0 .* is too old: Stoatish needs 25\.1\.1 or later/],
    [{ version: '23.10.1' }, /KurrentDB 23\.10\.1 .* is too old/],
    // 25.1.0 has two multi-stream append bugs: the patch level counts.
    [{ version: '25.1.0' }, /KurrentDB 25\.1\.0 .* is too old: Stoatish needs 25\.1\.1 or later \(25\.1\.0's multi-stream appends/],
    [{ version: '25.1' }, /KurrentDB 25\.1 .* is too old: Stoatish needs 25\.1\.1/],
  ] as const) {
    const double = await startKurrentDouble(options);
    t.teardown(() => double.stop());
    const err = await openKurrentEventStore(double.url).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    t.match(err?.message, pattern, JSON.stringify(options));
    t.notOk(err?.message.includes('\n'), 'one line');
    t.equal(double.log.length, 0, 'nothing written to a refused server');
  }
  for (const version of ['25.1.1', '25.2.0', '26.0.0']) {
    const ok = await startKurrentDouble({ version });
    t.teardown(() => ok.stop());
    const store = await openKurrentEventStore(ok.url);
    await store.close();
    t.pass(`${version} is accepted`);
  }
});

t.test('system events are skipped, filtered on the server', async (t) => {
  const { double, store } = await openOnDouble(t);
  const raw = KurrentDBClient.connectionString(double.url);
  t.teardown(() => raw.dispose());
  const a = stream();
  const ours = await store.append(a, [ev(), ev()], 'no_stream');
  await raw.appendToStream('$stats-127.0.0.1:2113', jsonEvent({ type: '$statsCollected', data: { cpu: 1 } }));
  t.equal(double.log[double.log.length - 1]?.type, '$statsCollected', 'the log ends with a system event');

  t.equal(await store.headPosition(), ours.position, 'headPosition is the last non-system event');
  const all: RecordedEvent[] = [];
  for await (const e of store.readAll()) all.push(e);
  t.strictSame(
    all.map((e) => e.stream),
    [a, a],
    'readAll skips the system event',
  );
  t.ok((double.calls['read:filtered'] ?? 0) >= 2, 'readAll and headPosition ask the server to filter');

  const got: RecordedEvent[] = [];
  let caughtUp = false;
  const sub = store.subscribe({ onEvents: (events) => void got.push(...events), onCaughtUp: () => (caughtUp = true) });
  t.teardown(() => sub.close());
  await until('caught up', () => caughtUp, WAIT_MS, 5);
  await raw.appendToStream('$stats-127.0.0.1:2113', jsonEvent({ type: '$statsCollected', data: { cpu: 2 } }));
  const live = ev();
  await store.append(a, [live], 1);
  await until('live event', () => got.length >= 3, WAIT_MS, 5);
  t.strictSame(
    got.map((e) => e.type),
    ['ThingHappened', 'ThingHappened', 'ThingHappened'],
    'the subscription delivers no system events',
  );
  t.equal(got[2]?.id, live.id, 'the live event arrives after the skipped one');
  t.equal(double.calls['subscribe:filtered'], 1, 'the subscription asked the server to filter');
});

t.test('a subscription whose server goes away reports onError once', async (t) => {
  const double = await startKurrentDouble();
  const store = await openKurrentEventStore(double.url);
  t.teardown(() => store.close());
  await store.append(stream(), [ev()], 'no_stream');
  const errors: Error[] = [];
  let caughtUp = false;
  const sub = store.subscribe({ onEvents: () => {}, onCaughtUp: () => (caughtUp = true), onError: (err) => void errors.push(err) });
  await until('caught up', () => caughtUp, WAIT_MS, 5);
  await double.stop();
  await until('onError', () => errors.length > 0, WAIT_MS, 5);
  await sleep(50);
  t.equal(errors.length, 1, 'onError called once');
  t.ok(errors[0] instanceof Error, 'with an Error');
  await sub.close();
});

t.test('positions are commit positions, not counters', async (t) => {
  const { double, store } = await openOnDouble(t);
  const a = stream();
  const r = await store.append(a, [ev(), ev()], 'no_stream');
  const read = await store.readStream(a);
  t.strictSame(
    read.map((e) => e.position),
    ours(double).map((e) => e.position),
    "each event's position is the server's commit position",
  );
  t.equal(r.position, ours(double)[1]?.position, 'the append result is the commit position of its last event');
  t.ok(read[1]!.position - read[0]!.position > 1n, 'and they are not contiguous here');
});

t.test('appends go through BatchAppend, like against a real server (and through Append when it is not offered)', async (t) => {
  const { double, store } = await openOnDouble(t);
  const a = stream();
  const before = { ...double.calls };
  const r = await store.append(a, [ev(), ev()], 'no_stream');
  t.equal((double.calls['batchAppend:append'] ?? 0) - (before['batchAppend:append'] ?? 0), 1, 'one BatchAppend append');
  t.equal(double.calls.append ?? 0, before.append ?? 0, 'no Streams.Append call');
  t.equal(r.revision, 1);
  t.equal(r.position, ours(double).at(-1)?.position, 'the position from the BatchAppend reply');
  const err = await store.append(a, [ev()], 0).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof WrongExpectedRevisionError, 'a conflict through BatchAppend becomes WrongExpectedRevisionError');
  t.strictSame({ stream: (err as WrongExpectedRevisionError).stream, actual: (err as WrongExpectedRevisionError).actual }, { stream: a, actual: 1 });

  const plain = await openOnDouble(t, { noBatchAppend: true });
  const b = stream();
  await plain.store.append(b, [ev()], 'no_stream');
  t.equal(plain.double.calls.batchAppend ?? 0, 0, 'without BatchAppend advertised the client uses Append');
  t.ok((plain.double.calls.append ?? 0) >= 1);
});

t.test('throwOnAppendFailure=false: a failed append is still a WrongExpectedRevisionError with the real revision', async (t) => {
  const double = await startKurrentDouble();
  t.teardown(() => double.stop());
  for (const path of ['BatchAppend', 'Append']) {
    const d = path === 'Append' ? await startKurrentDouble({ noBatchAppend: true }) : double;
    if (d !== double) t.teardown(() => d.stop());
    const store = await openKurrentEventStore(`${d.url}&throwOnAppendFailure=false`);
    t.teardown(() => store.close());
    const a = stream();
    await store.append(a, [ev(), ev(), ev()], 'no_stream');
    const logged = d.log.length;
    const err = await store.append(a, [ev()], 0).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof WrongExpectedRevisionError, `${path}: the failure is not reported as success`);
    t.equal((err as WrongExpectedRevisionError | undefined)?.actual, 2, `${path}: with the stream's actual revision`);
    t.equal(d.log.length, logged, `${path}: nothing written`);
  }
});

t.test('the server deduplicates a retried append by event id; the stand-in does too', async (t) => {
  const { double, store } = await openOnDouble(t);
  const a = stream();
  const events = [ev(), ev()];
  const first = await store.append(a, events, 'any');
  const again = await store.append(a, events, 'any');
  t.equal(ours(double).length, 2, "appending the same ids again with 'any' writes nothing");
  t.strictSame(again, first, 'and reports the same revision and position');
  const exact = await store.append(a, events, 'no_stream');
  t.strictSame(exact, first, "the same ids at the revision the expectation names are a retry too ('no_stream')");
  const partial = await store.append(a, [events[1]!, ev()], 0).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(partial instanceof WrongExpectedRevisionError, 'a partial overlap is refused');
  t.equal(ours(double).length, 2);
  t.ok((double.calls.idempotent ?? 0) >= 2, 'the stand-in took the idempotent path');
});

t.test('NotLeader after a leader change: reconnect and retry once', async (t) => {
  const { double, store } = await openOnDouble(t);
  const a = stream();
  double.becomeFollower(1);
  const r = await store.append(a, [ev()], 'no_stream');
  t.equal(r.revision, 0, 'BatchAppend: the retry on the leader succeeded');
  t.equal(ours(double).length, 1, 'written once');
  double.becomeFollower(1);
  const many = await store.appendMany([
    { stream: a, events: [ev()], expected: 0 },
    { stream: stream(), events: [ev()], expected: 'no_stream' },
  ]);
  t.strictSame(many.map((m) => m.revision), [1, 0], 'AppendSession: the retry succeeded');
  t.equal(ours(double).length, 3);
  t.equal((store.stats() as { reconnects?: number }).reconnects, 2, 'one reconnection each');
  t.equal(double.calls.notLeader, 2);

  double.becomeFollower(2);
  const err = await store.append(a, [ev()], 1).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.equal((err as { type?: unknown } | undefined)?.type, 'not-leader', 'only one retry: a second NotLeader is reported');
  t.equal(ours(double).length, 3, 'nothing written');
  double.becomeFollower(0);
  await store.append(a, [ev()], 1);
  t.equal(await store.streamRevision(a), 2, 'the store keeps working afterwards');
});

t.test('appendMany: the reply has no per-stream position (as from a real server); each is read back from the leader', async (t) => {
  // With a follower preference, reads that do not insist on the leader are answered like a follower that
  // lacks the write just made.
  const double = await startKurrentDouble({ laggingFollowerReads: true });
  const store = await openKurrentEventStore(`${double.url}&nodePreference=follower`);
  t.teardown(async () => {
    await store.close();
    await double.stop();
  });
  const [a, b] = [stream(), stream()];
  await store.append(a, [ev()], 'no_stream');
  const reads = double.calls['read:leader'] ?? 0;
  const r = await store.appendMany([
    { stream: a, events: [ev(), ev()], expected: 0 },
    { stream: b, events: [ev()], expected: 'no_stream' },
  ]);
  const log = ours(double);
  t.strictSame(r.map((x) => x.position), [log[2]!.position, log[3]!.position], "each stream's own last position");
  t.strictSame(r.map((x) => x.revision), [2, 0]);
  t.equal((double.calls['read:leader'] ?? 0) - reads, 2, 'one read per stream, each requiring the leader');
  t.equal((await store.readStream(b)).length, 0, 'a read that does not require the leader misses the write (the stand-in lags like a follower)');
});

t.test('a NotLeader that ends the shared BatchAppend call: one reconnection for every append in flight, each retried', async (t) => {
  const { double, store } = await openOnDouble(t);
  await store.append(stream(), [ev()], 'no_stream'); // the BatchAppend call is open
  // A subscription on the first client keeps it in use after the reconnection.
  const seen: RecordedEvent[] = [];
  const sub = store.subscribe({ onEvents: (e) => void seen.push(...e) });
  t.teardown(() => sub.close());
  await until('the subscription delivers', () => seen.length === 1, WAIT_MS, 5);
  const clientsBefore = double.calls.getSupportedMethods ?? 0;
  double.becomeFollower(1);
  const names = Array.from({ length: 8 }, () => stream());
  const results = await Promise.allSettled(names.map((n) => store.append(n, [ev()], 'no_stream')));
  t.strictSame(results.map((r) => r.status), names.map(() => 'fulfilled'), 'every append in flight succeeded on its retry');
  t.equal(double.calls.notLeader, 1, 'one NotLeader ended the call');
  t.equal((store.stats() as { reconnects?: number }).reconnects, 1, 'one reconnection for all of them');
  t.equal((double.calls.getSupportedMethods ?? 0) - clientsBefore, 1, 'one new client connected');
  for (const n of names) t.equal((await store.readStream(n)).length, 1, `${n.slice(0, 16)}… written once`);
  const clients = () => (store.stats() as { clients?: number }).clients;
  t.equal(clients(), 2, 'the first client stays open while its subscription runs');
  await until('the subscription sees the retried appends', () => seen.length === 1 + names.length, WAIT_MS, 5);
  await sub.close();
  await until('the first client disposed once its subscription ended', () => clients() === 1, WAIT_MS, 5);
  t.equal(clients(), 1, 'one client left');
  await store.append(names[0]!, [ev()], 0);
  t.equal(await store.streamRevision(names[0]!), 1, 'the store works on');
});

t.test('a payload JSON cannot hold is refused before anything is sent, and the other appends go on', async (t) => {
  const { double, store } = await openOnDouble(t);
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  const [a, b, c] = [stream(), stream(), stream()];
  const r = await Promise.allSettled([
    store.append(a, [ev()], 'no_stream'),
    store.append(b, [{ ...ev(), data: { n: 1n } }], 'no_stream'),
    store.appendMany([
      { stream: b, events: [ev()], expected: 'no_stream' },
      { stream: c, events: [{ ...ev(), data: cycle }], expected: 'no_stream' },
    ]),
  ]);
  t.same(r.map((x) => x.status), ['fulfilled', 'rejected', 'rejected']);
  t.ok(r.slice(1).every((x) => x.status === 'rejected' && x.reason instanceof InvalidAppendError), 'both refused as invalid appends');
  t.strictSame(ours(double).map((e) => e.stream), [a], 'only the good append was written');
});

t.test('local validation: refused before anything is sent', async (t) => {
  const { double, store } = await openOnDouble(t);
  const calls = (double.calls.appendSession ?? 0) + (double.calls.batchAppend ?? 0);
  const a = stream();
  await t.rejects(store.append(a, [ev('has space')], 'any'), InvalidAppendError, 'event type outside the alphabet');
  await t.rejects(store.append(a, [ev('ünïcode')], 'any'), InvalidAppendError);
  await t.rejects(store.appendMany([]), InvalidAppendError, 'an empty multi-stream append');
  await t.rejects(store.appendMany([{ stream: a, events: [], expected: 'any' }]), InvalidAppendError, 'a stream without events');
  await t.rejects(
    store.appendMany([
      { stream: `${a}-X`, events: [ev()], expected: 'any' },
      { stream: `${a}-x`, events: [ev()], expected: 'any' },
    ]),
    InvalidAppendError,
    'stream names that differ only in case',
  );
  t.equal((double.calls.appendSession ?? 0) + (double.calls.batchAppend ?? 0), calls, 'nothing reached the server');
  t.equal(ours(double).length, 0);
  await store.append(a, [ev('Ok.v1:$type-_')], 'any');
  t.equal(ours(double).length, 1, 'the full alphabet is accepted');
});

t.test('identity: one per server, kept across opens, never in $all', async (t) => {
  const { double, store } = await openOnDouble(t);
  const id = await store.identity();
  t.match(id, /^kurrentdb:[0-9a-f-]{36}$/);
  const again = await openKurrentEventStore(double.url.replace('kurrentdb://', 'kurrent://'));
  t.teardown(() => again.close());
  t.equal(await again.identity(), id, 'a second open (kurrent:// scheme) reads the same identity');
  t.equal(double.log.filter((e) => e.stream === IDENTITY_STREAM).length, 1, 'written once');
  const other = await openOnDouble(t);
  t.not(await other.store.identity(), id, 'another server has another identity');
  const all: RecordedEvent[] = [];
  for await (const e of store.readAll()) all.push(e);
  t.equal(all.length, 0, 'readAll does not deliver it');
  t.equal(await store.headPosition(), undefined, 'nor does headPosition');
});
