// GET /admin/audit — the instance audit log, newest first: every staff action with its actor and reason (staff only).
import { z } from 'zod';
import type { InstanceAuditEntry } from '../../../domain/moderation/state.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute } from '../../route.ts';
import { callerRole, staffOnly } from './staff.ts';

const Query = z
  .object({
    /** Only entries before this cursor (the `cursor` of the last entry of the previous page). */
    before: z.string().max(128).optional(),
    limit: z.coerce.number().int().min(1).max(100).default(50),
  })
  .passthrough();

export default defineRoute({
  method: 'GET',
  path: '/admin/audit',
  auth: 'user',
  authorize: staffOnly('moderator'),
  query: Query,
  async handler(rc) {
    await callerRole(rc);
    const { before, limit } = rc.query;
    const keys = await rc.deps.readModels.zrangeByLex(rm.instanceAuditIndex(), '-', before === undefined ? '+' : `(${before}`, limit, true);
    const entries = await rc.deps.readModels.hmgetJson<InstanceAuditEntry>(rm.instanceAudit(), keys);
    return entries.flatMap((e, i) => (e ? [{ ...e, cursor: keys[i]! }] : []));
  },
});
