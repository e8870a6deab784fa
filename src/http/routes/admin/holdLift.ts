// POST /admin/holds/:hold_id/lift — lift a standing legal hold, with an optional reason (admins); audited. Lifting the last hold on a deleted account erases its personal data.
import { z } from 'zod';
import { decideLiftHold } from '../../../domain/hold/decide.ts';
import { HOLDS_STREAM, HoldReason } from '../../../domain/hold/events.ts';
import type { HoldState } from '../../../domain/hold/state.ts';
import { INSTANCE_SCOPE } from '../../../domain/moderation/events.ts';
import { loadHolds, presentHold } from '../../../compliance/holdLog.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute } from '../../route.ts';
import { callerRole, pathId } from './staff.ts';

const Body = z.object({ reason: HoldReason.optional() }).strict();

export default defineRoute({
  method: 'POST',
  path: '/admin/holds/:hold_id/lift',
  auth: 'user',
  body: Body,
  async handler(rc) {
    await callerRole(rc, 'admin');
    const id = pathId(rc.params.hold_id);
    const reason = rc.body.reason ?? null;
    await rc.deps.executor.execute({ ...rc.meta, ...(reason !== null ? { reason } : {}) }, [HOLDS_STREAM], async () => {
      const { holds, expected } = await loadHolds(rc.deps.store);
      return { writes: [{ stream: HOLDS_STREAM, scope: INSTANCE_SCOPE, expected, events: decideLiftHold(holds, { id, reason }) }], result: undefined };
    });
    const h = await rc.deps.readModels.hgetJson<HoldState>(rm.holds(), id);
    return presentHold(h!);
  },
});
