// GET /channels/:channel_id/messages?limit&before&after&nearby&sort&include_users — [Message] or {messages, users, members} (ReadMessageHistory).
import { z } from 'zod';
import { channelAccess, Permission, requireAll } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import { readHistoryWire } from '../../../readmodel/messages.ts';
import { queryBool, queryInt } from '../../query.ts';
import { defineRoute, RawJson } from '../../route.ts';
import { authorsOf } from './present.ts';

/** A message id in a query: 26 characters (Revolt), ULID alphabet. */
const messageId = z.string().regex(/^[0-9A-Za-z]{26}$/, 'expected a message id (26 characters)');

export default defineRoute({
  method: 'GET',
  path: '/channels/:channel_id/messages',
  auth: 'user',
  query: z.object({
    limit: queryInt(1, 100).optional(),
    before: messageId.optional(),
    after: messageId.optional(),
    nearby: messageId.optional(),
    sort: z.enum(['Latest', 'Oldest', 'Relevance']).optional(),
    include_users: queryBool.optional(),
  }),
  permissions: ['ViewChannel', 'ReadMessageHistory'],
  async handler(rc) {
    const { deps, query } = rc;
    const channelId = rc.params.channel_id!;
    const a = await channelAccess(deps, channelId, rc.caller.userId);
    requireAll(a.permissions, Permission.ViewChannel, Permission.ReadMessageHistory);
    // Relevance belongs to search, which this route is not (Revolt answers the same).
    if (query.sort === 'Relevance') throw new AppError({ type: 'InvalidOperation' });
    const limit = query.limit ?? 50;
    // The page is the stored wire forms, written out as their bytes.
    const page = await readHistoryWire(
      deps.readModels,
      channelId,
      query.nearby !== undefined
        ? { nearby: query.nearby, limit }
        : { sort: query.sort === 'Oldest' ? 'Oldest' : 'Latest', limit, before: query.before, after: query.after },
    );
    if (!query.include_users) return new RawJson(page.json);
    const authors = page.authors.map((author) => ({ author }));
    const { users, members } = await authorsOf(deps, a.kind === 'server' ? a.server._id : null, authors, rc.caller.userId);
    return new RawJson(
      Buffer.concat([Buffer.from('{"messages":'), page.json, Buffer.from(`,"users":${JSON.stringify(users)},"members":${JSON.stringify(members)}}`)]),
    );
  },
});
