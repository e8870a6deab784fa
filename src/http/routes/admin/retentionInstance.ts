// PUT /admin/retention/instance — sets the instance default (DMs and groups follow it); null keeps messages forever (instance admins).
import { defineRoute } from '../../route.ts';
import { callerRole, staffOnly } from './staff.ts';
import { RetentionBody, setPolicyRoute } from './retention.ts';

export default defineRoute({
  method: 'PUT',
  path: '/admin/retention/instance',
  auth: 'user',
  authorize: staffOnly('admin'),
  body: RetentionBody,
  async handler(rc) {
    await callerRole(rc, 'admin');
    return setPolicyRoute(rc, { type: 'instance' }, rc.body.max_age_seconds);
  },
});
