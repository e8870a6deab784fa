// POST /admin/users/:user_id/ban — ban an account instance-wide; its sessions end (admins).
import { decideBan } from '../../../domain/moderation/decide.ts';
import { defineRoute } from '../../route.ts';
import { onSanction } from './sanction.ts';
import { ReasonBody, staffOnly } from './staff.ts';

export default defineRoute({
  method: 'POST',
  path: '/admin/users/:user_id/ban',
  auth: 'user',
  authorize: staffOnly('admin'),
  body: ReasonBody,
  async handler(rc) {
    return onSanction(rc, 'admin', (current, userId) => decideBan(current, { userId, reason: rc.body.reason }));
  },
});
