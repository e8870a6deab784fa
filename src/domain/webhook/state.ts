/** The stored webhook (read model `webhook:<id>`) and its public form. */
import type { FileObject } from '../shared.ts';

/** A stored webhook: Stoat's Webhook, with the token encrypted and its SHA-256, and the stream revision. */
export interface WebhookState {
  id: string;
  name: string;
  avatar?: FileObject;
  creator_id: string;
  channel_id: string;
  /** Channel permission value (decimal string). */
  permissions: string;
  /** The token, encrypted under `ServiceSecrets.tokenKey`. */
  token: string;
  tokenHash: string;
  /** Server of the channel; null for a group. */
  server: string | null;
  revision: number;
}

/** The webhook as clients see it in events (Stoat's Webhook without the token; `permissions` a number). */
export function publicWebhook(w: WebhookState): Record<string, unknown> {
  return {
    id: w.id,
    name: w.name,
    ...(w.avatar ? { avatar: w.avatar } : {}),
    creator_id: w.creator_id,
    channel_id: w.channel_id,
    permissions: Number(BigInt(w.permissions)),
  };
}
