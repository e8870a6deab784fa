// PUT /users/:user_id/block — blocks a user → User (Stoat's `block_user`).
import { decideBlock } from '../../../domain/relationship/decide.ts';
import { defineRoute } from '../../route.ts';
import { changeRelationship, loadTargetUser, presentTarget } from './command.ts';

export default defineRoute({
  method: 'PUT',
  path: '/users/:user_id/block',
  auth: 'user',
  async handler(rc) {
    const target = await loadTargetUser(rc, rc.params.user_id!);
    await changeRelationship(rc, target._id, decideBlock);
    return presentTarget(rc, target);
  },
});
