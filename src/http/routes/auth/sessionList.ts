// GET /auth/session/all — the caller's sessions: [{_id, name}].
import { defineRoute } from '../../route.ts';
import { loadAccount } from './accountLoad.ts';

export default defineRoute({
  method: 'GET',
  path: '/auth/session/all',
  auth: 'session',
  async handler({ deps, caller }) {
    const state = await loadAccount(deps, caller.userId);
    return Object.entries(state.sessions).map(([_id, s]) => ({ _id, name: s.name }));
  },
});
