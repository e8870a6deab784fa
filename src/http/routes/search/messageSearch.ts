// POST /channels/:channel_id/search — {query?, pinned?, limit?, before?, after?, sort?, include_users?} → [Message] or {messages, users, members} (ReadMessageHistory).
import { z } from 'zod';
import { channelAccess, Permission, requireAll } from '../../../access.ts';
import { AppError, unavailable } from '../../../errors.ts';
import type { MessageState } from '../../../domain/message/state.ts';
import { loadMessages, readHistory } from '../../../readmodel/messages.ts';
import { codepoints } from '../../../text.ts';
import { defineRoute } from '../../route.ts';
import { authorsOf, presentMessage } from '../messages/present.ts';

/** A message id bound: 26 characters (Stoat's length rule), ULID alphabet. */
const messageId = z.string().regex(/^[0-9A-Za-z]{26}$/, 'expected a message id (26 characters)');

/** Stoat's DataMessageSearch (null = not given). */
const Body = z.strictObject({
  /** Full-text query, 1–64 characters (Stoat's MongoDB `$text` syntax: words, "phrases", -exclusions). */
  query: codepoints(1, 64).nullish(),
  /** Only pinned messages; cannot be sent with `query`. */
  pinned: z.boolean().nullish(),
  limit: z.number().int().min(1).max(100).nullish(),
  before: messageId.nullish(),
  after: messageId.nullish(),
  /** Default Relevance (Stoat); without a query, Relevance is Latest. */
  sort: z.enum(['Relevance', 'Latest', 'Oldest']).nullish(),
  include_users: z.boolean().nullish(),
});

export default defineRoute({
  method: 'POST',
  path: '/channels/:channel_id/search',
  auth: 'user',
  noBots: true,
  body: Body,
  permissions: ['ViewChannel', 'ReadMessageHistory'],
  async handler(rc) {
    const { deps, body } = rc;
    // Stoat checks this before the channel: sending both is the caller's mistake wherever it is sent.
    if (body.query != null && body.pinned != null) throw new AppError({ type: 'InvalidOperation' });
    const channelId = rc.params.channel_id!;
    const a = await channelAccess(deps, channelId, rc.caller.userId);
    requireAll(a.permissions, Permission.ViewChannel, Permission.ReadMessageHistory);
    const limit = body.limit ?? 50;
    const sort = body.sort ?? 'Relevance';
    const page = { sort, limit, before: body.before ?? undefined, after: body.after ?? undefined } as const;
    let messages: MessageState[];
    if (body.query == null && body.pinned !== true) {
      // Neither filter: the channel's history (Stoat's query without a filter), from the history index.
      messages = await readHistory(deps.readModels, channelId, { sort: sort === 'Oldest' ? 'Oldest' : 'Latest', limit, before: page.before, after: page.after });
    } else {
      const search = deps.search;
      if (!search) throw unavailable();
      await search.caughtUp();
      const ids = body.query != null ? search.search(channelId, body.query, page) : search.pinned(channelId, page);
      // The message bodies come from the messages read model, as the history route's do.
      messages = (await loadMessages(deps.readModels, channelId, ids)).filter((m): m is MessageState => m !== null);
    }
    const presented = messages.map(presentMessage);
    if (!body.include_users) return presented;
    const { users, members } = await authorsOf(deps, a.kind === 'server' ? a.server._id : null, messages, rc.caller.userId);
    return { messages: presented, users, members };
  },
});
