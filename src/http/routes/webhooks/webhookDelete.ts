// DELETE /webhooks/:webhook_id — ManageWebhooks in its channel → 204.
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { deleteWebhook } from './edit.ts';
import { manageWebhooksIn } from './load.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/webhooks/:webhook_id',
  auth: 'user',
  permissions: ['ManageWebhooks'],
  async handler({ deps, caller, meta, params }) {
    await deleteWebhook(deps, meta, params.webhook_id!, (w) => manageWebhooksIn(deps, w.channel_id, caller.userId));
    return NO_CONTENT;
  },
});
