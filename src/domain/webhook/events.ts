/**
 * Events of channel webhooks (Stoat's `Webhook`), on `webhook-<id>` (scope = the channel's scope: its server,
 * or the group itself). Tokens enter the log only encrypted (`token`) and as their SHA-256 (`tokenHash`).
 */
import { z } from 'zod';
import { FileObject } from '../shared.ts';

/** The stream of one webhook. */
export function webhookStream(webhookId: string): string {
  return `webhook-${webhookId}`;
}

export const webhookEvents = {
  /** A webhook was created in a text channel or group. */
  WebhookCreated: z.object({
    id: z.string(),
    name: z.string(),
    avatar: FileObject.optional(),
    creator_id: z.string(),
    channel_id: z.string(),
    /** Its channel permission value (decimal string of a 64-bit value). */
    permissions: z.string(),
    /** The token, encrypted under `ServiceSecrets.tokenKey`. */
    token: z.string(),
    /** SHA-256 (hex) of the token, compared in constant time. */
    tokenHash: z.string(),
  }),
  /** Webhook fields changed (only those given); `remove: ["Avatar"]` clears the avatar first. */
  WebhookEdited: z.object({
    channel_id: z.string(),
    name: z.string().optional(),
    avatar: FileObject.optional(),
    permissions: z.string().optional(),
    remove: z.array(z.enum(['Avatar'])).default([]),
  }),
  /** The webhook was deleted. */
  WebhookDeleted: z.object({ channel_id: z.string() }),
};
