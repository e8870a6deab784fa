/**
 * The unreads projection converges whatever the order between partitions (projections/unreads.ts): mentions
 * come from the message's partition, acks from the user's, so the two streams of writes interleave in any
 * way (each keeps its own order). Property: for every interleaving the read model is the same, and equals
 * the model `mentions = {m | m > max(acks)}`, `last_id = the last ack`. Runs the projection through the real
 * batch transaction into a real Redis, one batch per event (as two runners committing in turn would).
 */
import t from 'tap';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { unreadsProjection } from '../projections/unreads.ts';
import { BatchTx, ValueCache } from '../projections/tx.ts';
import type { StoredEvent } from '../src/domain/events.ts';
import { rm, SHARDS, shardOf, shardOfKey } from '../src/readmodel/keys.ts';
import { deletePrefix, TEST_REDIS_URL, uniquePrefix } from './helpers/service.ts';
import { dumpGeneration } from './helpers/servers.ts';

const USER = '01HUSER000000000000000000A';
const OTHER = '01HUSER000000000000000000B';
const CHANNEL = '01HCHANNE00000000000000000';
/** Ten message ids in ascending order. */
const IDS = Array.from({ length: 10 }, (_, i) => `01HMSG${String(i).padStart(20, '0')}`);

let position = 0n;
function event(type: 'MessageSent' | 'ChannelAcked', stream: string, data: unknown): StoredEvent {
  position++;
  return { id: `e${position}`, stream, revision: 0, position, type, data, metadata: { actor: null, requestId: 'r', at: '2026-01-01T00:00:00.000Z', scope: 'x' } } as StoredEvent;
}
const mention = (i: number, users: string[] = [USER]) =>
  event('MessageSent', `message-${IDS[i]}`, { message: { _id: IDS[i], channel: CHANNEL, author: OTHER, content: 'x', mentions: users } });
const ack = (i: number) => event('ChannelAcked', `unreads-${USER}`, { channelId: CHANNEL, messageId: IDS[i] });

/** Applies the events one batch each (a commit per event, like two runners taking turns). */
async function project(redis: Redis, prefix: string, events: StoredEvent[]): Promise<Record<string, unknown>> {
  const cache = new ValueCache();
  for (const e of events) {
    const tx = new BatchTx(redis, prefix, cache, 0, true);
    await unreadsProjection.apply(e, tx);
    const m = redis.multi();
    for (const op of tx.ops) (m as unknown as { call: (...a: unknown[]) => void }).call(...op);
    const res = await m.exec();
    const failed = res?.find(([err]) => err);
    if (failed) throw failed[0];
  }
  return dumpGeneration(redis, prefix);
}

/** Every interleaving of two sequences that keeps the order inside each, chosen by a list of booleans. */
function interleave<A>(a: A[], b: A[], picks: boolean[]): A[] {
  const out: A[] = [];
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length || j < b.length) {
    const takeA = j >= b.length || (i < a.length && (picks[k++] ?? true));
    out.push(takeA ? a[i++]! : b[j++]!);
  }
  return out;
}

