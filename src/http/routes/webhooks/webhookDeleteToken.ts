// DELETE /webhooks/:webhook_id/:token — by the token's holder (no session) → 204.
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { deleteWebhook } from './edit.ts';
import { loadWebhookByToken } from './load.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/webhooks/:webhook_id/:token',
  auth: 'none',
  async handler({ deps, meta, params }) {
    const token = params.token!;
    await deleteWebhook(deps, meta, params.webhook_id!, (w) => loadWebhookByToken(deps, w.id, token));
    return NO_CONTENT;
  },
});
