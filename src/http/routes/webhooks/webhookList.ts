// GET /channels/:channel_id/webhooks — the channel's webhooks with their tokens (ManageWebhooks).
import type { WebhookState } from '../../../domain/webhook/state.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute } from '../../route.ts';
import { manageWebhooksIn, presentWebhook } from './load.ts';

export default defineRoute({
  method: 'GET',
  path: '/channels/:channel_id/webhooks',
  auth: 'user',
  permissions: ['ManageWebhooks'],
  async handler({ deps, caller, params }) {
    const channelId = params.channel_id!;
    await manageWebhooksIn(deps, channelId, caller.userId);
    const ids = [...(await deps.readModels.smembers(rm.channelWebhooks(channelId)))].sort();
    const hooks = await Promise.all(ids.map((id) => deps.readModels.getJson<WebhookState>(rm.webhook(id))));
    return hooks.filter((w): w is WebhookState => w !== null && w.channel_id === channelId).map((w) => presentWebhook(deps, w));
  },
});
