// GET /admin/retention — the retention policies: the instance default and the server and channel overrides (instance admins).
import { defineRoute } from '../../route.ts';
import { callerRole, staffOnly } from './staff.ts';
import { presentPolicies } from './retention.ts';

export default defineRoute({
  method: 'GET',
  path: '/admin/retention',
  auth: 'user',
  authorize: staffOnly('admin'),
  async handler(rc) {
    await callerRole(rc, 'admin');
    return presentPolicies(rc);
  },
});
