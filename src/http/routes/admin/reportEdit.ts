// PATCH /admin/reports/:report_id — triage: notes, resolve, reject (with a rejection reason) or reopen (staff only).
import { z } from 'zod';
import { decideTriage } from '../../../domain/moderation/decide.ts';
import { INSTANCE_SCOPE, ModReason, reportStream } from '../../../domain/moderation/events.ts';
import type { ReportState } from '../../../domain/moderation/state.ts';
import { AppError } from '../../../errors.ts';
import { rm } from '../../../readmodel/keys.ts';
import { presentReport } from '../../../../projections/moderation.ts';
import { defineRoute } from '../../route.ts';
import { callerRole, pathId, staffOnly } from './staff.ts';

const Body = z
  .object({
    status: z.enum(['Created', 'Rejected', 'Resolved']).optional(),
    rejection_reason: ModReason.optional(),
    notes: z.string().refine((s) => [...s].length <= 2000, 'at most 2000 characters').optional(),
    /** Why it was resolved (for the audit log). */
    reason: ModReason.optional(),
  })
  .strict();

export default defineRoute({
  method: 'PATCH',
  path: '/admin/reports/:report_id',
  auth: 'user',
  authorize: staffOnly('moderator'),
  body: Body,
  async handler(rc) {
    await callerRole(rc);
    const id = pathId(rc.params.report_id);
    const stream = reportStream(id);
    await rc.deps.executor.execute(rc.meta, [stream], async () => {
      const r = await rc.deps.readModels.getJson<ReportState>(rm.report(id));
      if (!r) throw new AppError({ type: 'NotFound' });
      return { writes: [{ stream, scope: INSTANCE_SCOPE, expected: r.revision, events: decideTriage(r, rc.body) }], result: undefined };
    });
    const r = await rc.deps.readModels.getJson<ReportState>(rm.report(id));
    return presentReport(r!);
  },
});
