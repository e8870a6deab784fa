// GET /admin/holds — legal holds, newest first: all of them, or only the standing ones with `active=true` (admins).
import { z } from 'zod';
import type { HoldState } from '../../../domain/hold/state.ts';
import { presentHold } from '../../../compliance/holdLog.ts';
import { isUlid } from '../../../ids.ts';
import { rm } from '../../../readmodel/keys.ts';
import { AppError } from '../../../errors.ts';
import { describeIssues } from '../../app.ts';
import { defineRoute } from '../../route.ts';
import { callerRole, staffOnly } from './staff.ts';

/** The list's query, checked after authorization. */
const ListQuery = z
  .object({
    active: z.enum(['true', 'false']).optional(),
    /** Only holds older than this hold id (paging). */
    before: z.string().refine(isUlid, 'a hold id').optional(),
    limit: z.coerce.number().int().min(1).max(100).default(50),
  })
  .passthrough();
/** What the router validates before the handler: bounded strings only. */
const Query = z.record(z.string(), z.union([z.string().max(256), z.array(z.string().max(256)).max(4)]));

export default defineRoute({
  method: 'GET',
  path: '/admin/holds',
  auth: 'user',
  authorize: staffOnly('admin'),
  query: Query,
  async handler(rc) {
    await callerRole(rc, 'admin');
    const parsed = ListQuery.safeParse(rc.query);
    if (!parsed.success) throw new AppError({ type: 'FailedValidation', error: describeIssues(parsed.error, 'query') });
    const { active, before, limit } = parsed.data;
    const ids = await rc.deps.readModels.zrangeByLex(rm.holdIndex(active === 'true'), '-', before === undefined ? '+' : `(${before}`, limit, true);
    const holds = await rc.deps.readModels.hmgetJson<HoldState>(rm.holds(), ids);
    return holds.filter((h): h is HoldState => h !== null).map(presentHold);
  },
});
