// GET /users/dms — the caller's Saved Notes, DMs (open or closed) and groups → [Channel].
import { presentPrivateChannel } from '../../../domain/private/state.ts';
import { privateChannelsOf } from '../../../gateway/ready.ts';
import { withLastMessages } from '../../../readmodel/lastMessages.ts';
import { defineRoute } from '../../route.ts';

export default defineRoute({
  method: 'GET',
  path: '/users/dms',
  auth: 'user',
  async handler({ deps, caller }) {
    return withLastMessages(deps.readModels, (await privateChannelsOf(deps, caller.userId)).map(presentPrivateChannel));
  },
});
