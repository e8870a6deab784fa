/**
 * Events of legal holds (issue 39 part 2): an instance admin places a hold on a server, a channel or a user, and
 * lifts it later. Every hold of the instance lives in one stream, `holds` (scope `instance`), revision-checked:
 * holds are few, and one stream lets the personal-data boundary (src/personal/store.ts) and the command line
 * fold the standing holds from the log alone, with no read model (a rebuild must never see "no hold").
 */
import { z } from 'zod';
import { isUlid } from '../../ids.ts';

/** The stream of every hold of the instance. */
export const HOLDS_STREAM = 'holds';

/** A hold's name: 1–100 code points, not blank, no control characters. */
export const HoldName = z
  .string()
  .refine((s) => s.trim().length > 0 && [...s].length <= 100 && !/[\u0000-\u001f\u007f]/.test(s), 'a name of 1–100 characters');

/** A hold's reason (or a lift's): 1–512 code points, not blank. */
export const HoldReason = z.string().refine((s) => s.trim().length > 0 && [...s].length <= 512, 'a reason of 1–512 characters');

/** What a hold covers: every message of a server, of a channel (a DM or group too), or by a user, and that user's personal data. */
export const HoldTarget = z.object({ type: z.enum(['server', 'channel', 'user']), id: z.string().refine(isUlid, 'an id') }).strict();
/** A hold's target. */
export type HoldTarget = z.infer<typeof HoldTarget>;

export const holdEvents = {
  /** An instance admin (or the operator, actor null) placed a legal hold. */
  HoldPlaced: z.object({ id: z.string(), name: z.string(), reason: z.string(), target: HoldTarget }),
  /** The hold was lifted (its target is repeated so a reader of this one event knows whose data it released). */
  HoldLifted: z.object({ id: z.string(), target: HoldTarget, reason: z.string().nullable() }),
};
