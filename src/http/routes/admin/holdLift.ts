// POST /admin/holds/:hold_id/lift — lift a standing legal hold, with an optional reason (admins); audited. Lifting the last hold on a deleted account erases its personal data.
import { z } from 'zod';
import { decideLiftHold } from '../../../domain/hold/decide.ts';
import { HOLDS_STREAM, HoldReason } from '../../../domain/hold/events.ts';
import type { HoldState } from '../../../domain/hold/state.ts';
import { INSTANCE_SCOPE } from '../../../domain/moderation/events.ts';
import { loadHolds, presentHold } from '../../../compliance/holdLog.ts';
import { rm } from '../../../readmodel/keys.ts';
import { AppError } from '../../../errors.ts';
import { describeIssues } from '../../app.ts';
import { defineRoute } from '../../route.ts';
import { callerRole, pathId, staffOnly } from './staff.ts';

/** The lift's body, checked after authorization. */
const LiftBody = z.object({ reason: HoldReason.optional() }).strict();
/** What the router validates before the handler: any object. */
const Body = z.object({ reason: z.unknown().optional() }).passthrough();

export default defineRoute({
  method: 'POST',
  path: '/admin/holds/:hold_id/lift',
  auth: 'user',
  authorize: staffOnly('admin'),
  body: Body,
  async handler(rc) {
    await callerRole(rc, 'admin');
    const id = pathId(rc.params.hold_id);
    const parsed = LiftBody.safeParse(rc.body);
    if (!parsed.success) throw new AppError({ type: 'FailedValidation', error: describeIssues(parsed.error, 'body') });
    const reason = parsed.data.reason ?? null;
    await rc.deps.executor.execute({ ...rc.meta, ...(reason !== null ? { reason } : {}) }, [HOLDS_STREAM], async () => {
      const { holds, expected } = await loadHolds(rc.deps.store);
      return { writes: [{ stream: HOLDS_STREAM, scope: INSTANCE_SCOPE, expected, events: decideLiftHold(holds, { id, reason }) }], result: undefined };
    });
    const h = await rc.deps.readModels.hgetJson<HoldState>(rm.holds(), id);
    return presentHold(h!);
  },
});
