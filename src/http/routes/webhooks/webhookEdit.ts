// PATCH /webhooks/:webhook_id — DataEditWebhook (ManageWebhooks in its channel) → Webhook.
import { defineRoute } from '../../route.ts';
import { EditWebhookBody, editWebhook } from './edit.ts';
import { manageWebhooksIn, presentWebhook } from './load.ts';

export default defineRoute({
  method: 'PATCH',
  path: '/webhooks/:webhook_id',
  auth: 'user',
  body: EditWebhookBody,
  permissions: ['ManageWebhooks'],
  async handler({ deps, caller, meta, body, params }) {
    const w = await editWebhook(deps, meta, params.webhook_id!, body, async (w) => (await manageWebhooksIn(deps, w.channel_id, caller.userId)).permissions);
    return presentWebhook(deps, w);
  },
});
