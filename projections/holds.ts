/**
 * Legal holds (`holds`, `holds:index`, `holds:standing`) and their entries in the instance audit log
 * (actions `HoldPlace` and `HoldLift`, target `{type: 'Hold'}`). The `holds` stream is scoped `instance`, so
 * every hold event projects in one partition, in log order.
 */
import type { HoldState } from '../src/domain/hold/state.ts';
import { rm } from '../src/readmodel/keys.ts';
import { audit } from './moderation.ts';
import type { Projection } from './types.ts';

export const holdsProjection: Projection = {
  name: 'holds',
  handles: ['HoldPlaced', 'HoldLifted'],
  async apply(e, tx) {
    switch (e.type) {
      case 'HoldPlaced': {
        const h: HoldState = {
          _id: e.data.id,
          name: e.data.name,
          reason: e.data.reason,
          target: e.data.target,
          placed_by: e.metadata.actor,
          placed_at: e.metadata.at,
          lifted_by: null,
          lifted_at: null,
          lift_reason: null,
        };
        tx.hsetJson(rm.holds(), h._id, h);
        tx.zadd(rm.holdIndex(), 0, h._id);
        tx.zadd(rm.holdIndex(true), 0, h._id);
        audit(tx, e, { action: 'HoldPlace', target: { type: 'Hold', id: h._id }, reason: h.reason, details: { name: h.name, target: h.target } });
        break;
      }
      case 'HoldLifted': {
        const h = await tx.hgetJson<HoldState>(rm.holds(), e.data.id);
        if (h && h.lifted_at === null) {
          tx.hsetJson(rm.holds(), h._id, { ...h, lifted_by: e.metadata.actor, lifted_at: e.metadata.at, lift_reason: e.data.reason } satisfies HoldState);
          tx.zrem(rm.holdIndex(true), h._id);
        }
        audit(tx, e, { action: 'HoldLift', target: { type: 'Hold', id: e.data.id }, reason: e.data.reason, details: { target: e.data.target } });
        break;
      }
      default:
        break;
    }
  },
};
