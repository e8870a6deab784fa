// GET /sync/unreads — [ChannelUnread]: the caller's read state in every channel it has any.
import { fetchUnreads } from '../../../readmodel/unreads.ts';
import { defineRoute } from '../../route.ts';

export default defineRoute({
  method: 'GET',
  path: '/sync/unreads',
  auth: 'user',
  async handler({ deps, caller }) {
    return fetchUnreads(deps.readModels, caller.userId);
  },
});
