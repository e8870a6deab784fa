/** Running a sanction command on `sanction-<userId>`: staff check, target check, decide, append, answer the standing. */
import type { DomainEvent } from '../../../domain/events.ts';
import { checkSanctionTarget } from '../../../domain/moderation/decide.ts';
import { sanctionStream, type InstanceRole } from '../../../domain/moderation/events.ts';
import type { SanctionState } from '../../../domain/moderation/state.ts';
import { AppError } from '../../../errors.ts';
import { rm } from '../../../readmodel/keys.ts';
import type { RouteContext } from '../../route.ts';
import { callerRole, instanceRole, loadSanction, pathId } from './staff.ts';

/** The sanction standing as answered: `{user_id, kind, until, reason}` (`kind` "none" when nothing stands). */
export function presentSanction(userId: string, s: SanctionState | null) {
  return { user_id: userId, kind: s?.kind ?? 'none', until: s?.until ?? null, reason: s?.reason ?? null, actor: s?.actor ?? null, at: s?.at ?? null };
}

/** Decides a sanction of the path's user as the caller (who needs `need`). */
export async function onSanction(
  rc: RouteContext<unknown, unknown>,
  need: InstanceRole,
  decide: (current: SanctionState | null, userId: string) => DomainEvent[],
): Promise<ReturnType<typeof presentSanction>> {
  const role = await callerRole(rc, need);
  const userId = pathId(rc.params.user_id);
  const stream = sanctionStream(userId);
  await rc.deps.executor.execute(rc.meta, [stream], async () => {
    if (!(await rc.deps.readModels.getJson(rm.account(userId)))) throw new AppError({ type: 'NotFound' });
    checkSanctionTarget(rc.caller.userId, role, userId, await instanceRole(rc.deps, userId));
    const current = await loadSanction(rc.deps, userId);
    return { writes: [{ stream, scope: userId, expected: current ? current.revision : 'no_stream', events: decide(current, userId) }], result: undefined };
  });
  return presentSanction(userId, await loadSanction(rc.deps, userId));
}
