// POST /push/unsubscribe — ends the session's Web Push subscription (204, also when it had none).
import { decidePushUnsubscribe } from '../../../domain/account/push.ts';
import { loadAccount } from '../auth/accountLoad.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';

export default defineRoute({
  method: 'POST',
  path: '/push/unsubscribe',
  auth: 'session',
  async handler({ deps, caller, meta }) {
    const stream = `account-${caller.userId}`;
    await deps.executor.execute(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      return { writes: [{ stream, scope: caller.userId, expected: state.revision, events: decidePushUnsubscribe(state, caller.sessionId) }], result: undefined };
    });
    return NO_CONTENT;
  },
});
