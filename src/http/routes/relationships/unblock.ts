// DELETE /users/:user_id/block — lifts the caller's block → User (Stoat's `unblock_user`).
import { decideUnblock } from '../../../domain/relationship/decide.ts';
import { defineRoute } from '../../route.ts';
import { changeRelationship, loadTargetUser, presentTarget } from './command.ts';

export default defineRoute({
  method: 'DELETE',
  path: '/users/:user_id/block',
  auth: 'user',
  async handler(rc) {
    const target = await loadTargetUser(rc, rc.params.user_id!);
    await changeRelationship(rc, target._id, decideUnblock);
    return presentTarget(rc, target);
  },
});
