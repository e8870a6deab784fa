// GET /webhooks/:webhook_id — ResponseWebhook (no token) for a user with ManageWebhooks in its channel.
import { defineRoute } from '../../route.ts';
import { loadWebhook, manageWebhooksIn, presentResponseWebhook } from './load.ts';

export default defineRoute({
  method: 'GET',
  path: '/webhooks/:webhook_id',
  auth: 'user',
  permissions: ['ManageWebhooks'],
  async handler({ deps, caller, params }) {
    const w = await loadWebhook(deps, params.webhook_id!);
    await manageWebhooksIn(deps, w.channel_id, caller.userId);
    return presentResponseWebhook(w);
  },
});
