// POST /admin/holds — place a legal hold on a server, a channel or a user, with a name and a reason (admins); audited.
import { z } from 'zod';
import { decidePlaceHold } from '../../../domain/hold/decide.ts';
import { HOLDS_STREAM, HoldName, HoldReason, HoldTarget } from '../../../domain/hold/events.ts';
import type { HoldState } from '../../../domain/hold/state.ts';
import { INSTANCE_SCOPE } from '../../../domain/moderation/events.ts';
import { loadHolds, presentHold, targetExists } from '../../../compliance/holdLog.ts';
import { AppError } from '../../../errors.ts';
import { newId } from '../../../ids.ts';
import { rm } from '../../../readmodel/keys.ts';
import { describeIssues } from '../../app.ts';
import { defineRoute } from '../../route.ts';
import { callerRole, staffOnly } from './staff.ts';

/** The hold to place, checked after authorization (a caller without the role learns nothing from a 400). */
const HoldBody = z.object({ name: HoldName, reason: HoldReason, target: HoldTarget }).strict();
/** What the router validates before the handler: any object (its fields are named for the fuzzer). */
const Body = z.object({ name: z.unknown().optional(), reason: z.unknown().optional(), target: z.unknown().optional() }).passthrough();

export default defineRoute({
  method: 'POST',
  path: '/admin/holds',
  auth: 'user',
  authorize: staffOnly('admin'),
  body: Body,
  async handler(rc) {
    await callerRole(rc, 'admin');
    const parsed = HoldBody.safeParse(rc.body);
    if (!parsed.success) throw new AppError({ type: 'FailedValidation', error: describeIssues(parsed.error, 'body') });
    const { name, reason, target } = parsed.data;
    const id = newId(rc.deps.now());
    await rc.deps.executor.execute({ ...rc.meta, reason }, [HOLDS_STREAM], async () => {
      // The holds stream is small and read whole: the same decision the command line makes from the log.
      const live = async (t: { id: string }) => (await rc.deps.readModels.mgetJson([rm.channel(t.id), rm.privateChannel(t.id)])).some((c) => c !== null);
      if (!(await targetExists(rc.deps.store, target, live))) throw new AppError({ type: 'NotFound' });
      const { holds, expected } = await loadHolds(rc.deps.store);
      return { writes: [{ stream: HOLDS_STREAM, scope: INSTANCE_SCOPE, expected, events: decidePlaceHold(holds, { id, name, reason, target }) }], result: undefined };
    });
    const h = await rc.deps.readModels.hgetJson<HoldState>(rm.holds(), id);
    return presentHold(h!);
  },
});
