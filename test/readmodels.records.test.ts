// Record sets (src/readmodel/records.ts): a channel's messages are one sorted set of their stored JSON, ordered
// by the id each begins with. These tests write through the projector's batch (projections/tx.ts) into a real
// Redis and read the ranges the history route reads.
import { Redis } from 'ioredis';
import t from 'tap';
import { BatchTx, ValueCache } from '../projections/tx.ts';
import { aboveId, belowId, fromId, recordRange } from '../src/readmodel/records.ts';
import { loadMessage, loadMessages } from '../src/readmodel/messages.ts';
import type { ReadModels } from '../src/readmodel/reader.ts';
import { deletePrefix, TEST_REDIS_URL, uniquePrefix } from './helpers/service.ts';

const prefix = uniquePrefix();
const redis = new Redis(TEST_REDIS_URL);
t.teardown(async () => {
  await deletePrefix(TEST_REDIS_URL, prefix);
  redis.disconnect();
});

const KEY = 'channel:01KCHANNEL0000000000000000:history';
const full = prefix + KEY;
// Three ids that differ in their last character only, and one far above.
const [A, B, C, D] = ['01KAAAAAAAAAAAAAAAAAAAAAA0', '01KAAAAAAAAAAAAAAAAAAAAAA1', '01KAAAAAAAAAAAAAAAAAAAAAA2', '01KZZZZZZZZZZZZZZZZZZZZZZZ'];

const tx = (cache = new ValueCache()) => new BatchTx(redis as never, prefix, cache, 0, false);
async function commit(b: BatchTx): Promise<void> {
  const m = redis.multi();
  for (const op of b.ops) (m as unknown as { call: (...a: unknown[]) => void }).call(...op);
  await m.exec();
}
const ids = (members: string[]) => members.map((m) => (JSON.parse(m) as { _id: string })._id);

t.test('records are found by their id, replaced and removed by it', async (t) => {
  const b = tx();
  // A's content mentions C's head: only a record's first bytes place it.
  b.rsetJson(KEY, C, { _id: C, content: 'c', revision: 0 });
  b.rsetJson(KEY, A, { _id: A, content: `{"_id":"${C}" #`, revision: 0 });
  b.rsetJson(KEY, D, { _id: D, content: 'd', revision: 0 });
  b.rsetJson(KEY, B, { _id: B, content: 'b', revision: 0 });
  t.same(await b.rgetJson(KEY, B), { _id: B, content: 'b', revision: 0 }, "the batch reads its own writes");
  await commit(b);
  t.equal(await redis.zcard(full), 4);

  const fresh = tx();
  for (const [id, content] of [[A, `{"_id":"${C}" #`], [B, 'b'], [C, 'c'], [D, 'd']] as const) {
    t.same(await fresh.rgetJson(KEY, id), { _id: id, content, revision: 0 }, `${id.slice(-1)} by its id`);
  }
  t.equal(await fresh.rgetJson(KEY, '01KAAAAAAAAAAAAAAAAAAAAAA3'), null, 'an id without a record');
  t.same(ids(await redis.zrangebylex(full, ...recordRange(B))), [B], 'the range of an id holds exactly its record');

  // The history route's bounds.
  t.same(ids(await redis.zrevrangebylex(full, belowId(C), '-')), [B, A], 'before C: B then A, not C');
  t.same(ids(await redis.zrangebylex(full, aboveId(B), '+')), [C, D], 'after B: C and D, not B');
  t.same(ids(await redis.zrangebylex(full, fromId(B), '+')), [B, C, D], 'from B: B itself and above');
  t.same(ids(await redis.zrevrangebylex(full, belowId(A), '-')), [], 'nothing before the first');
  t.same(ids(await redis.zrangebylex(full, aboveId(D), '+')), [], 'nothing after the last');
  t.same(ids(await redis.zrangebylex(full, aboveId(A), belowId(D))), [B, C], 'between A and D');

  // Replaced: the set still holds one record of B, the new one (longer, so other bytes).
  const edit = tx();
  edit.rsetJson(KEY, B, { _id: B, content: 'b, edited and longer', edited: 'now', revision: 1 });
  await commit(edit);
  t.equal(await redis.zcard(full), 4, 'a replaced record is not added twice');
  t.same(await tx().rgetJson(KEY, B), { _id: B, content: 'b, edited and longer', edited: 'now', revision: 1 });

  // Removed.
  const del = tx();
  del.rdel(KEY, B);
  t.equal(await del.rgetJson(KEY, B), null, 'the batch reads its own removal');
  await commit(del);
  t.equal(await redis.zcard(full), 3);
  t.equal(await tx().rgetJson(KEY, B), null);
  t.same(ids(await redis.zrangebylex(full, '-', '+')), [A, C, D]);
});

