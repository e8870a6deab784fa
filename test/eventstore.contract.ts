/**
 * The one contract suite every event store adapter passes (see `src/eventstore/port.ts`).
 *
 * Adapter-neutral: it never assumes positions start at a given number or are contiguous, and it works on
 * a store that already holds events (a real KurrentDB): every test writes to fresh streams and looks at the
 * log after the head it found. Checks that need an empty log (`headPosition()` undefined, `readAll()` from
 * the very start) run only when `open()` returns an empty store, and say so otherwise.
 *
 * `open()` returns a store and its `cleanup()`; `cleanup()` must also work after `store.close()`.
 */
import { randomUUID } from 'node:crypto';
import type * as Tap from 'tap';
import {
  WrongExpectedRevisionError,
  type EventMetadata,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type RecordedEvent,
  type Subscription,
} from '../src/eventstore/port.ts';
import { until, WAIT_MS } from './helpers/wait.ts';

/** What `open()` hands the suite. */
export interface OpenedStore {
  store: EventStore;
  cleanup(): Promise<void>;
}

type T = Tap.Test;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A promise and its resolver, for onEvents calls the test releases by hand. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

async function collect<E>(it: AsyncIterable<E>): Promise<E[]> {
  const out: E[] = [];
  for await (const e of it) out.push(e);
  return out;
}

/** A fresh stream name `<category>-<id>` no other test (or run) uses. */
function streamName(category: string): string {
  return `${category}-${randomUUID().replace(/-/g, '')}`;
}

function meta(overrides: Partial<EventMetadata> = {}): EventMetadata {
  return { actor: 'user-1', requestId: `req-${randomUUID()}`, at: new Date().toISOString(), scope: 'scope-1', ...overrides };
}

function ev(type = 'ThingHappened', data: unknown = { n: Math.random() }, metadata: EventMetadata = meta()): NewEvent {
  return { id: randomUUID(), type, data, metadata };
}

function evs(n: number, type = 'ThingHappened'): NewEvent[] {
  return Array.from({ length: n }, (_, i) => ev(type, { i }));
}

const ids = (events: { id: string }[]) => events.map((e) => e.id);
const revisions = (events: RecordedEvent[]) => events.map((e) => e.revision);

/** `reason` is optional: compare it as an explicit key on both sides. */
const normalMeta = (m: EventMetadata) => ({ actor: m.actor, requestId: m.requestId, at: m.at, reason: m.reason, scope: m.scope });

function strictlyIncreasing(positions: bigint[]): boolean {
  return positions.every((p, i) => i === 0 || p > positions[i - 1]!);
}

/** Asserts that `p` rejects with a WrongExpectedRevisionError carrying these fields. */
async function rejectsWrongRevision(
  t: T,
  p: Promise<unknown>,
  want: { stream: string; expected: ExpectedRevision; actual: number },
  msg: string,
): Promise<void> {
  try {
    await p;
    t.fail(`${msg}: resolved, expected WrongExpectedRevisionError`);
  } catch (err) {
    t.ok(err instanceof WrongExpectedRevisionError, `${msg}: WrongExpectedRevisionError`);
    const e = err as WrongExpectedRevisionError;
    t.strictSame({ stream: e.stream, expected: e.expected, actual: e.actual }, want, `${msg}: stream, expected, actual`);
  }
}

/** Events of `streams` in the log after `after` (the whole log when undefined), in log order. */
async function logOf(store: EventStore, after: bigint | undefined, streams: Set<string>): Promise<RecordedEvent[]> {
  const all = await collect(store.readAll(after === undefined ? {} : { after }));
  return all.filter((e) => streams.has(e.stream));
}

