// POST /push/subscribe — {endpoint, p256dh, auth}: the session's Web Push subscription (replaces an earlier one) → 204.
import { z } from 'zod';
import { checkPushKeys, decidePushSubscribe, PUSH_LIMITS } from '../../../domain/account/push.ts';
import { AppError } from '../../../errors.ts';
import { checkUrl, OutboundRefused } from '../../../outbound/policy.ts';
import { loadAccount } from '../auth/accountLoad.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';

export default defineRoute({
  method: 'POST',
  path: '/push/subscribe',
  auth: 'session',
  body: z.strictObject({
    endpoint: z.string().min(1).max(PUSH_LIMITS.endpoint),
    p256dh: z.string().min(1).max(PUSH_LIMITS.p256dh),
    auth: z.string().min(1).max(PUSH_LIMITS.auth),
  }),
  async handler({ deps, caller, meta, body }) {
    // A push endpoint is an outbound request like any other: refused here when it may not be reached.
    try {
      checkUrl(body.endpoint, deps.config.outbound);
    } catch (err) {
      if (!(err instanceof OutboundRefused)) throw err;
      throw new AppError({ type: 'FailedValidation', error: `endpoint: ${err.message}` });
    }
    checkPushKeys(body);
    const stream = `account-${caller.userId}`;
    await deps.executor.execute(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      return {
        writes: [{ stream, scope: caller.userId, expected: state.revision, events: decidePushSubscribe(state, caller.sessionId, body) }],
        result: undefined,
      };
    });
    return NO_CONTENT;
  },
});