t.test('a new record is one ZADD; an id the batch already touched is replaced as usual', async (t) => {
  const key = `${KEY}:added`;
  const fullKey = prefix + key;
  const [E, F] = ['01KBBBBBBBBBBBBBBBBBBBBBB0', '01KBBBBBBBBBBBBBBBBBBBBBB1'];
  const b = tx();
  b.raddJson(key, E, { _id: E, content: 'e', revision: 0 });
  t.same(b.ops.map((o) => o[0]), ['zadd'], 'one command, no removal');
  t.same(await b.rgetJson(key, E), { _id: E, content: 'e', revision: 0 }, 'the batch reads it');
  // The same id again in this batch (never so for a message, but the rule holds): the first record goes.
  b.raddJson(key, E, { _id: E, content: 'e, again and longer', revision: 1 });
  t.same(b.ops.map((o) => o[0]), ['zadd', 'zremrangebylex', 'zadd'], 'an id written earlier in the batch is replaced');
  b.rdel(key, F);
  b.raddJson(key, F, { _id: F, content: 'f', revision: 0 });
  t.same(b.ops.slice(-2).map((o) => o[0]), ['zremrangebylex', 'zadd'], 'after a removal in the batch too');
  await commit(b);
  t.same(ids(await redis.zrangebylex(fullKey, '-', '+')), [E, F], 'one record per id');
  t.same(await tx().rgetJson(key, E), { _id: E, content: 'e, again and longer', revision: 1 });
  const wiped = tx();
  wiped.del(key);
  wiped.raddJson(key, E, { _id: E, content: 'after the wipe', revision: 0 });
  t.same(wiped.ops.map((o) => o[0]), ['unlink', 'zremrangebylex', 'zadd'], 'after the whole set was deleted in the batch: replaced');
  await commit(wiped);
  t.same(ids(await redis.zrangebylex(fullKey, '-', '+')), [E]);
  await redis.del(fullKey);
});

t.test('a record that does not begin with its id is refused before anything is written', async (t) => {
  const b = tx();
  t.throws(() => b.rsetJson(KEY, A, { revision: 2, _id: A }), /must begin with/);
  t.throws(() => b.rsetJson(KEY, A, { _id: B }), /must begin with/, 'nor with another id');
  t.same(b.ops, [], 'no command queued');
  t.same(await b.rgetJson(KEY, A), { _id: A, content: `{"_id":"${C}" #`, revision: 0 }, 'the stored record is untouched');
});

t.test('a deleted set reads empty in the batch that deletes it, and the cache follows the commit', async (t) => {
  const cache = new ValueCache();
  const b = tx(cache);
  t.ok(await b.rgetJson(KEY, A), 'A is read (and cached)');
  b.del(KEY);
  t.equal(await b.rgetJson(KEY, A), null);
  await commit(b);
  b.commitToCache();
  t.equal(await tx(cache).rgetJson(KEY, A), null, 'the partition cache forgot it');
  t.equal(await redis.exists(full), 0);
});

t.test('several messages by id in one command: in the order asked, null where absent', async (t) => {
  const channel = '01KCHANNEL0000000000000001';
  const b = tx();
  for (const id of [A, B, C]) b.rsetJson(`channel:${channel}:history`, id, { _id: id, channel, author: '01KAUTHOR00000000000000000', content: id.slice(-1), revision: 0 });
  await commit(b);
  const readModels = { redis, key: (k: string) => prefix + k } as unknown as ReadModels;
  const missing = '01KAAAAAAAAAAAAAAAAAAAAAA9';
  const got = await loadMessages(readModels, channel, [C, missing, A, B, A]);
  t.same(got.map((m) => m?.content ?? null), ['2', null, '0', '1', '0']);
  t.same((await loadMessages(readModels, channel, [B]))[0]?._id, B, 'one id');
  t.same(await loadMessages(readModels, channel, []), []);
  t.same(await loadMessages(readModels, channel, [missing, missing]), [null, null]);
  t.same((await loadMessage(readModels, channel, C))?.content, '2');
  t.equal(await loadMessage(readModels, channel, missing), null);
});
