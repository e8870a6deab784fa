/** Pure decisions of legal holds: placing one (a fresh id) and lifting a standing one. */
import { AppError } from '../../errors.ts';
import type { DomainEvent } from '../events.ts';
import type { HoldTarget } from './events.ts';
import type { HoldState } from './state.ts';

/** Places a hold. The same target may carry several holds (one per matter); each is lifted on its own. */
export function decidePlaceHold(holds: ReadonlyMap<string, HoldState>, cmd: { id: string; name: string; reason: string; target: HoldTarget }): DomainEvent[] {
  if (holds.has(cmd.id)) throw new AppError({ type: 'InvalidOperation' });
  return [{ type: 'HoldPlaced', data: { id: cmd.id, name: cmd.name, reason: cmd.reason, target: cmd.target } }];
}

/** Lifts a hold: an unknown one is NotFound, an already lifted one NoEffect. */
export function decideLiftHold(holds: ReadonlyMap<string, HoldState>, cmd: { id: string; reason: string | null }): DomainEvent[] {
  const h = holds.get(cmd.id);
  if (!h) throw new AppError({ type: 'NotFound' });
  if (h.lifted_at !== null) throw new AppError({ type: 'NoEffect' });
  return [{ type: 'HoldLifted', data: { id: h._id, target: h.target, reason: cmd.reason } }];
}
