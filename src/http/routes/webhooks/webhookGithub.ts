// POST /webhooks/:webhook_id/:token/github — a GitHub delivery (`X-GitHub-Event` + payload) posted as one embed by the webhook → 204 (nothing posted for events Stoat ignores).
import { mentionsOf } from '../../../domain/message/sendMessage.ts';
import { z } from 'zod';
import { githubEmbed } from '../../../domain/webhook/github.ts';
import { AppError } from '../../../errors.ts';
import { newId } from '../../../ids.ts';
import { describeIssues } from '../../app.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { embedOf, SendableEmbed } from '../messages/schemas.ts';
import { loadWebhookByToken } from './load.ts';
import { sendAsWebhook } from './send.ts';

export default defineRoute({
  method: 'POST',
  path: '/webhooks/:webhook_id/:token/github',
  auth: 'none',
  body: z.record(z.string(), z.unknown()),
  async handler(rc) {
    const { deps, body, params } = rc;
    const w = await loadWebhookByToken(deps, params.webhook_id!, params.token!);
    const event = rc.ctx.get('X-GitHub-Event');
    if (!event) throw new AppError({ type: 'FailedValidation', error: 'the X-GitHub-Event header is missing' });
    const embed = githubEmbed(event, body);
    if (embed === null) return NO_CONTENT;
    // Stoat validates the embed it built (lengths): a delivery whose texts are too long is refused, not cut.
    const checked = SendableEmbed.safeParse(embed);
    if (!checked.success) throw new AppError({ type: 'FailedValidation', error: describeIssues(checked.error, 'embed') });
    await sendAsWebhook(deps, rc.meta, w, params.token!, {
      messageId: newId(deps.now()),
      channelId: w.channel_id,
      authorId: w.id,
      nonce: newId(deps.now()),
      attachments: [],
      embeds: [embedOf(checked.data)],
      replies: [],
      mentions: mentionsOf(undefined, false, undefined),
    });
    return NO_CONTENT;
  },
});
