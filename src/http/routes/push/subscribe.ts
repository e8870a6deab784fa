// POST /push/subscribe — {endpoint, p256dh, auth}: the session's push subscription, Web Push or a phone's ("fcm"/"apn", auth = device token) → 204.
import { z } from 'zod';
import { checkDeviceToken, checkPushKeys, decidePushSubscribe, PUSH_LIMITS } from '../../../domain/account/push.ts';
import { APN_ENDPOINT, FCM_ENDPOINT } from '../../../push/mobile.ts';
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
    p256dh: z.string().max(PUSH_LIMITS.p256dh),
    auth: z.string().min(1).max(PUSH_LIMITS.auth),
  }),
  async handler({ deps, caller, meta, body }) {
    if (body.endpoint === FCM_ENDPOINT || body.endpoint === APN_ENDPOINT) {
      // Stoat's mobile apps: the platform by name, the device token in `auth` (`p256dh` unused, often empty).
      checkDeviceToken(body.auth);
    } else {
      // A push endpoint is an outbound request like any other: refused here when it may not be reached.
      try {
        checkUrl(body.endpoint, deps.config.outbound);
      } catch (err) {
        if (!(err instanceof OutboundRefused)) throw err;
        throw new AppError({ type: 'FailedValidation', error: `endpoint: ${err.message}` });
      }
      checkPushKeys(body);
    }
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
