// DELETE /users/:user_id/friend — removes a friend, denies an incoming request or cancels an outgoing one → User.
import { decideRemoveFriend } from '../../../domain/relationship/decide.ts';
import { defineRoute } from '../../route.ts';
import { changeRelationship, loadTargetUser, presentTarget } from './command.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/users/:user_id/friend',
  auth: 'user',
  noBots: true,
  async handler(rc) {
    const target = await loadTargetUser(rc, rc.params.user_id!);
    await changeRelationship(rc, target._id, decideRemoveFriend);
    return presentTarget(rc, target);
  },
});
