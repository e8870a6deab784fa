// DELETE /channels/:channel_id/recipients/:user_id — the owner removes a member → 204 (posts `user_remove`).
import { decideRemoveGroupMember } from '../../../domain/private/group.ts';
import { missingPermission } from '../../../errors.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { loadTargetUser } from '../relationships/command.ts';
import { groupOf, idSource, onPrivateChannel } from './command.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/channels/:channel_id/recipients/:user_id',
  auth: 'user',
  noBots: true,
  async handler(rc) {
    const userId = rc.params.user_id!;
    await onPrivateChannel(rc, rc.params.channel_id!, async (a) => {
      const group = groupOf(a);
      // Stoat's order: the owner check before the target is looked up.
      if (group.owner !== rc.caller.userId) throw missingPermission('ManageChannel');
      const target = await loadTargetUser(rc, userId);
      return decideRemoveGroupMember(group, target._id, { callerId: rc.caller.userId, newId: idSource(rc) });
    });
    return NO_CONTENT;
  },
});
