// POST /webhooks/:webhook_id/:token — DataMessageSend (+ Idempotency-Key) as the webhook (no session) → Message with `webhook: {name, avatar}`.
import { mentionsOf, type SendMessage } from '../../../domain/message/sendMessage.ts';
import { AppError } from '../../../errors.ts';
import { validateKey } from '../../../idempotency/store.ts';
import { newId } from '../../../ids.ts';
import { defineRoute } from '../../route.ts';
import { defined } from '../../schemas.ts';
import { embedOf, SendBody } from '../messages/schemas.ts';
import { loadWebhookByToken } from './load.ts';
import { sendAsWebhook } from './send.ts';

export default defineRoute({
  method: 'POST',
  path: '/webhooks/:webhook_id/:token',
  auth: 'none',
  body: SendBody,
  async handler(rc) {
    const { deps, body, params } = rc;
    const first = await loadWebhookByToken(deps, params.webhook_id!, params.token!);
    const raw = rc.ctx.headers['idempotency-key'];
    const key = validateKey(Array.isArray(raw) ? raw[raw.length - 1] : raw) ?? body.nonce ?? undefined;
    const owner = `webhook:${first.id}`;
    if (key !== undefined && !deps.idempotency.reserve(owner, key)) throw new AppError({ type: 'DuplicateNonce' });
    const cmd: SendMessage = {
      messageId: newId(deps.now()),
      channelId: first.channel_id,
      authorId: first.id,
      nonce: key ?? newId(deps.now()),
      content: body.content ?? undefined,
      attachments: body.attachments ?? [],
      embeds: (body.embeds ?? []).map(embedOf),
      replies: (body.replies ?? []).map((r) => ({ id: r.id, mention: r.mention, fail_if_not_exists: r.fail_if_not_exists ?? undefined })),
      masquerade: body.masquerade ? defined(body.masquerade) : undefined,
      interactions: body.interactions ? { reactions: body.interactions.reactions ?? undefined, restrict_reactions: body.interactions.restrict_reactions ?? undefined } : undefined,
      flags: body.flags ?? undefined,
      mentions: mentionsOf(body.content ?? undefined, false, body.flags ?? undefined),
    };
    return sendAsWebhook(deps, rc.meta, first, params.token!, cmd, key === undefined ? undefined : { owner, key });
  },
});
