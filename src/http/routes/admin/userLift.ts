// POST /admin/users/:user_id/lift — lift an account's suspension or ban (admins).
import { decideLift } from '../../../domain/moderation/decide.ts';
import { defineRoute } from '../../route.ts';
import { onSanction } from './sanction.ts';
import { ReasonBody, staffOnly } from './staff.ts';

export default defineRoute({
  method: 'POST',
  path: '/admin/users/:user_id/lift',
  auth: 'user',
  authorize: staffOnly('admin'),
  body: ReasonBody,
  async handler(rc) {
    return onSanction(rc, 'admin', (current, userId) => decideLift(current, { userId, reason: rc.body.reason }));
  },
});
