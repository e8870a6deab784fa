// GET /webhooks/:webhook_id/:token — Webhook for the token's holder (no session; wrong token → 401 NotAuthenticated).
import { defineRoute } from '../../route.ts';
import { loadWebhookByToken, presentWebhook } from './load.ts';

export default defineRoute({
  method: 'GET',
  path: '/webhooks/:webhook_id/:token',
  auth: 'none',
  async handler({ deps, params }) {
    return presentWebhook(deps, await loadWebhookByToken(deps, params.webhook_id!, params.token!));
  },
});
