// PUT /users/:user_id/friend — sends a friend request, or accepts the incoming one → User (Stoat's `add_friend`).
import { AppError } from '../../../errors.ts';
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
    // Stoat: a bot is nobody's friend.
    if (target.bot) throw new AppError({ type: 'IsBot' });
    await changeRelationship(rc, target._id, (p) => decideAddFriend(p, { maxOutgoing: rc.deps.config.friendRequestLimit }));
    return presentTarget(rc, target);
  },
});
