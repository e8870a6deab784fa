// POST /channels/:channel_id/messages — DataMessageSend (+ Idempotency-Key) → the created Message with `user` and `member`.
import { channelAccess } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import { messageStream } from '../../../domain/message/events.ts';
import { parseMentions } from '../../../domain/message/mentions.ts';
import { recipientsOf } from '../../../domain/private/state.ts';
import { checkSendMessage, decideSendMessage, fileIdsOf, type SendMessage } from '../../../domain/message/sendMessage.ts';
import type { MemberObject } from '../../../domain/models.ts';
import { channelPermissionsOf } from '../../../domain/server/permissions.ts';
import { validateKey } from '../../../idempotency/store.ts';
import { newId } from '../../../ids.ts';
import { Permission } from '../../../permissions/bits.ts';
import { has } from '../../../permissions/calculate.ts';
import { rm } from '../../../readmodel/keys.ts';
import { loadMessages } from '../../../readmodel/messages.ts';
import type { AppDeps } from '../../deps.ts';
import { defineRoute, type RouteContext } from '../../route.ts';
import { defined } from '../../schemas.ts';
import { presentUser } from '../users/present.ts';
import { claimAttachments, fileLocks, referenceAvatar } from './files.ts';
import { presentMessage } from './present.ts';
import { evolveMessage } from '../../../domain/message/state.ts';
import type { MessageObject } from '../../../domain/message/events.ts';
import { embedOf, SendBody } from './schemas.ts';
import { loadAudience } from './audience.ts';
import { own, setOwn } from '../../../own.ts';

/** The `Idempotency-Key` header (undefined when absent; empty or over 64 characters → 400 FailedValidation). */
function headerKey(rc: RouteContext<SendBody, undefined>): string | undefined {
  const raw = rc.ctx.headers['idempotency-key'];
  return validateKey(Array.isArray(raw) ? raw[raw.length - 1] : raw);
}

/** What a send appended: the message's server (null: a private channel) and the message as stored. */
interface Sent {
  serverId: string | null;
  message: MessageObject;
}

/** Appends the message (and what it claims); resolves once it is projected. */
async function send(rc: RouteContext<SendBody, undefined>, cmd: SendMessage): Promise<Sent> {
  const { deps } = rc;
  const avatar = cmd.masquerade?.avatar;
  const locks = [messageStream(cmd.messageId), ...fileLocks(deps, fileIdsOf(cmd), avatar)];
  const done = await deps.executor.execute(rc.meta, locks, async () => {
    const access = await channelAccess(deps, cmd.channelId, cmd.authorId);
    checkSendMessage(cmd, access.permissions);
    const claimed = await claimAttachments(deps, fileIdsOf(cmd), cmd.authorId, cmd.messageId);
    const avatarWrites = avatar === undefined ? [] : await referenceAvatar(deps, avatar, cmd.authorId, cmd.messageId);

    const replyIds = [...new Set(cmd.replies.map((r) => r.id))];
    const targets = await loadMessages(deps.readModels, cmd.channelId, replyIds);
    const replies: Record<string, { author: string } | null> = {};
    replyIds.forEach((id, i) => setOwn(replies, id, targets[i] ? { author: targets[i]!.author } : null));

    // Mentions count only for members who can see the channel: the content's and the replied authors'.
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
      // In a private channel the recipients see everything.
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
      // A bot's `@everyone` flag (4) mentions like the text does.
      audience: await loadAudience(deps, access, cmd.bot === true && ((cmd.flags ?? 0) & 4) !== 0 ? { users: [], roles: [], online: false, ...parsed, everyone: true } : parsed),
    });
    const message = { stream: messageStream(cmd.messageId), scope: access.scope, expected: 'no_stream' as const, events };
    const sent = events[0]!;
    if (sent.type !== 'MessageSent') throw new Error('a send decides a MessageSent');
    return {
      writes: [message, ...claimed.writes, ...avatarWrites],
      result: { serverId: access.kind === 'server' ? access.server._id : null, message: sent.data.message },
    };
  });
  return done.result;
}

/** The sender's user and member objects for the answer. */
async function authorOf(deps: AppDeps, serverId: string | null, userId: string) {
  const [profile, member] = await Promise.all([
    deps.readModels.getJson<UserProfile>(rm.user(userId)),
    serverId === null ? Promise.resolve(null) : deps.readModels.hgetJson<MemberObject>(rm.serverMembers(serverId), userId),
  ]);
  return { ...(profile ? { user: presentUser(profile, userId, true) } : {}), ...(member ? { member } : {}) };
}

export default defineRoute({
  method: 'POST',
  path: '/channels/:channel_id/messages',
  auth: 'user',
  body: SendBody,
  permissions: ['ViewChannel', 'SendMessage', 'Masquerade', 'ManageRole', 'SendEmbeds', 'UploadFiles', 'React', 'MentionEveryone', 'MentionRoles'],
  async handler(rc) {
    const { deps, body, caller } = rc;
    const channelId = rc.params.channel_id!;
    // DESIGN §4 "idempotency": the header wins; a body nonce is the key without it; reserved on arrival.
    const key = headerKey(rc) ?? body.nonce ?? undefined;
    if (key !== undefined && !deps.idempotency.reserve(caller.userId, key)) throw new AppError({ type: 'DuplicateNonce' });
    const cmd: SendMessage = {
      messageId: newId(deps.now()),
      channelId,
      authorId: caller.userId,
      nonce: key ?? newId(deps.now()),
      content: body.content ?? undefined,
      attachments: body.attachments ?? [],
      embeds: (body.embeds ?? []).map(embedOf),
      replies: (body.replies ?? []).map((r) => ({ id: r.id, mention: r.mention, fail_if_not_exists: r.fail_if_not_exists ?? undefined })),
      masquerade: body.masquerade ? defined(body.masquerade) : undefined,
      interactions: body.interactions
        ? { reactions: body.interactions.reactions ?? undefined, restrict_reactions: body.interactions.restrict_reactions ?? undefined }
        : undefined,
      flags: body.flags ?? undefined,
      ...(caller.bot ? { bot: true } : {}),
    };
    let sent: Sent;
    try {
      sent = await send(rc, cmd);
    } catch (err) {
      // Release the key only when nothing was appended, so a refused send can be retried with it.
      if (key !== undefined && (await deps.store.streamRevision(messageStream(cmd.messageId)).catch(() => 0)) < 0) {
        deps.idempotency.release(caller.userId, key);
      }
      throw err;
    }
    // Link previews (Stoat's January): the event says whether there are any, the worker role fetches them.
    // The answer is the decided message as the projection stored it (a new message is its MessageSent as
    // is); it was projected before `send` resolved, so a read that follows sees it too.
    const message = presentMessage(evolveMessage(null, { type: 'MessageSent', data: { message: sent.message } }, 0)!);
    return { ...message, ...(await authorOf(deps, sent.serverId, caller.userId)) };
  },
});
