// GET /auth/account/ — the caller's account: {_id, email}.
import { defineRoute } from '../../route.ts';
import { loadAccount } from './accountLoad.ts';

export default defineRoute({
  method: 'GET',
  path: '/auth/account/',
  auth: 'session',
  async handler({ deps, caller }) {
    const state = await loadAccount(deps, caller.userId);
    return { _id: state.userId, email: state.email };
  },
});
