// PATCH /webhooks/:webhook_id/:token — DataEditWebhook by the token's holder (no session) → Webhook.
import { defineRoute } from '../../route.ts';
import { EditWebhookBody, editWebhook } from './edit.ts';
import { loadWebhookByToken, presentWebhook } from './load.ts';

export default defineRoute({
  method: 'PATCH',
  path: '/webhooks/:webhook_id/:token',
  auth: 'none',
  body: EditWebhookBody,
  async handler({ deps, meta, body, params }) {
    const token = params.token!;
    const w = await editWebhook(deps, meta, params.webhook_id!, body, async (w) => BigInt((await loadWebhookByToken(deps, w.id, token)).permissions));
    return presentWebhook(deps, w);
  },
});
