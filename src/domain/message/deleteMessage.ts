/** DeleteMessage and BulkDeleteMessages: DELETE /channels/:id/messages/:mid and …/messages/bulk (reference §3.7). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission } from '../../permissions/calculate.ts';
import { isUlid, ulidTime } from '../../ids.ts';
import type { DomainEvent } from '../events.ts';
import type { MessageState } from './state.ts';
import { own } from '../../own.ts';

/** Most ids in one bulk delete. */
export const BULK_DELETE_MAX = 100;
/** Bulk delete only reaches messages younger than this (Revolt: 7 days). */
export const BULK_DELETE_MAX_AGE_MS = 7 * 24 * 60 * 60 * 1000;

/** Context of a deletion. */
export interface DeleteContext {
  userId: string;
  /** The caller's channel permission value. */
  permissions: bigint;
}

/** ViewChannel; the author deletes their own message, anyone else needs ManageMessages. */
export function decideDeleteMessage(message: MessageState, ctx: DeleteContext): DomainEvent[] {
  requirePermission(ctx.permissions, Permission.ViewChannel);
  if (message.author !== ctx.userId) requirePermission(ctx.permissions, Permission.ManageMessages);
  return [{ type: 'MessageDeleted', data: { channel: message.channel } }];
}

/** A webhook deletes a message (Stoat's webhook_delete_message.rs): only one it sent (403 CannotDeleteMessage). */
export function decideWebhookDeleteMessage(message: MessageState, webhookId: string): DomainEvent[] {
  if (message.author !== webhookId) throw new AppError({ type: 'CannotDeleteMessage' });
  return [{ type: 'MessageDeleted', data: { channel: message.channel } }];
}

/** The deletion of one message of a bulk delete: its id, the revision it expects and its event. */
export interface BulkDeletion {
  messageId: string;
  expected: number;
  events: DomainEvent[];
}

/**
 * ViewChannel and ManageMessages; 1–100 ids, each a ULID no older than 7 days (else 400 InvalidOperation);
 * ids that are not messages of this channel are skipped. Every deletion names the bulk; the last one
 * carries the list of ids for the one BulkMessageDelete client event.
 */
export function decideBulkDelete(
  ids: readonly string[],
  messages: Readonly<Record<string, MessageState | null>>,
  ctx: DeleteContext & { channelId: string; nowMs: number },
): BulkDeletion[] {
  requirePermission(ctx.permissions, Permission.ViewChannel);
  requirePermission(ctx.permissions, Permission.ManageMessages);
  if (ids.length === 0 || ids.length > BULK_DELETE_MAX) throw new AppError({ type: 'InvalidOperation' });
  for (const id of ids) {
    if (!isUlid(id) || ulidTime(id) < ctx.nowMs - BULK_DELETE_MAX_AGE_MS) throw new AppError({ type: 'InvalidOperation' });
  }
  const found = [...new Set(ids)].filter((id) => {
    const m = own(messages, id);
    return m !== null && m !== undefined && m.channel === ctx.channelId;
  });
  return found.map((id, i) => ({
    messageId: id,
    expected: own(messages, id)!.revision,
    events: [
      {
        type: 'MessageDeleted',
        data: i === found.length - 1 ? { channel: ctx.channelId, bulkIds: found } : { channel: ctx.channelId, inBulk: true },
      },
    ],
  }));
}
