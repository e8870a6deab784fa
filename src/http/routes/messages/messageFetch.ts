// GET /channels/:channel_id/messages/:message_id — the Message (ViewChannel, ReadMessageHistory).
import { channelAccess, Permission, requireAll } from '../../../access.ts';
import { defineRoute } from '../../route.ts';
import { currentMessage } from './present.ts';

export default defineRoute({
  method: 'GET',
  path: '/channels/:channel_id/messages/:message_id',
  auth: 'user',
  permissions: ['ViewChannel', 'ReadMessageHistory'],
  async handler(rc) {
    const channelId = rc.params.channel_id!;
    const a = await channelAccess(rc.deps, channelId, rc.caller.userId);
    requireAll(a.permissions, Permission.ViewChannel, Permission.ReadMessageHistory);
    return currentMessage(rc.deps, channelId, rc.params.message_id!);
  },
});