/** Runs the contract against one adapter. */
export function eventStoreContract(t: Tap.Test, name: string, open: () => Promise<OpenedStore>): Promise<unknown> {
  /** Opens a store for one subtest and always cleans it up. */
  const withStore =
    (fn: (t: T, store: EventStore, fresh: boolean) => Promise<void>) =>
    async (t: T): Promise<void> => {
      const { store, cleanup } = await open();
      try {
        // Judged by readAll, not headPosition, so a wrong headPosition cannot skip the empty-store checks.
        let fresh = true;
        for await (const _ of store.readAll({ maxCount: 1 })) fresh = false;
        await fn(t, store, fresh);
      } finally {
        await cleanup();
      }
    };

  return t.test(`${name}: event store contract`, async (t) => {
    t.test(
      'append checks the expected revision',
      withStore(async (t, store) => {
        const s = streamName('contract');
        const first = evs(2);
        const r1 = await store.append(s, first, 'no_stream');
        t.equal(r1.revision, 1, "'no_stream' on a new stream: revision of the last event");
        let read = await store.readStream(s);
        t.strictSame(ids(read), ids(first), 'both events are stored in order');
        t.strictSame(revisions(read), [0, 1], 'revisions are 0-based');
        t.equal(typeof r1.position, 'bigint', 'position is a bigint');
        t.equal(r1.position, read[1]?.position, 'result position is that of the last appended event');
        t.ok(read[0]!.position < read[1]!.position, 'positions grow within one append');

        const r2 = await store.append(s, [ev()], 1);
        t.equal(r2.revision, 2, 'exact expected revision appends');
        t.ok(r2.position > r1.position, 'a later append has a greater position');

        const r3 = await store.append(s, [ev()], 'any');
        t.equal(r3.revision, 3, "'any' appends to an existing stream");
        const other = streamName('contract');
        const r4 = await store.append(other, [ev()], 'any');
        t.equal(r4.revision, 0, "'any' creates a new stream");

        const head = await store.headPosition();
        t.equal(head, r4.position, 'headPosition is the last appended position');

        await rejectsWrongRevision(t, store.append(s, [ev()], 'no_stream'), { stream: s, expected: 'no_stream', actual: 3 }, "'no_stream' on an existing stream");
        await rejectsWrongRevision(t, store.append(s, [ev(), ev()], 1), { stream: s, expected: 1, actual: 3 }, 'stale revision');
        await rejectsWrongRevision(t, store.append(s, [ev()], 7), { stream: s, expected: 7, actual: 3 }, 'revision ahead of the stream');
        const missing = streamName('contract');
        await rejectsWrongRevision(t, store.append(missing, [ev()], 0), { stream: missing, expected: 0, actual: -1 }, 'revision on a missing stream');

        read = await store.readStream(s);
        t.equal(read.length, 4, 'failed appends wrote nothing to the stream');
        t.equal(await store.streamRevision(s), 3, 'stream revision unchanged after failures');
        t.strictSame(await store.readStream(missing), [], 'missing stream still missing');
        t.equal(await store.streamRevision(missing), -1, 'missing stream revision still -1');
        t.equal(await store.headPosition(), head, 'headPosition unchanged after failures');
        t.strictSame(await collect(store.readAll({ after: head! })), [], 'nothing new in the log after failures');
      }),
    );

    t.test(
      'appendMany is atomic across streams',
      withStore(async (t, store) => {
        const a = streamName('contract');
        const b = streamName('contract');
        const c = streamName('contract');
        await store.append(b, [ev()], 'no_stream');
        const before = await store.headPosition();
        const aEvents = evs(2);
        const bEvents = evs(1);
        const cEvents = evs(1);
        const results = await store.appendMany([
          { stream: a, events: aEvents, expected: 'no_stream' },
          { stream: b, events: bEvents, expected: 0 },
          { stream: c, events: cEvents, expected: 'any' },
        ]);
        t.strictSame(
          results.map((r) => r.revision),
          [1, 1, 0],
          'one result per stream, in write order, with the new revisions',
        );
        const [readA, readB, readC] = await Promise.all([store.readStream(a), store.readStream(b), store.readStream(c)]);
        t.strictSame(ids(readA), ids(aEvents), 'stream a written');
        t.strictSame(ids(readB).slice(1), ids(bEvents), 'stream b written after its existing event');
        t.strictSame(ids(readC), ids(cEvents), 'stream c written');
        t.strictSame(
          results.map((r) => r.position),
          [readA[1]!.position, readB[1]!.position, readC[0]!.position],
          "each result's position is that of its stream's last event",
        );
        const log = await logOf(store, before, new Set([a, b, c]));
        t.strictSame(ids(log), [...ids(aEvents), ...ids(bEvents), ...ids(cEvents)], 'the log holds them in write order');
        t.equal(await store.headPosition(), results[2]!.position, 'headPosition is the last event of the append');

        // One stale expectation in the middle: nothing of any stream is written.
        const head = await store.headPosition();
        const d = streamName('contract');
        await rejectsWrongRevision(
          t,
          store.appendMany([
            { stream: a, events: evs(1), expected: 1 },
            { stream: b, events: evs(1), expected: 0 },
            { stream: d, events: evs(2), expected: 'no_stream' },
          ]),
          { stream: b, expected: 0, actual: 1 },
          'stale revision in the middle',
        );
        // The failing stream last, after a brand-new one.
        await rejectsWrongRevision(
          t,
          store.appendMany([
            { stream: d, events: evs(1), expected: 'no_stream' },
            { stream: c, events: evs(1), expected: 'no_stream' },
          ]),
          { stream: c, expected: 'no_stream', actual: 0 },
          "'no_stream' on an existing stream, last",
        );
        // Two failing streams: the first one in write order is named.
        const e = streamName('contract');
        await rejectsWrongRevision(
          t,
          store.appendMany([
            { stream: a, events: evs(1), expected: 1 },
            { stream: e, events: evs(1), expected: 3 },
            { stream: b, events: evs(1), expected: 5 },
          ]),
          { stream: e, expected: 3, actual: -1 },
          'first failing stream is named',
        );
        t.equal(await store.streamRevision(a), 1, 'a unchanged');
        t.equal(await store.streamRevision(b), 1, 'b unchanged');
        t.equal(await store.streamRevision(c), 0, 'c unchanged');
        t.equal(await store.streamRevision(d), -1, 'd not created');
        t.equal(await store.streamRevision(e), -1, 'e not created');
        t.equal(await store.headPosition(), head, 'headPosition unchanged');
        t.strictSame(await collect(store.readAll({ after: head! })), [], 'nothing new in the log');
      }),
    );

    t.test(
      'readStream reads forwards, backwards, from a revision, with a limit',
      withStore(async (t, store) => {
        const s = streamName('contract');
        const written = [...evs(3), ...evs(2, 'OtherThing')];
        await store.append(s, written.slice(0, 3), 'no_stream');
        await store.append(s, written.slice(3), 2);
        await store.append(streamName('contract'), [ev()], 'no_stream'); // a neighbour that must not leak in
        const w = ids(written);

        const fwd = await store.readStream(s);
        t.strictSame(ids(fwd), w, 'forwards by default');
        t.strictSame(revisions(fwd), [0, 1, 2, 3, 4], 'revisions');
        t.strictSame(
          fwd.map((e) => e.stream),
          Array(5).fill(s),
          'stream names',
        );
        t.strictSame(
          fwd.map((e) => e.type),
          written.map((e) => e.type),
          'types',
        );
        t.ok(strictlyIncreasing(fwd.map((e) => e.position)), 'positions grow along the stream');

        t.strictSame(ids(await store.readStream(s, { direction: 'backwards' })), [...w].reverse(), 'backwards from the end');
        t.strictSame(revisions(await store.readStream(s, { fromRevision: 2 })), [2, 3, 4], 'forwards from revision 2 (inclusive)');
        t.strictSame(revisions(await store.readStream(s, { direction: 'backwards', fromRevision: 2 })), [2, 1, 0], 'backwards from revision 2');
        t.strictSame(revisions(await store.readStream(s, { maxCount: 2 })), [0, 1], 'maxCount forwards');
        t.strictSame(revisions(await store.readStream(s, { direction: 'backwards', maxCount: 2 })), [4, 3], 'maxCount backwards');
        t.strictSame(revisions(await store.readStream(s, { fromRevision: 1, maxCount: 2 })), [1, 2], 'fromRevision and maxCount');
        t.strictSame(revisions(await store.readStream(s, { direction: 'backwards', fromRevision: 3, maxCount: 2 })), [3, 2], 'backwards fromRevision and maxCount');
        t.strictSame(await store.readStream(s, { fromRevision: 5 }), [], 'from past the end reads nothing');
        const missing = streamName('contract');
        t.strictSame(await store.readStream(missing), [], 'a missing stream reads as empty');
        t.strictSame(await store.readStream(missing, { direction: 'backwards' }), [], 'a missing stream reads as empty backwards');
      }),
    );

    t.test(
      'streamRevision',
      withStore(async (t, store) => {
        const s = streamName('contract');
        t.equal(await store.streamRevision(s), -1, 'missing stream: -1');
        await store.append(s, [ev()], 'no_stream');
        t.equal(await store.streamRevision(s), 0, 'one event: 0');
        await store.append(s, evs(3), 0);
        t.equal(await store.streamRevision(s), 3, 'four events: 3');
        await store.append(streamName('contract'), evs(2), 'no_stream');
        t.equal(await store.streamRevision(s), 3, 'other streams do not change it');
      }),
    );

    t.test(
      'readAll and headPosition',
      withStore(async (t, store, fresh) => {
        const start = await store.headPosition();
        if (fresh) {
          t.equal(start, undefined, 'headPosition of an empty store is undefined');
          t.strictSame(await collect(store.readAll()), [], 'readAll of an empty store is empty');
        } else t.comment('the store is not empty: empty-store checks skipped');

        const a = streamName('contract');
        const b = streamName('contract');
        const c = streamName('contract');
        const expected: NewEvent[] = [];
        const put = async (s: string, events: NewEvent[], exp: ExpectedRevision) => {
          expected.push(...events);
          return store.append(s, events, exp);
        };
        await put(a, evs(2), 'no_stream');
        await put(b, evs(1), 'no_stream');
        await put(a, evs(1), 1);
        const last = await put(c, evs(2), 'no_stream');
        const ours = new Set([a, b, c]);
        const want = ids(expected);

        const everything = await collect(store.readAll(start === undefined ? {} : { after: start }));
        if (fresh) {
          const fromStart = await collect(store.readAll());
          t.strictSame(ids(fromStart), want, 'readAll() from the start: every event in global order');
        }
        const log = everything.filter((e) => ours.has(e.stream));
        t.strictSame(ids(log), want, 'global order across streams');
        t.ok(strictlyIncreasing(everything.map((e) => e.position)), 'positions strictly increase');
        t.strictSame(
          log.map((e) => `${e.stream}@${e.revision}`),
          [`${a}@0`, `${a}@1`, `${b}@0`, `${a}@2`, `${c}@0`, `${c}@1`],
          'stream and revision of each event',
        );
        const byStream = new Map<string, RecordedEvent[]>();
        for (const s of ours) byStream.set(s, await store.readStream(s));
        t.strictSame(
          log.map((e) => e.position),
          log.map((e) => byStream.get(e.stream)![e.revision]!.position),
          'readAll and readStream agree on positions',
        );

        const third = log[2]!;
        t.strictSame(ids(await logOf(store, third.position, ours)), want.slice(3), '`after` is exclusive');
        const limited = await collect(store.readAll({ after: third.position, maxCount: 2 }));
        t.strictSame(ids(limited), want.slice(3, 5), 'maxCount after a position');
        if (fresh) t.strictSame(ids(await collect(store.readAll({ maxCount: 2 }))), want.slice(0, 2), 'maxCount from the start');
        t.strictSame(await collect(store.readAll({ after: last.position })), [], 'nothing after the last position');

        let seen = 0;
        for await (const _ of store.readAll({ after: third.position })) {
          seen++;
          break;
        }
        t.equal(seen, 1, 'readAll can be left early');

        t.equal(await store.headPosition(), last.position, 'headPosition is the last position');
        t.equal(await store.headPosition(), log[log.length - 1]!.position, 'headPosition is the position of the last event read');
      }),
    );

    t.test(
      'metadata, data and event ids round-trip exactly',
      withStore(async (t, store) => {
        const s = streamName('contract');
        const data = {
          text: 'Grüße, 世界 🌍 "quoted" \\ back\nslash',
          int: 42,
          negative: -7,
          float: 3.25,
          big: 9007199254740991,
          yes: true,
          no: false,
          nothing: null,
          list: [1, 'two', { three: [3] }, []],
          empty: {},
          blank: '',
          nested: { deeper: { deepest: ['x'] } },
        };
        const written: NewEvent[] = [
          ev('MessageSent', data, meta({ actor: null })),
          ev('MessageEdited', { list: [1, 2, 3] }, meta({ actor: 'user-42', reason: 'Spam cleanup — "reason" ✓', scope: 'server-01HXYZ' })),
          ev('Listed', [1, { a: 'b' }, null], meta({ actor: 'user-7', reason: '' })),
          ev('Large', { blob: 'x'.repeat(64 * 1024) }, meta()),
        ];
        const before = await store.headPosition();
        await store.append(s, written, 'no_stream');
        const check = (got: RecordedEvent[], how: string) => {
          t.strictSame(ids(got), ids(written), `${how}: event ids preserved`);
          t.strictSame(
            got.map((e) => e.type),
            written.map((e) => e.type),
            `${how}: types preserved`,
          );
          t.strictSame(
            got.map((e) => e.data),
            written.map((e) => e.data),
            `${how}: data round-trips`,
          );
          t.strictSame(
            got.map((e) => normalMeta(e.metadata)),
            written.map((e) => normalMeta(e.metadata)),
            `${how}: metadata round-trips (actor null stays null, reason absent stays absent)`,
          );
        };
        check(await store.readStream(s), 'readStream');
        check(await logOf(store, before, new Set([s])), 'readAll');

        const got: RecordedEvent[] = [];
        const sub = store.subscribe({ after: before, onEvents: (events) => void got.push(...events.filter((e) => e.stream === s)) });
        try {
          await until('subscribed events', () => got.length >= written.length, WAIT_MS, 5);
        } finally {
          await sub.close();
        }
        check(got, 'subscribe');

        const m = streamName('contract');
        const manyMeta = meta({ actor: null, reason: 'bulk' });
        await store.appendMany([{ stream: m, events: [ev('ViaMany', { ok: [true] }, manyMeta)], expected: 'no_stream' }]);
        const [viaMany] = await store.readStream(m);
        t.strictSame(normalMeta(viaMany!.metadata), normalMeta(manyMeta), 'appendMany: metadata round-trips');
        t.strictSame(viaMany!.data, { ok: [true] }, 'appendMany: data round-trips');
      }),
    );

    t.test(
      'subscribe: catch-up, caught-up once, then live, in batches',
      withStore(async (t, store, fresh) => {
        const before = await store.headPosition();
        const a = streamName('contract');
        const b = streamName('contract');
        const c = streamName('contract');
        const ours = new Set([a, b, c]);
        const early = [...evs(2), ...evs(1)];
        await store.append(a, early.slice(0, 2), 'no_stream');
        await store.append(b, early.slice(2), 'no_stream');

        const batches: RecordedEvent[][] = [];
        const received = () => batches.flat().filter((e) => ours.has(e.stream));
        let caughtUpCalls = 0;
        let atCaughtUp: string[] = [];
        const errors: Error[] = [];
        const sub = store.subscribe({
          ...(fresh ? {} : { after: before }),
          batchSize: 2,
          onEvents: (events) => void batches.push(events),
          onCaughtUp: () => {
            caughtUpCalls++;
            atCaughtUp = ids(received());
          },
          onError: (err) => void errors.push(err),
        });
        try {
          if (!fresh) t.comment('the store is not empty: subscribing after its head instead of from the start');
          await until('caught up', () => caughtUpCalls > 0, WAIT_MS, 5);
          t.strictSame(atCaughtUp, ids(early), 'onCaughtUp comes after exactly the events that existed');

          const live = [...evs(1), ...evs(2)];
          await store.append(b, live.slice(0, 1), 0);
          await store.append(c, live.slice(1), 'no_stream');
          await until('live events', () => received().length >= 6, WAIT_MS, 5);
          t.strictSame(ids(received()), [...ids(early), ...ids(live)], 'catch-up then live events, in order');
          const all = batches.flat();
          t.ok(strictlyIncreasing(all.map((e) => e.position)), 'positions strictly increase across batches');
          t.ok(
            batches.every((batch) => batch.length >= 1 && batch.length <= 2),
            'batches are non-empty and no larger than batchSize',
          );
          if (fresh) t.equal(all.length, received().length, 'no foreign events in a fresh store');
          await sleep(50);
          t.equal(caughtUpCalls, 1, 'onCaughtUp is called once');
        } finally {
          await sub.close();
        }
        const count = batches.flat().length;
        await store.append(c, evs(1), 1);
        await sleep(150);
        t.equal(batches.flat().length, count, 'close() stops delivery');
        t.strictSame(errors, [], 'no errors');
      }),
    );

    t.test(
      'subscribe from a checkpoint is exclusive',
      withStore(async (t, store) => {
        const s = streamName('contract');
        const written = evs(4);
        await store.append(s, written, 'no_stream');
        const read = await store.readStream(s);
        const got: RecordedEvent[] = [];
        let caughtUp = false;
        let atCaughtUp: string[] = [];
        const sub = store.subscribe({
          after: read[1]!.position,
          onEvents: (events) => void got.push(...events.filter((e) => e.stream === s)),
          onCaughtUp: () => {
            caughtUp = true;
            atCaughtUp = ids(got);
          },
        });
        try {
          await until('caught up', () => caughtUp, WAIT_MS, 5);
          t.strictSame(atCaughtUp, ids(written.slice(2)), 'catch-up starts after the checkpoint');
          const live = ev();
          await store.append(s, [live], 3);
          await until('live event', () => got.length >= 3, WAIT_MS, 5);
          t.strictSame(ids(got), [...ids(written.slice(2)), live.id], 'then live events');
          t.ok(
            got.every((e) => e.position > read[1]!.position),
            'every delivered position is after the checkpoint',
          );
        } finally {
          await sub.close();
        }
      }),
    );

    t.test(
      'subscribe applies back pressure',
      withStore(async (t, store) => {
        const before = await store.headPosition();
        const s = streamName('contract');
        const written = evs(5);
        await store.append(s, written, 'no_stream');
        const calls: RecordedEvent[][] = [];
        let active = 0;
        let overlaps = 0;
        let gate = deferred();
        let autoRelease = false;
        let atCaughtUp: string[] | undefined;
        const sub = store.subscribe({
          after: before,
          batchSize: 1,
          onCaughtUp: () => (atCaughtUp = ids(delivered())),
          onEvents: async (events) => {
            if (active > 0) overlaps++;
            active++;
            calls.push(events);
            if (!autoRelease) await gate.promise;
            else await sleep(2);
            active--;
          },
        });
        const delivered = () => calls.flat().filter((e) => e.stream === s);
        try {
          await until('first batch', () => calls.length >= 1, WAIT_MS, 5);
          await sleep(100);
          t.equal(calls.length, 1, 'no second batch while the first is pending');
          const first = gate;
          gate = deferred();
          first.resolve();
          await until('second batch', () => calls.length >= 2, WAIT_MS, 5);
          await sleep(100);
          t.equal(calls.length, 2, 'exactly one more batch after the first settled');
          autoRelease = true;
          gate.resolve();
          await until('all batches', () => delivered().length >= written.length, WAIT_MS, 5);
          t.equal(overlaps, 0, 'onEvents never ran concurrently');
          t.ok(
            calls.every((batch) => batch.length === 1),
            'batchSize 1 gives single-event batches',
          );
          t.strictSame(ids(delivered()), ids(written), 'all events delivered in order');
          await until('caught up', () => atCaughtUp !== undefined, WAIT_MS, 5);
          t.strictSame(atCaughtUp, ids(written), 'onCaughtUp waits for slow catch-up batches');
        } finally {
          gate.resolve();
          await sub.close();
        }
      }),
    );

    t.test(
      'close() waits for the onEvents in progress and stops further batches',
      withStore(async (t, store) => {
        const before = await store.headPosition();
        const s = streamName('contract');
        await store.append(s, evs(3), 'no_stream');
        const gate = deferred();
        let calls = 0;
        let finished = false;
        const sub: Subscription = store.subscribe({
          after: before,
          batchSize: 1,
          onEvents: async () => {
            calls++;
            await gate.promise;
            finished = true;
          },
        });
        await until('first batch', () => calls === 1, WAIT_MS, 5);
        let closed = false;
        const closing = sub.close().then(() => {
          closed = true;
        });
        await sleep(50);
        t.equal(closed, false, 'close() has not resolved while onEvents is pending');
        gate.resolve();
        await closing;
        t.equal(finished, true, 'close() resolved after onEvents settled');
        await store.append(s, evs(1), 2);
        await sleep(150);
        t.equal(calls, 1, 'no onEvents after close()');
      }),
    );

    t.test(
      'a throwing onEvents stops the subscription and goes to onError',
      withStore(async (t, store) => {
        const before = await store.headPosition();
        const s = streamName('contract');
        await store.append(s, evs(3), 'no_stream');
        const boom = new Error('projector failed');
        let calls = 0;
        const errors: Error[] = [];
        const sub = store.subscribe({
          after: before,
          batchSize: 1,
          onEvents: async () => {
            calls++;
            throw boom;
          },
          onError: (err) => void errors.push(err),
        });
        try {
          await until('onError', () => errors.length > 0, WAIT_MS, 5);
          t.equal(errors[0], boom, 'onError receives the thrown error');
          await store.append(s, evs(1), 2);
          await sleep(150);
          t.equal(calls, 1, 'no onEvents after the failure');
          t.equal(errors.length, 1, 'onError is called once');
        } finally {
          await sub.close();
        }
      }),
    );

    t.test(
      'concurrent appends with the same expected revision: exactly one wins',
      withStore(async (t, store) => {
        const s = streamName('contract');
        await store.append(s, [ev()], 'no_stream');
        const attempts = Array.from({ length: 50 }, () => ev('Raced'));
        const settled = await Promise.allSettled(attempts.map((e) => store.append(s, [e], 0)));
        const won = settled.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
        const lost = settled.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
        t.equal(won.length, 1, 'exactly one append succeeds');
        t.equal(lost.length, 49, 'the other 49 fail');
        t.ok(
          lost.every((e) => e instanceof WrongExpectedRevisionError && e.actual === 1 && e.expected === 0 && e.stream === s),
          'every loser gets WrongExpectedRevisionError (expected 0, actual 1)',
        );
        const read = await store.readStream(s);
        t.equal(read.length, 2, 'the stream holds the winner only');
        t.equal(read[1]?.id, attempts[won[0]!]?.id, "the stored event is the winner's");

        const fresh = streamName('contract');
        const created = await Promise.allSettled(Array.from({ length: 20 }, () => store.append(fresh, [ev()], 'no_stream')));
        t.equal(created.filter((r) => r.status === 'fulfilled').length, 1, "one of 20 concurrent 'no_stream' appends wins");
        t.equal(await store.streamRevision(fresh), 0, 'the new stream holds one event');
      }),
    );

    t.test(
      'stats() counts appends',
      withStore(async (t, store) => {
        const s0 = { ...store.stats() }; // a copy, in case an adapter hands out its live counters
        const s = streamName('contract');
        await store.append(s, [ev()], 'no_stream');
        await store.append(s, [ev()], 0);
        await store.append(streamName('contract'), evs(2), 'any');
        await store.appendMany([
          { stream: s, events: [ev()], expected: 1 },
          { stream: streamName('contract'), events: [ev()], expected: 'no_stream' },
        ]);
        await store.append(s, [ev()], 0).catch(() => undefined); // a failed append is still requested
        const s1 = { ...store.stats() };
        t.equal(s1.appends - s0.appends, 5, 'every append and appendMany counts once');
        // Each awaited append needs its own commit; whether the failed one cost a commit is the adapter's business.
        t.ok(s1.commits - s0.commits >= 4 && s1.commits - s0.commits <= 5, 'one commit per successful append (sequential appends)');
      }),
    );

    t.test(
      'close() lets pending appends finish',
      withStore(async (t, store) => {
        const s = streamName('contract');
        const pending = store.append(s, evs(2), 'no_stream');
        await store.close();
        const r = await pending;
        t.equal(r.revision, 1, 'the append started before close() completed');
      }),
    );
  });
}
