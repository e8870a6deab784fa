// POST /safety/report — 204: report a message, a server or a user to the instance moderators (Stoat's report_content).
import { z } from 'zod';
import { channelAccess, loadServer } from '../../../access.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import { decideReport } from '../../../domain/moderation/decide.ts';
import { INSTANCE_SCOPE, ReportedContent, reportStream, type ReportSnapshot } from '../../../domain/moderation/events.ts';
import { messageStream } from '../../../domain/message/events.ts';
import { AppError } from '../../../errors.ts';
import { isUlid, newId } from '../../../ids.ts';
import { Permission } from '../../../permissions/bits.ts';
import { loadMessage } from '../../../readmodel/messages.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute, NO_CONTENT, type RouteContext } from '../../route.ts';

const Body = z
  .object({
    content: ReportedContent,
    additional_context: z.string().refine((s) => [...s].length <= 1000, 'at most 1000 characters').default(''),
  })
  .strict();

const notFound = () => new AppError({ type: 'NotFound' });

/** The owner and a snapshot of the reported content; 404 for what does not exist or the reporter cannot see. */
async function resolveContent(rc: RouteContext<unknown, unknown>, content: ReportedContent): Promise<{ owner: string; snapshot: ReportSnapshot }> {
  const { deps } = rc;
  if (!isUlid(content.id)) throw notFound();
  switch (content.type) {
    case 'Message': {
      // The message's channel is in its first event; the reporter must see that channel.
      const [sent] = await deps.store.readStream(messageStream(content.id), { maxCount: 1 });
      if (!sent || sent.type !== 'MessageSent') throw notFound();
      const channelId = (sent.data as { message: { channel: string } }).message.channel;
      const access = await channelAccess(deps, channelId, rc.caller.userId);
      if ((access.permissions & Permission.ViewChannel) === 0n) throw notFound();
      const message = await loadMessage(deps.readModels, channelId, content.id);
      if (!message) throw notFound();
      return {
        owner: message.author,
        snapshot: { _type: 'Message', channel: channelId, server: access.kind === 'server' ? access.server._id : null, author: message.author, content: message.content ?? null },
      };
    }
    case 'Server': {
      const server = await loadServer(deps, content.id);
      if (!server) throw notFound();
      return { owner: server.owner, snapshot: { _type: 'Server', name: server.name, owner: server.owner } };
    }
    case 'User': {
      if (content.message_id != null && !isUlid(content.message_id)) throw notFound();
      const user = await deps.readModels.getJson<UserProfile>(rm.user(content.id));
      if (!user) throw notFound();
      return {
        owner: user._id,
        snapshot: { _type: 'User', username: user.username, discriminator: user.discriminator, display_name: user.display_name ?? null },
      };
    }
  }
}

export default defineRoute({
  method: 'POST',
  path: '/safety/report',
  auth: 'user',
  noBots: true,
  body: Body,
  async handler(rc) {
    const id = newId(rc.deps.now());
    const stream = reportStream(id);
    await rc.deps.executor.execute(rc.meta, [stream], async () => {
      const facts = await resolveContent(rc, rc.body.content);
      const events = decideReport(
        { id, authorId: rc.caller.userId, content: rc.body.content, additionalContext: rc.body.additional_context },
        { contentOwner: facts.owner, snapshot: facts.snapshot },
      );
      return { writes: [{ stream, scope: INSTANCE_SCOPE, expected: 'no_stream', events }], result: undefined };
    });
    return NO_CONTENT;
  },
});
