// Redis budgets (src/ratelimit/budget.ts) on the test Redis: a limit is spent exactly (N allowed, N+1
// refused with the window's remaining time), a refusal spends nothing, the window opens with the first spend
// and ends on its own, and a refund never goes below zero.
import t from 'tap';
import { refundBudget, spendBudget } from '../src/ratelimit/budget.ts';
import { createRedis } from '../src/redis.ts';
import { deletePrefix, TEST_REDIS_URL, uniquePrefix } from './helpers/service.ts';
import { until, WAIT_MS } from './helpers/wait.ts';

t.test('budgets', async (t) => {
  const redis = createRedis(TEST_REDIS_URL);
  const prefix = uniquePrefix();
  t.teardown(async () => {
    await deletePrefix(TEST_REDIS_URL, prefix);
    redis.disconnect();
  });

  t.test('N allowed, N+1 refused; a refusal costs nothing', async (t) => {
    const key = `${prefix}a`;
    t.same(await spendBudget(redis, key, 6, 10, 60_000), { allowed: true });
    t.same(await spendBudget(redis, key, 4, 10, 60_000), { allowed: true }, 'exactly the limit');
    const over = await spendBudget(redis, key, 1, 10, 60_000);
    t.equal(over.allowed, false, 'one more is refused');
    if (!over.allowed) t.ok(over.retryAfterMs > 50_000 && over.retryAfterMs <= 60_000, `retry after the window (${over.retryAfterMs} ms)`);
    t.equal(await redis.get(key), '10', 'the refusal spent nothing');
    await refundBudget(redis, key, 3);
    t.same(await spendBudget(redis, key, 3, 10, 60_000), { allowed: true }, 'a refund can be spent again');
    t.equal((await spendBudget(redis, key, 11, 20, 60_000)).allowed, false, 'a spend over what is left is refused whole');
    t.equal(await redis.get(key), '10');
  });

  t.test('the window ends on its own; a refund after it leaves nothing behind', async (t) => {
    const key = `${prefix}b`;
    t.same(await spendBudget(redis, key, 2, 2, 300), { allowed: true });
    t.equal((await spendBudget(redis, key, 1, 2, 300)).allowed, false);
    await until('the window to end', async () => (await redis.exists(key)) === 0, WAIT_MS);
    t.same(await spendBudget(redis, key, 2, 2, 300), { allowed: true }, 'a new window');
    await until('the window to end', async () => (await redis.exists(key)) === 0, WAIT_MS);
    await refundBudget(redis, key, 5);
    t.equal(await redis.exists(key), 0, 'no counter without a window');
    const other = `${prefix}c`;
    await spendBudget(redis, other, 1, 5, 60_000);
    await refundBudget(redis, other, 5);
    t.equal(await redis.get(other), '0', 'never below zero');
    t.ok((await redis.pttl(other)) > 0, 'and the window is kept');
  });
});
