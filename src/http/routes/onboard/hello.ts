// GET /onboard/hello — {onboarding: true} while the account has no username yet.
import { defineRoute } from '../../route.ts';
import { loadAccount } from '../auth/accountLoad.ts';

export default defineRoute({
  method: 'GET',
  path: '/onboard/hello',
  auth: 'session',
  async handler({ deps, caller }) {
    const state = await loadAccount(deps, caller.userId);
    return { onboarding: state.user === null };
  },
});
