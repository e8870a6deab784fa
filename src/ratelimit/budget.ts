/**
 * Budgets shared by every process through Redis: an amount (bytes, mails) spent per key within a fixed
 * window that starts with the first spend, like the rate limiter's windows but longer and counted in
 * something other than requests. Used for what one account may add to the event log (settings sync) and
 * how many mails one address may be sent. One key per budget, so it works on a Redis Cluster too.
 */
import type { RedisClient } from '../redis.ts';

// Opens the window on the first spend; a spend that would pass the limit is taken back and answered with
// the window's remaining time.
const SPEND = `
redis.call('SET', KEYS[1], 0, 'PX', ARGV[3], 'NX')
local used = redis.call('INCRBY', KEYS[1], ARGV[1])
if used > tonumber(ARGV[2]) then
  redis.call('DECRBY', KEYS[1], ARGV[1])
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then ttl = tonumber(ARGV[3]) end
  return ttl
end
return -1
`;

const REFUND = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  local left = redis.call('DECRBY', KEYS[1], ARGV[1])
  if left < 0 then redis.call('SET', KEYS[1], 0, 'KEEPTTL') end
end
return 0
`;

/** The outcome of a spend: allowed, or refused with the milliseconds until the window ends. */
export type BudgetResult = { allowed: true } | { allowed: false; retryAfterMs: number };

/** Spends `amount` of the budget at `key` (at most `limit` per window of `windowMs`); a refused spend costs nothing. */
export async function spendBudget(redis: RedisClient, key: string, amount: number, limit: number, windowMs: number): Promise<BudgetResult> {
  const ttl = Number(await redis.eval(SPEND, 1, key, String(amount), String(limit), String(windowMs)));
  return ttl < 0 ? { allowed: true } : { allowed: false, retryAfterMs: Math.max(1, ttl) };
}

/** Gives back `amount` spent on something that then did not happen (never below zero). */
export async function refundBudget(redis: RedisClient, key: string, amount: number): Promise<void> {
  await redis.eval(REFUND, 1, key, String(amount));
}
