// POST /channels/:channel_id/webhooks — {name, avatar?} in a text channel or group (ManageWebhooks) → Webhook with its token.
import { z } from 'zod';
import { claimFile, fileLocks } from '../../../files.ts';
import { webhookStream } from '../../../domain/webhook/events.ts';
import { AppError } from '../../../errors.ts';
import { newId } from '../../../ids.ts';
import { defineRoute } from '../../route.ts';
import { name32 } from '../../schemas.ts';
import { DEFAULT_WEBHOOK_PERMISSIONS, loadWebhook, manageWebhooksIn, newWebhookToken, presentWebhook } from './load.ts';

export default defineRoute({
  method: 'POST',
  path: '/channels/:channel_id/webhooks',
  auth: 'user',
  body: z.strictObject({ name: name32, avatar: z.string().min(1).max(128).nullish() }),
  permissions: ['ManageWebhooks'],
  async handler({ deps, caller, meta, body, params }) {
    const channelId = params.channel_id!;
    const webhookId = newId(deps.now());
    const avatar = body.avatar ?? undefined;
    const token = newWebhookToken(deps.secrets.tokenKey);
    await deps.executor.execute(meta, [webhookStream(webhookId), ...fileLocks(avatar)], async () => {
      const access = await manageWebhooksIn(deps, channelId, caller.userId);
      if (access.kind === 'private' && access.channel.channel_type !== 'Group') throw new AppError({ type: 'InvalidOperation' });
      const claim = avatar === undefined ? undefined : await claimFile(deps, { fileId: avatar, tag: 'avatars', userId: caller.userId, usedFor: { type: 'WebhookAvatar', id: webhookId } });
      const data = {
        id: webhookId,
        name: body.name,
        ...(claim ? { avatar: claim.file } : {}),
        creator_id: caller.userId,
        channel_id: channelId,
        permissions: DEFAULT_WEBHOOK_PERMISSIONS.toString(),
        token: token.token,
        tokenHash: token.tokenHash,
      };
      return {
        writes: [{ stream: webhookStream(webhookId), scope: access.scope, expected: 'no_stream' as const, events: [{ type: 'WebhookCreated' as const, data }] }, ...(claim ? [claim.write] : [])],
        result: undefined,
      };
    });
    return presentWebhook(deps, await loadWebhook(deps, webhookId));
  },
});
