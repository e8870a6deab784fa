// POST /sync/settings/set?timestamp= — {key: "value"} (the web client: {timestamp, key: "value"}) → 204; UserSettingsUpdate to the caller's sockets.
import { checkSettingsWriteSize, decideSetSettings, settingsLogCost } from '../../../domain/settings/setSettings.ts';
import { refundBudget, spendBudget } from '../../../ratelimit/budget.ts';
import { RateLimited } from '../../middleware/errors.ts';
import { settingsStream } from '../../../domain/settings/events.ts';
import { rm } from '../../../readmodel/keys.ts';
import { expectedOf } from '../../command.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { SetSettingsBody, SetSettingsQuery } from './schemas.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

export default defineRoute({
  method: 'POST',
  path: '/sync/settings/set',
  auth: 'user',
  body: SetSettingsBody,
  query: SetSettingsQuery,
  async handler(rc) {
    const { deps, caller, body, query } = rc;
    const stream = settingsStream(caller.userId);
    const limits = deps.config.settings;
    // The log keeps every write for ever: one write is capped, and what one account adds to it is bounded
    // per day (429 past it); a write refused after the spend (the key limit) gets its spend back.
    checkSettingsWriteSize(body.pairs, limits.writeMaxBytes);
    const cost = settingsLogCost(body.pairs);
    const budgetKey = `${deps.config.redisPrefix}settings:logbytes:${caller.userId}`;
    if (cost > 0) {
      const spent = await spendBudget(deps.readModels.redis, budgetKey, cost, limits.logBytesPerDay, DAY_MS);
      if (!spent.allowed) throw new RateLimited(spent.retryAfterMs);
    }
    try {
      // Decided on the stream's revision, so the per-user key limit holds under concurrent writes.
      await deps.executor.execute(rc.meta, [stream], async () => {
        const revision = (await deps.readModels.getJson<number>(rm.userSettingsRevision(caller.userId))) ?? -1;
        const stored = await deps.readModels.redis.hkeys(deps.readModels.key(rm.userSettings(caller.userId)));
        const events = decideSetSettings({ settings: body.pairs, timestamp: query.timestamp ?? body.timestamp }, new Set(stored), { now: deps.now(), writeMaxBytes: limits.writeMaxBytes });
        return { writes: [{ stream, scope: caller.userId, expected: expectedOf(revision), events }], result: undefined };
      });
    } catch (err) {
      if (cost > 0) await refundBudget(deps.readModels.redis, budgetKey, cost);
      throw err;
    }
    return NO_CONTENT;
  },
});
