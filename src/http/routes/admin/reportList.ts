// GET /admin/reports — the moderation queue: reports, newest first, optionally of one status (staff only).
import { z } from 'zod';
import type { ReportState } from '../../../domain/moderation/state.ts';
import { isUlid } from '../../../ids.ts';
import { rm } from '../../../readmodel/keys.ts';
import { presentReport } from '../../../../projections/moderation.ts';
import { defineRoute } from '../../route.ts';
import { callerRole, staffOnly } from './staff.ts';

const Query = z
  .object({
    status: z.enum(['Created', 'Rejected', 'Resolved']).optional(),
    /** Only reports older than this report id (paging). */
    before: z.string().refine(isUlid, 'a report id').optional(),
    limit: z.coerce.number().int().min(1).max(100).default(50),
  })
  .passthrough();

export default defineRoute({
  method: 'GET',
  path: '/admin/reports',
  auth: 'user',
  authorize: staffOnly('moderator'),
  query: Query,
  async handler(rc) {
    await callerRole(rc);
    const { status, before, limit } = rc.query;
    const max = before === undefined ? '+' : `(${before}`;
    const ids = await rc.deps.readModels.zrangeByLex(rm.reportIndex(status), '-', max, limit, true);
    const reports = await rc.deps.readModels.mgetJson<ReportState>(ids.map((id) => rm.report(id)));
    return reports.filter((r): r is ReportState => r !== null).map(presentReport);
  },
});
