/**
 * Body schemas shared by the server, channel and role routes (DESIGN §4 "request bodies", "lengths",
 * "colour", "permissions"). Lengths are code points. A permission value is a JSON number or a canonical
 * decimal string (both accepted: a JSON number cannot carry a value above 2^53 exactly, a string can), and
 * may hold only the defined bits; anything else is 400 FailedValidation naming the field.
 */
import { z } from 'zod';
import { AppError } from '../errors.ts';
import { parsePermissionValue } from '../permissions/bits.ts';
import { FieldsChannel, FieldsMember, FieldsRole, FieldsServer } from '../domain/models.ts';
import { codepoints, nameText } from '../text.ts';
import { describeIssues } from './app.ts';
import { setOwn } from '../own.ts';

/** Server, channel, role, category, group and webhook names and nicknames: 1–32 code points, no controls (`nameText`). */
export const name32 = nameText(1, 32);
/** Descriptions: at most 1,024 code points. */
export const description1024 = codepoints(0, 1024);

/** `#rgb` or `#rrggbb` (DESIGN §4 "colour"). */
export const colour = z.string().regex(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, 'must be a hex colour with a leading # (#rgb or #rrggbb)');

/** An id in a path or body (ULIDs are 26 characters; anything much longer cannot exist). */
export const idString = z.string().min(1).max(128);

/** A client-written permission value → bigint (defined bits only). */
export const permissionValue = z.unknown().transform((v, ctx) => {
  try {
    return parsePermissionValue(v);
  } catch (err) {
    if (!(err instanceof AppError) || err.body.type !== 'FailedValidation') throw err;
    ctx.addIssue({ code: 'custom', message: err.body.error });
    return z.NEVER;
  }
});

/** A client-written `{allow, deny}` override → bigints. */
export const permissionOverride = z.strictObject({ allow: permissionValue, deny: permissionValue });

/** Parses an override or fails with 400 FailedValidation naming the field (for bodies checked by hand). */
export function parseOverride(value: unknown, where: string): { allow: bigint; deny: bigint } {
  const r = permissionOverride.safeParse(value);
  if (!r.success) {
    throw new AppError({ type: 'FailedValidation', error: describeIssues(r.error, `body.${where}`) });
  }
  return r.data;
}

/** Voice settings of a channel. */
export const voiceSettings = z.strictObject({ max_users: z.number().int().min(1).max(2 ** 31 - 1).nullish() });

/** `remove` lists. */
export const removeServer = z.array(FieldsServer).max(16);
export const removeChannel = z.array(FieldsChannel).max(16);
export const removeRole = z.array(FieldsRole).max(16);
export const removeMember = z.array(FieldsMember).max(16);

/** Drops null and undefined values (Revolt's `Option` fields: null means "not given"). */
export function defined<T extends Record<string, unknown>>(o: T): { [K in keyof T]?: Exclude<T[K], null | undefined> } {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== null && v !== undefined) setOwn(out, k, v);
  return out as { [K in keyof T]?: Exclude<T[K], null | undefined> };
}
