/**
 * Sending a message as a webhook (the execute route and the GitHub adaptor): the same decision, events and
 * projections as a user's send (`loadSendFacts`, `decideSendMessage`, `MessageSent` on `message-<id>`; no slowmode, as in Stoat),
 * with the webhook's own permission value instead of a member's, and `webhook: {name, avatar}` on the message.
 * The token is checked again inside the plan, so a token reset or deletion racing the send wins.
 */
import type { AnyChannelAccess } from '../../../access.ts';
import { loadChannel, loadPrivateChannel, loadServer } from '../../../access.ts';
import type { MemberObject } from '../../../domain/models.ts';
import { messageStream } from '../../../domain/message/events.ts';
import { decideSendMessage, fileIdsOf, type SendMessage } from '../../../domain/message/sendMessage.ts';
import type { WebhookState } from '../../../domain/webhook/state.ts';
import { AppError } from '../../../errors.ts';
import { Permission } from '../../../permissions/bits.ts';
import type { AppDeps } from '../../deps.ts';
import type { CommandMeta } from '../../../commands.ts';
import { fileLocks } from '../messages/files.ts';
import { loadSendFacts } from '../messages/sendFacts.ts';
import { currentMessage } from '../messages/present.ts';
import { loadWebhookByToken } from './load.ts';

/**
 * The webhook's channel as an access whose permission value is the webhook's own (Stoat checks the body
 * against the webhook's permissions, not anyone's membership); ViewChannel is implied. 404 when the channel is gone.
 */
export async function webhookAccess(deps: AppDeps, w: WebhookState): Promise<AnyChannelAccess> {
  const permissions = BigInt(w.permissions) | Permission.ViewChannel;
  if (w.server !== null) {
    const [channel, server] = await Promise.all([loadChannel(deps, w.channel_id), loadServer(deps, w.server)]);
    if (!channel || !server || !server.channels.includes(channel._id)) throw new AppError({ type: 'NotFound' });
    const member: MemberObject = { _id: { server: server._id, user: w.id }, joined_at: new Date(0).toISOString() };
    return { kind: 'server', scope: server._id, channel, server, member, permissions, isOwner: false };
  }
  const channel = await loadPrivateChannel(deps, w.channel_id);
  if (!channel) throw new AppError({ type: 'NotFound' });
  return { kind: 'private', scope: channel._id, channel, permissions, isOwner: false };
}

/**
 * Sends `cmd` (author = the webhook) as webhook `w0` holding `token`; `key` is the idempotency key reserved for
 * it (released when nothing was appended). Resolves with the presented message.
 */
export async function sendAsWebhook(deps: AppDeps, meta: CommandMeta, w0: WebhookState, token: string, cmd: SendMessage, key?: { owner: string; key: string }) {
  const avatar = cmd.masquerade?.avatar;
  try {
    await deps.executor.execute(meta, [messageStream(cmd.messageId), ...fileLocks(deps, fileIdsOf(cmd), avatar)], async () => {
      const w = await loadWebhookByToken(deps, w0.id, token);
      const access = await webhookAccess(deps, w);
      // Uploads are the webhook creator's (the webhook has no uploads of its own).
      const loaded = await loadSendFacts(deps, cmd, access, { uploader: w.creator_id, slowmode: false });
      const events = decideSendMessage(cmd, loaded.facts);
      for (const e of events) if (e.type === 'MessageSent') e.data.message.webhook = { name: w.name, ...(w.avatar ? { avatar: w.avatar._id } : {}) };
      const message = { stream: messageStream(cmd.messageId), scope: access.scope, expected: 'no_stream' as const, events };
      return { writes: [message, ...loaded.writes], result: undefined };
    });
  } catch (err) {
    if (key !== undefined && (await deps.store.streamRevision(messageStream(cmd.messageId)).catch(() => 0)) < 0) deps.idempotency.release(key.owner, key.key);
    throw err;
  }
  return currentMessage(deps, cmd.channelId, cmd.messageId);
}
