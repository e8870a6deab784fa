// POST /channels/:channel_id/messages — DataMessageSend (+ Idempotency-Key) → the created Message with `user` and `member` (429 InSlowmode in a slowmode).
import { channelAccess, loadChannel } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import { messageStream } from '../../../domain/message/events.ts';
import { decideSendMessage, fileIdsOf, mentionsOf, type SendMessage } from '../../../domain/message/sendMessage.ts';
import type { MemberObject } from '../../../domain/models.ts';
import { validateKey } from '../../../idempotency/store.ts';
import { newId } from '../../../ids.ts';
import { rm } from '../../../readmodel/keys.ts';
import type { AppDeps } from '../../deps.ts';
import { defineRoute, type RouteContext } from '../../route.ts';
import { defined } from '../../schemas.ts';
import { presentUser } from '../users/present.ts';
import { fileLocks } from './files.ts';
import { loadSendFacts } from './sendFacts.ts';
import { releaseSlowmode } from '../../../ratelimit/slowmode.ts';
import { sendToUser } from '../../../gateway/userFrames.ts';
import { presentMessage } from './present.ts';
import { evolveMessage } from '../../../domain/message/state.ts';
import type { MessageObject } from '../../../domain/message/events.ts';
import { embedOf, SendBody } from './schemas.ts';

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
async function send(rc: RouteContext<SendBody, undefined>, cmd: SendMessage, slowmode: { taken: number }): Promise<Sent> {
  const { deps } = rc;
  const locks = [messageStream(cmd.messageId), ...fileLocks(deps, fileIdsOf(cmd), cmd.masquerade?.avatar)];
  const done = await deps.executor.execute(rc.meta, locks, async () => {
    const access = await channelAccess(deps, cmd.channelId, cmd.authorId);
    const loaded = await loadSendFacts(deps, cmd, access, { uploader: cmd.authorId, slowmode: true });
    slowmode.taken = loaded.slowmodeTaken;
    const events = decideSendMessage(cmd, loaded.facts);
    const message = { stream: messageStream(cmd.messageId), scope: access.scope, expected: 'no_stream' as const, events };
    const sent = events[0]!;
    if (sent.type !== 'MessageSent') throw new Error('a send decides a MessageSent');
    return {
      writes: [message, ...loaded.writes],
      result: { serverId: access.kind === 'server' ? access.server._id : null, message: sent.data.message },
    };
  });
  return done.result;
}

/** Stoat's `UserSlowmodes` to the sender: after a send that took the slot, and when a send is refused by it. */
function tellSlowmode(deps: AppDeps, userId: string, channelId: string, duration: number, retryAfter: number): void {
  void sendToUser(deps.readModels.redis, deps.config.redisPrefix, userId, {
    type: 'UserSlowmodes',
    slowmodes: [{ channel_id: channelId, duration, retry_after: retryAfter }],
  });
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
      mentions: mentionsOf(body.content ?? undefined, caller.bot !== undefined, body.flags ?? undefined),
    };
    const slowmode = { taken: 0 };
    let sent: Sent;
    try {
      sent = await send(rc, cmd, slowmode);
    } catch (err) {
      if (err instanceof AppError && err.body.type === 'InSlowmode') {
        const seconds = (await loadChannel(deps, channelId))?.slowmode ?? err.body.retry_after;
        tellSlowmode(deps, caller.userId, channelId, seconds, err.body.retry_after);
      }
      // Release the key and the slowmode slot only when nothing was appended, so a refused send can be retried.
      if ((key !== undefined || slowmode.taken > 0) && (await deps.store.streamRevision(messageStream(cmd.messageId)).catch(() => 0)) < 0) {
        if (key !== undefined) deps.idempotency.release(caller.userId, key);
        if (slowmode.taken > 0) await releaseSlowmode(deps.readModels.redis, deps.config.redisPrefix, caller.userId, channelId, cmd.messageId);
      }
      throw err;
    }
    if (slowmode.taken > 0) tellSlowmode(deps, caller.userId, channelId, slowmode.taken, slowmode.taken);
    // Link previews (Stoat's January): the event says whether there are any, the worker role fetches them.
    // The answer is the decided message as the projection stored it (a new message is its MessageSent as
    // is); it was projected before `send` resolved, so a read that follows sees it too.
    const message = presentMessage(evolveMessage(null, { type: 'MessageSent', data: { message: sent.message } }, 0)!);
    return { ...message, ...(await authorOf(deps, sent.serverId, caller.userId)) };
  },
});
