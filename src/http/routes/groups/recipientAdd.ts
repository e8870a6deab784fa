// PUT /channels/:channel_id/recipients/:user_id — adds a friend to a group → 204 (InviteOthers; GROUP_SIZE_LIMIT; posts `user_added`).
import { loadRelations } from '../../../access.ts';
import { decideAddGroupMember } from '../../../domain/private/group.ts';
import { Permission } from '../../../permissions/bits.ts';
import { require as requirePermission } from '../../../permissions/calculate.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { loadTargetUser } from '../relationships/command.ts';
import { groupOf, idSource, onPrivateChannel } from './command.ts';

export default defineRoute({
  method: 'PUT',
  path: '/channels/:channel_id/recipients/:user_id',
  auth: 'user',
  noBots: true,
  async handler(rc) {
    const userId = rc.params.user_id!;
    await onPrivateChannel(rc, rc.params.channel_id!, async (a) => {
      const group = groupOf(a);
      // Stoat's order: the permission before the target is looked up.
      requirePermission(a.permissions, Permission.InviteOthers);
      const target = await loadTargetUser(rc, userId);
      return decideAddGroupMember(group, target._id, {
        callerId: rc.caller.userId,
        permissions: a.permissions,
        relations: await loadRelations(rc.deps, rc.caller.userId),
        maxSize: rc.deps.config.groupSizeLimit,
        newId: idSource(rc),
      });
    });
    return NO_CONTENT;
  },
});
