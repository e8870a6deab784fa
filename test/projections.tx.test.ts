// The projector's batch (projections/tx.ts): a key written several times in one batch is one SET of its last
// value, unless a command that may read or remove it stands between; what Redis holds after the MULTI is the same.
import { Redis } from 'ioredis';
import t from 'tap';
import { BatchTx, ValueCache } from '../projections/tx.ts';
import { deletePrefix, TEST_REDIS_URL, uniquePrefix } from './helpers/service.ts';

const prefix = uniquePrefix();
const redis = new Redis(TEST_REDIS_URL);
t.teardown(async () => {
  await deletePrefix(TEST_REDIS_URL, prefix);
  redis.disconnect();
});

const tx = () => new BatchTx(redis as never, prefix, new ValueCache(), 0, false);
async function commit(b: BatchTx): Promise<void> {
  const m = redis.multi();
  for (const op of b.ops) (m as unknown as { call: (...a: unknown[]) => void }).call(...op);
  await m.exec();
}
const get = async (k: string) => JSON.parse((await redis.get(prefix + k))!) as unknown;

t.test('a key set again in the batch is one SET of the last value, in the place of the first', async (t) => {
  const b = tx();
  b.setJson('channel:A', { last: 1 });
  b.setJson('other', 'x');
  b.setJson('channel:A', { last: 2 });
  b.setJson('channel:A', { last: 3 });
  t.same(b.ops, [
    ['set', `${prefix}channel:A`, '{"last":3}'],
    ['set', `${prefix}other`, '"x"'],
  ]);
  t.same(await b.getJson('channel:A'), { last: 3 }, 'the batch reads the last value');
  await commit(b);
  t.same(await get('channel:A'), { last: 3 });
});

t.test('a delete between keeps both SETs, in order', async (t) => {
  const b = tx();
  b.setJson('k', 1);
  b.del('k');
  b.setJson('k', 2);
  b.setJson('k', 3);
  t.same(b.ops.map((op) => op.slice(0, 3)), [
    ['set', `${prefix}k`, '1'],
    ['unlink', `${prefix}k`],
    ['set', `${prefix}k`, '3'],
  ]);
  await commit(b);
  t.same(await get('k'), 3);
  const gone = tx();
  gone.setJson('k', 4);
  gone.del('k');
  await commit(gone);
  t.equal(await redis.exists(prefix + 'k'), 0, 'a SET then a delete ends deleted');
});

t.test('a script that names the key between keeps both SETs (it may read the first)', async (t) => {
  const b = tx();
  b.setJson('s', 'first');
  b.eval(`redis.call('set', KEYS[2], redis.call('get', KEYS[1]))`, ['s', 'copy'], []);
  b.setJson('s', 'second');
  b.setJson('s', 'third');
  t.equal(b.ops.filter((op) => op[0] === 'set').length, 2);
  await commit(b);
  t.same(await get('copy'), 'first', 'the script read the value set before it');
  t.same(await get('s'), 'third');
});
