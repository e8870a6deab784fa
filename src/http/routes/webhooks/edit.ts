/**
 * Editing and deleting a webhook, shared by the user routes (ManageWebhooks) and the token routes (no
 * session): DataEditWebhook {name?, avatar?, permissions?, remove?: ["Avatar"]}. A new avatar is an
 * `avatars` upload of the webhook's creator (Stoat's `use_webhook_avatar`).
 */
import { z } from 'zod';
import type { Write } from '../../../commands.ts';
import type { WebhookState } from '../../../domain/webhook/state.ts';
import { webhookStream } from '../../../domain/webhook/events.ts';
import { claimFile, fileLocks } from '../../../files.ts';
import { parsePermissionValue } from '../../../permissions/bits.ts';
import { requireCanGrantValue } from '../../../permissions/calculate.ts';
import type { CommandMeta } from '../../../commands.ts';
import type { AppDeps } from '../../deps.ts';
import { name32 } from '../../schemas.ts';
import { loadWebhook } from './load.ts';

/** Body of both PATCH routes. */
export const EditWebhookBody = z.strictObject({
  name: name32.nullish(),
  avatar: z.string().min(1).max(128).nullish(),
  permissions: z.union([z.number(), z.string()]).nullish(),
  remove: z.array(z.enum(['Avatar'])).max(1).nullish(),
});
/** A parsed edit body. */
export type EditWebhookBody = z.infer<typeof EditWebhookBody>;

/**
 * Applies an edit; `grant` is the value the new permissions must lie within (the editor's channel value for a
 * user, the webhook's own value for a token holder, so neither can hand a webhook more than they hold).
 */
export async function editWebhook(deps: AppDeps, meta: CommandMeta, webhookId: string, body: EditWebhookBody, check: (w: WebhookState) => Promise<bigint>): Promise<WebhookState> {
  const permissions = body.permissions == null ? undefined : parsePermissionValue(body.permissions);
  const avatar = body.avatar ?? undefined;
  const remove = body.remove ?? [];
  // Stoat: nothing to change (name, avatar and remove absent) answers the webhook as it is.
  if (body.name == null && avatar === undefined && remove.length === 0 && permissions === undefined) {
    const w = await loadWebhook(deps, webhookId);
    await check(w);
    return w;
  }
  await deps.executor.execute(meta, [webhookStream(webhookId), ...fileLocks(avatar)], async () => {
    const w = await loadWebhook(deps, webhookId);
    const grant = await check(w);
    if (permissions !== undefined) requireCanGrantValue(grant, permissions);
    const claim = avatar === undefined ? undefined : await claimFile(deps, { fileId: avatar, tag: 'avatars', userId: w.creator_id, usedFor: { type: 'WebhookAvatar', id: w.id } });
    const data = {
      channel_id: w.channel_id,
      ...(body.name != null ? { name: body.name } : {}),
      ...(claim ? { avatar: claim.file } : {}),
      ...(permissions !== undefined ? { permissions: permissions.toString() } : {}),
      remove,
    };
    const writes: Write[] = [{ stream: webhookStream(w.id), scope: w.server ?? w.channel_id, expected: w.revision, events: [{ type: 'WebhookEdited', data }] }];
    if (claim) writes.push(claim.write);
    return { writes, result: undefined };
  });
  return loadWebhook(deps, webhookId);
}

/** Deletes a webhook after `check` passed on the current one. */
export async function deleteWebhook(deps: AppDeps, meta: CommandMeta, webhookId: string, check: (w: WebhookState) => Promise<unknown>): Promise<void> {
  await deps.executor.execute(meta, [webhookStream(webhookId)], async () => {
    const w = await loadWebhook(deps, webhookId);
    await check(w);
    return { writes: [{ stream: webhookStream(w.id), scope: w.server ?? w.channel_id, expected: w.revision, events: [{ type: 'WebhookDeleted', data: { channel_id: w.channel_id } }] }], result: undefined };
  });
}
