// GET /users/:user_id/dm — opens the DM with a user (or the caller's Saved Notes), reusing an existing one → Channel.
import { loadPrivateChannel, loadRelations } from '../../../access.ts';
import { AppError, missingPermission } from '../../../errors.ts';
import { dmPairStream, type PrivateChannelObject } from '../../../domain/private/events.ts';
import { presentPrivateChannel } from '../../../domain/private/state.ts';
import { statusOf } from '../../../domain/relationship/state.ts';
import { newId } from '../../../ids.ts';
import { UserPermission, userPermissions } from '../../../permissions/user.ts';
import { rm } from '../../../readmodel/keys.ts';
import { withLastMessage } from '../../../readmodel/lastMessages.ts';
import { defineRoute } from '../../route.ts';
import { loadTargetUser } from '../relationships/command.ts';

export default defineRoute({
  method: 'GET',
  path: '/users/:user_id/dm',
  auth: 'user',
  async handler(rc) {
    const { deps } = rc;
    const me = rc.caller.userId;
    const target = await loadTargetUser(rc, rc.params.user_id === '@me' ? me : rc.params.user_id!);
    if (target._id !== me) {
      // Stoat's user permissions: SendMessage comes from friendship (or a bot with a mutual connection; this
      // service has no bots), so a block either way, a pending request or no relationship is refused.
      const relationship = statusOf(await loadRelations(deps, me), target._id);
      const value = userPermissions({ same: false, relationship, mutual: false, targetIsBot: false, viewerIsBot: false });
      if ((value & UserPermission.SendMessage) === 0n) throw missingPermission('SendMessage');
    }
    const pair = dmPairStream(me, target._id);
    const channelId = await deps.executor.execute(rc.meta, [pair], async () => {
      const existing = await deps.readModels.getJson<string>(rm.dmPair(me, target._id));
      if (existing) return { writes: [], result: existing };
      const id = newId(deps.now());
      const channel: PrivateChannelObject =
        target._id === me
          ? { channel_type: 'SavedMessages', _id: id, user: me }
          : { channel_type: 'DirectMessage', _id: id, active: true, recipients: [me, target._id] };
      return {
        writes: [
          { stream: `channel-${id}`, scope: id, expected: 'no_stream', events: [{ type: 'PrivateChannelOpened', data: { channel } }] },
          // Claims the pair: a concurrent open by the other user fails here, re-reads and reuses this channel.
          { stream: pair, scope: id, expected: 'no_stream', events: [{ type: 'DirectMessagePaired', data: { channelId: id } }] },
        ],
        result: id,
      };
    });
    const channel = await loadPrivateChannel(deps, channelId.result);
    if (!channel) throw new AppError({ type: 'NotFound' });
    return withLastMessage(deps.readModels, presentPrivateChannel(channel));
  },
});