t.test('mentions and acks commute', async (t) => {
  const redis = new Redis(TEST_REDIS_URL);
  const prefixes: string[] = [];
  t.teardown(async () => {
    for (const p of prefixes) await deletePrefix(TEST_REDIS_URL, p);
    redis.disconnect();
  });
  const fresh = () => {
    const p = uniquePrefix();
    prefixes.push(p);
    return p;
  };

  await fc.assert(
    fc.asyncProperty(
      fc.uniqueArray(fc.nat({ max: 9 }), { maxLength: 6 }),
      fc.array(fc.nat({ max: 9 }), { maxLength: 4 }),
      fc.array(fc.boolean(), { maxLength: 12 }),
      async (mentioned, acked, picks) => {
        const mentions = [...mentioned].sort((x, y) => x - y).map((i) => mention(i));
        const acks = acked.map((i) => ack(i));
        const canonical = await project(redis, fresh(), [...mentions, ...acks]);
        const shuffled = await project(redis, fresh(), interleave(mentions, acks, picks));
        const reversed = await project(redis, fresh(), [...acks, ...mentions]);
        if (JSON.stringify(shuffled) !== JSON.stringify(canonical) || JSON.stringify(reversed) !== JSON.stringify(canonical)) return false;
        // The model.
        const max = acked.length ? Math.max(...acked) : -1;
        const want = mentioned.filter((i) => i > max).sort((x, y) => x - y).map((i) => IDS[i]!);
        const got = ((canonical[rm.unreadMentions(USER, CHANNEL)] as string[] | undefined) ?? []).filter((_, i) => i % 2 === 0);
        if (JSON.stringify(got) !== JSON.stringify(want)) return false;
        const inSet = ((canonical[rm.unreadMentioned(USER)] as string[] | undefined) ?? []).includes(CHANNEL);
        if (inSet !== want.length > 0) return false;
        const last = (canonical[rm.unreadLast(USER)] as Record<string, string> | undefined)?.[CHANNEL];
        if (last !== (acked.length ? IDS[acked[acked.length - 1]!] : undefined)) return false;
        return true;
      },
    ),
    { numRuns: Number(process.env.UNREADS_RUNS ?? 60) },
  );
  t.pass('every interleaving converges to the model');
});

t.test('one script per shard of the mentioned users (at most SHARDS), whatever their number; suppressed messages write nothing', async (t) => {
  const redis = new Redis(TEST_REDIS_URL);
  t.teardown(() => redis.disconnect());
  const users = Array.from({ length: 500 }, (_, i) => `01HUSER${String(i).padStart(19, '0')}`);
  const tx = new BatchTx(redis, 'unused:', new ValueCache(), 0, true);
  await unreadsProjection.apply(mention(3, users), tx);
  const shards = new Set(users.map(shardOf));
  t.equal(tx.ops.length, shards.size, `one EVAL per shard of the 500 users (${shards.size} of ${SHARDS})`);
  t.ok(tx.ops.length <= SHARDS);
  // Each script's keys are of users of one shard (one slot on a cluster), and every user is in exactly one.
  const covered: string[] = [];
  for (const op of tx.ops) {
    const n = Number(op[2]);
    // Without routing BatchTx names keys `<prefix><logical>` (here `unused:`).
    const keys = op.slice(3, 3 + n).map((k) => String(k).slice('unused:'.length));
    const owners = keys.filter((_, i) => i % 3 === 0).map((k) => k.split(':')[1]!);
    t.equal(new Set(owners.map(shardOf)).size, 1, 'a script covers the users of one shard');
    t.equal(new Set(keys.map((k) => shardOfKey(k))).size, 1, 'and its keys are in that shard');
    covered.push(...owners);
  }
  t.same(covered.sort(), [...users].sort(), 'every mentioned user once');
  const quiet = new BatchTx(redis, 'unused:', new ValueCache(), 0, true);
  const suppressed = event('MessageSent', `message-${IDS[4]}`, { message: { _id: IDS[4], channel: CHANNEL, author: OTHER, content: 'x', mentions: [USER], flags: 2 } });
  await unreadsProjection.apply(suppressed, quiet);
  t.equal(quiet.ops.length, 0, 'SuppressNotifications: nothing');
  const mass = new BatchTx(redis, 'unused:', new ValueCache(), 0, true);
  await unreadsProjection.apply(event('MessageSent', `message-${IDS[5]}`, { message: { _id: IDS[5], channel: CHANNEL, author: OTHER, content: 'x' }, mentionedUsers: [USER, OTHER] }), mass);
  t.same(
    mass.ops.flatMap((op) => op.slice(3, 3 + Number(op[2])).filter((_, i) => i % 3 === 0).map((k) => String(k).split(':')[2])).sort(),
    [USER, OTHER].sort(),
    'mentionedUsers (the decided mass mention) is what counts',
  );
  const a = new BatchTx(redis, 'unused:', new ValueCache(), 0, false);
  await unreadsProjection.apply(ack(2), a);
  t.equal(a.ops.length, 1, 'an ack is one script');
  t.same(a.emitted, [{ route: { kind: 'user', userId: USER }, payload: { type: 'ChannelAck', id: CHANNEL, user: USER, message_id: IDS[2] } }], 'ChannelAck to the user only');
});
