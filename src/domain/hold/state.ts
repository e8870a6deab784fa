/** A legal hold as the read model and the command line see it, folded from the `holds` stream. */
import type { HoldTarget } from './events.ts';

/** One hold: standing while `lifted_at` is null. */
export interface HoldState {
  _id: string;
  name: string;
  reason: string;
  target: HoldTarget;
  /** Who placed it (null: the operator, through the command line). */
  placed_by: string | null;
  placed_at: string;
  lifted_by: string | null;
  lifted_at: string | null;
  lift_reason: string | null;
}

/** Folds the holds from the events of the `holds` stream, oldest first, onto `holds` (unknown event types are ignored). */
export function foldHolds(
  events: ReadonlyArray<{ type: string; data: unknown; metadata: { actor: string | null; at: string } }>,
  holds: Map<string, HoldState> = new Map(),
): Map<string, HoldState> {
  for (const e of events) {
    if (e.type === 'HoldPlaced') {
      const d = e.data as { id: string; name: string; reason: string; target: HoldTarget };
      holds.set(d.id, { _id: d.id, name: d.name, reason: d.reason, target: d.target, placed_by: e.metadata.actor, placed_at: e.metadata.at, lifted_by: null, lifted_at: null, lift_reason: null });
    } else if (e.type === 'HoldLifted') {
      const d = e.data as { id: string; reason: string | null };
      const h = holds.get(d.id);
      if (h && h.lifted_at === null) Object.assign(h, { lifted_by: e.metadata.actor, lifted_at: e.metadata.at, lift_reason: d.reason });
    }
  }
  return holds;
}

/** The users that at least one standing hold covers. */
export function heldUsers(holds: ReadonlyMap<string, HoldState>): Set<string> {
  const out = new Set<string>();
  for (const h of holds.values()) if (h.lifted_at === null && h.target.type === 'user') out.add(h.target.id);
  return out;
}
