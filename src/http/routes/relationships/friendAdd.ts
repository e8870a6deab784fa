// PUT /users/:user_id/friend — sends a friend request, or accepts the incoming one → User (Stoat's `add_friend`).
import { decideAddFriend } from '../../../domain/relationship/decide.ts';
import { defineRoute } from '../../route.ts';
import { changeRelationship, loadTargetUser, presentTarget } from './command.ts';

export default defineRoute({
  method: 'PUT',
  path: '/users/:user_id/friend',
  auth: 'user',
  noBots: true,
  async handler(rc) {
    const target = await loadTargetUser(rc, rc.params.user_id!);
    await changeRelationship(rc, target._id, (p) => decideAddFriend(p, { maxOutgoing: rc.deps.config.friendRequestLimit }));
    return presentTarget(rc, target);
  },
});
