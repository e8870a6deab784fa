/**
 * Sending a message as a webhook (the execute route and the GitHub adaptor): the same decision, events and
 * projections as a user's send (`checkSendMessage`, `decideSendMessage`, `MessageSent` on `message-<id>`),
 * with the webhook's own permission value instead of a member's, and `webhook: {name, avatar}` on the message.
 * The token is checked again inside the plan, so a token reset or deletion racing the send wins.
 */
import type { AnyChannelAccess } from '../../../access.ts';
import { loadChannel, loadPrivateChannel, loadServer } from '../../../access.ts';
import type { MemberObject } from '../../../domain/models.ts';
import { messageStream } from '../../../domain/message/events.ts';
import { parseMentions } from '../../../domain/message/mentions.ts';
import { decideSendMessage, fileIdsOf, checkSendMessage, type SendMessage } from '../../../domain/message/sendMessage.ts';
import { recipientsOf } from '../../../domain/private/state.ts';
import { channelPermissionsOf } from '../../../domain/server/permissions.ts';
import type { WebhookState } from '../../../domain/webhook/state.ts';
import { AppError } from '../../../errors.ts';
import { own, setOwn } from '../../../own.ts';
import { Permission } from '../../../permissions/bits.ts';
import { has } from '../../../permissions/calculate.ts';
import { rm } from '../../../readmodel/keys.ts';
import { loadMessages } from '../../../readmodel/messages.ts';
import type { AppDeps } from '../../deps.ts';
import type { CommandMeta } from '../../../commands.ts';
import { loadAudience } from '../messages/audience.ts';
import { claimAttachments, fileLocks, referenceAvatar } from '../messages/files.ts';
import { currentMessage } from '../messages/present.ts';
import { loadWebhookByToken } from './load.ts';

/**
 * The webhook's channel as an access whose permission value is the webhook's own (Stoat checks the body
 * against the webhook's permissions, not anyone's membership); ViewChannel is implied. 404 when the channel is gone.
 */
async function webhookAccess(deps: AppDeps, w: WebhookState): Promise<AnyChannelAccess> {
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
      checkSendMessage(cmd, access.permissions);
      // Uploads are the webhook creator's (the webhook has no uploads of its own).
      const claimed = await claimAttachments(deps, fileIdsOf(cmd), w.creator_id, cmd.messageId);
      const avatarWrites = avatar === undefined ? [] : await referenceAvatar(deps, avatar, w.creator_id, cmd.messageId);
      const replyIds = [...new Set(cmd.replies.map((r) => r.id))];
      const targets = await loadMessages(deps.readModels, cmd.channelId, replyIds);
      const replies: Record<string, { author: string } | null> = {};
      replyIds.forEach((id, i) => setOwn(replies, id, targets[i] ? { author: targets[i]!.author } : null));
      const parsed = cmd.content ? parseMentions(cmd.content) : undefined;
      const candidates = new Set(parsed?.users ?? []);
      for (const r of cmd.replies) if (r.mention && own(replies, r.id)) candidates.add(own(replies, r.id)!.author);
      const ids = [...candidates];
      const canView: Record<string, boolean> = {};
      if (access.kind === 'server') {
        const members = await deps.readModels.hmgetJson<MemberObject>(rm.serverMembers(access.server._id), ids);
        const now = deps.now();
        ids.forEach((id, i) => {
          const m = members[i];
          setOwn(canView, id, m !== null && m !== undefined && has(channelPermissionsOf(access.server, id, m, access.channel, now), Permission.ViewChannel));
        });
      } else {
        const recipients = new Set(recipientsOf(access.channel));
        for (const id of ids) setOwn(canView, id, recipients.has(id));
      }
      const events = decideSendMessage(cmd, {
        permissions: access.permissions,
        roles: new Set(access.kind === 'server' ? Object.keys(access.server.roles) : []),
        replies,
        canView,
        files: claimed.files,
        emojis: new Set(access.kind === 'server' ? (access.server.emojis ?? []) : []),
        audience: await loadAudience(deps, access, parsed),
      });
      for (const e of events) if (e.type === 'MessageSent') e.data.message.webhook = { name: w.name, ...(w.avatar ? { avatar: w.avatar._id } : {}) };
      const message = { stream: messageStream(cmd.messageId), scope: access.scope, expected: 'no_stream' as const, events };
      return { writes: [message, ...claimed.writes, ...avatarWrites], result: undefined };
    });
  } catch (err) {
    if (key !== undefined && (await deps.store.streamRevision(messageStream(cmd.messageId)).catch(() => 0)) < 0) deps.idempotency.release(key.owner, key.key);
    throw err;
  }
  return currentMessage(deps, cmd.channelId, cmd.messageId);
}
