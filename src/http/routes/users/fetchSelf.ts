// GET /users/@me — the caller's own User.
import { defineRoute } from '../../route.ts';
import { loadAccount } from '../auth/accountLoad.ts';
import { presentSelf } from './present.ts';

export default defineRoute({
  method: 'GET',
  path: '/users/@me',
  auth: 'user',
  async handler({ deps, caller }) {
    return presentSelf(await loadAccount(deps, caller.userId));
  },
});
