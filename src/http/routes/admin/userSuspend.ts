// POST /admin/users/:user_id/suspend — suspend an account instance-wide, for `duration_days` or until lifted; its sessions end (staff).
import { z } from 'zod';
import { decideSuspend } from '../../../domain/moderation/decide.ts';
import { ModReason } from '../../../domain/moderation/events.ts';
import { staffOnly } from './staff.ts';
import { defineRoute } from '../../route.ts';
import { onSanction } from './sanction.ts';

const Body = z.object({ reason: ModReason, duration_days: z.number().int().min(1).max(3650).optional() }).strict();

export default defineRoute({
  method: 'POST',
  path: '/admin/users/:user_id/suspend',
  auth: 'user',
  authorize: staffOnly('moderator'),
  body: Body,
  async handler(rc) {
    const until = rc.body.duration_days === undefined ? null : new Date(rc.deps.now() + rc.body.duration_days * 86_400_000).toISOString();
    return onSanction(rc, 'moderator', (current, userId) => decideSuspend(current, { userId, until, reason: rc.body.reason }));
  },
});
