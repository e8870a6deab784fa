/**
 * Shared by the webhook routes: loading a webhook, checking its token (constant time), the ManageWebhooks
 * check of a user on its channel, and Stoat's two shapes (`Webhook` with the token, `ResponseWebhook` without).
 */
import { createHash, randomBytes } from 'node:crypto';
import { channelAccess, type AnyChannelAccess } from '../../../access.ts';
import { sameDigest } from '../../../domain/account/secrets.ts';
import type { WebhookState } from '../../../domain/webhook/state.ts';
import { AppError } from '../../../errors.ts';
import { decryptSecret, encryptSecret } from '../../../personal/cipher.ts';
import { Permission } from '../../../permissions/bits.ts';
import { require as requirePermission } from '../../../permissions/calculate.ts';
import { rm } from '../../../readmodel/keys.ts';
import type { AppDeps } from '../../deps.ts';

/** Purpose label of webhook tokens under `ServiceSecrets.tokenKey`. */
const TOKEN_PURPOSE = 'webhook-token';

/** Stoat's default webhook permissions: SendMessage, SendEmbeds, Masquerade, React. */
export const DEFAULT_WEBHOOK_PERMISSIONS = Permission.SendMessage | Permission.SendEmbeds | Permission.Masquerade | Permission.React;

/** The webhook, or 404 NotFound. */
export async function loadWebhook(deps: Pick<AppDeps, 'readModels'>, webhookId: string): Promise<WebhookState> {
  const w = await deps.readModels.getJson<WebhookState>(rm.webhook(webhookId));
  if (!w) throw new AppError({ type: 'NotFound' });
  return w;
}

/** The webhook if `token` is its token (SHA-256 compared in constant time), else 401 NotAuthenticated (Stoat). */
export async function loadWebhookByToken(deps: Pick<AppDeps, 'readModels'>, webhookId: string, token: string): Promise<WebhookState> {
  const w = await loadWebhook(deps, webhookId);
  if (!sameDigest(w.tokenHash, createHash('sha256').update(token).digest('hex'))) throw new AppError({ type: 'NotAuthenticated' });
  return w;
}

/** The caller's access to the channel, with ManageWebhooks (404 for non-members, 403 without the bit). */
export async function manageWebhooksIn(deps: AppDeps, channelId: string, userId: string): Promise<AnyChannelAccess> {
  const access = await channelAccess(deps, channelId, userId);
  requirePermission(access.permissions, Permission.ViewChannel);
  requirePermission(access.permissions, Permission.ManageWebhooks);
  return access;
}

/** A new webhook token encrypted for the log, with its SHA-256. */
export function newWebhookToken(key: Buffer): { token: string; tokenHash: string } {
  const plain = randomBytes(48).toString('base64url');
  return { token: encryptSecret(key, TOKEN_PURPOSE, plain), tokenHash: createHash('sha256').update(plain).digest('hex') };
}

/** Stoat's Webhook, with its token: for ManageWebhooks holders and the token's holder. */
export function presentWebhook(deps: Pick<AppDeps, 'secrets'>, w: WebhookState): Record<string, unknown> {
  return {
    id: w.id,
    name: w.name,
    ...(w.avatar ? { avatar: w.avatar } : {}),
    creator_id: w.creator_id,
    channel_id: w.channel_id,
    permissions: Number(BigInt(w.permissions)),
    token: decryptSecret(deps.secrets.tokenKey, TOKEN_PURPOSE, w.token) ?? undefined,
  };
}

/** Stoat's ResponseWebhook: no token, the avatar as its id. */
export function presentResponseWebhook(w: WebhookState): Record<string, unknown> {
  return {
    id: w.id,
    name: w.name,
    ...(w.avatar ? { avatar: w.avatar._id } : {}),
    channel_id: w.channel_id,
    permissions: Number(BigInt(w.permissions)),
  };
}
