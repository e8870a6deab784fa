// KurrentEventStore: the event store contract over the gRPC test double (and over a real KurrentDB when
// KURRENT_TEST_URL is set), plus checks of how the adapter uses the KurrentDB protocol.
import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { KurrentDBClient, jsonEvent } from '@kurrent/kurrentdb-client';
import { eventStoreContract } from './eventstore.contract.ts';
import { startKurrentDouble, type KurrentDouble } from './helpers/kurrentDouble.ts';
import { KurrentEventStore, openKurrentEventStore } from '../src/eventstore/kurrent.ts';
import { WrongExpectedRevisionError, type EventMetadata, type NewEvent, type RecordedEvent } from '../src/eventstore/port.ts';
import { until } from './helpers/wait.ts';

const meta = (): EventMetadata => ({ actor: 'user-1', requestId: 'req-1', at: new Date().toISOString(), scope: 'scope-1' });
const ev = (type = 'ThingHappened'): NewEvent => ({ id: randomUUID(), type, data: { n: 1 }, metadata: meta() });
const stream = () => `kurrent-${randomUUID().replace(/-/g, '')}`;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
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
  t.equal(double.log.length, 3, 'three events in the log');

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

t.test('without multi-stream append support, appendMany fails and writes nothing', async (t) => {
  const { double, store } = await openOnDouble(t, { legacy: true });
  const a = stream();
  const r = await store.append(a, [ev()], 'no_stream');
  t.equal(r.revision, 0, 'single-stream appends still work');
  const err = await store.appendMany([{ stream: a, events: [ev()], expected: 0 }]).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.equal((err as { type?: unknown } | undefined)?.type, 'unsupported', "the client's UnsupportedError (no non-atomic fallback)");
  t.equal(double.log.length, 1, 'nothing written');
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
  await until('caught up', () => caughtUp, 5000, 5);
  await raw.appendToStream('$stats-127.0.0.1:2113', jsonEvent({ type: '$statsCollected', data: { cpu: 2 } }));
  const live = ev();
  await store.append(a, [live], 1);
  await until('live event', () => got.length >= 3, 5000, 5);
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
  await until('caught up', () => caughtUp, 5000, 5);
  await double.stop();
  await until('onError', () => errors.length > 0, 5000, 5);
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
    double.log.map((e) => e.position),
    "each event's position is the server's commit position",
  );
  t.equal(r.position, double.log[1]?.position, 'the append result is the commit position of its last event');
  t.ok(read[1]!.position - read[0]!.position > 1n, 'and they are not contiguous here');
});
