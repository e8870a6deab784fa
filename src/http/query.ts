/** Query-string value schemas. Clients send booleans as strings (`?remove_all=false` is false). */
import { z } from 'zod';

/** "true"/"false" (also 1/0) → boolean; anything else → 400. */
export const queryBool = z
  .union([z.enum(['true', 'false', '1', '0', 'True', 'False']), z.array(z.string())])
  .transform((v, ctx) => {
    const s = Array.isArray(v) ? v[v.length - 1] : v;
    if (s === 'true' || s === 'True' || s === '1') return true;
    if (s === 'false' || s === 'False' || s === '0') return false;
    ctx.addIssue({ code: 'custom', message: 'expected true or false' });
    return z.NEVER;
  });

/** A decimal integer in a query string. */
export const queryInt = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, 'expected an integer')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
