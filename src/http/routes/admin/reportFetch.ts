// GET /admin/reports/:report_id — one report (staff only).
import type { ReportState } from '../../../domain/moderation/state.ts';
import { AppError } from '../../../errors.ts';
import { rm } from '../../../readmodel/keys.ts';
import { presentReport } from '../../../../projections/moderation.ts';
import { defineRoute } from '../../route.ts';
import { callerRole, pathId, staffOnly } from './staff.ts';

export default defineRoute({
  method: 'GET',
  path: '/admin/reports/:report_id',
  auth: 'user',
  authorize: staffOnly('moderator'),
  async handler(rc) {
    await callerRole(rc);
    const id = pathId(rc.params.report_id);
    const r = await rc.deps.readModels.getJson<ReportState>(rm.report(id));
    if (!r) throw new AppError({ type: 'NotFound' });
    return presentReport(r);
  },
});
