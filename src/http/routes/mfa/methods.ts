// GET /auth/mfa/methods — the MFA methods the account accepts: ["Password"], or ["Totp", "Recovery"].
import { allowedMethods } from '../../../domain/account/mfa.ts';
import { defineRoute } from '../../route.ts';
import { loadAccount } from '../auth/accountLoad.ts';

export default defineRoute({
  method: 'GET',
  path: '/auth/mfa/methods',
  auth: 'session',
  async handler({ deps, caller }) {
    return allowedMethods(await loadAccount(deps, caller.userId));
  },
});
