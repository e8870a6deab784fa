/** Bodies of the settings routes (OptionsFetchSettings; the set body is a map of key → string value). */
import { z } from 'zod';
import { SETTINGS_LIMITS } from '../../../domain/settings/setSettings.ts';
import { codepoints } from '../../../text.ts';

/** A settings key. */
const settingsKey = codepoints(1, SETTINGS_LIMITS.keyLength);

/** `POST /sync/settings/fetch` body. */
export const FetchSettingsBody = z.strictObject({ keys: z.array(settingsKey).max(SETTINGS_LIMITS.keys) });
/** A parsed fetch body. */
export type FetchSettingsBody = z.infer<typeof FetchSettingsBody>;

/**
 * `POST /sync/settings/set` body: an object of key → string, turned into pairs (its keys are the client's
 * and never index a plain object). Values of at most `valueBytes` UTF-8 bytes. The Stoat web client sends
 * its timestamp in the body (`{timestamp: <ms>, ordering: "…"}`), not the query: a numeric `timestamp` is
 * taken as the write's timestamp (the query's wins when both are given), never stored as a setting.
 */
export const SetSettingsBody = z.unknown().transform((o, ctx) => {
    const pairs: Array<[string, string]> = [];
    let timestamp: number | undefined;
    if (typeof o !== 'object' || o === null || Array.isArray(o)) {
      ctx.addIssue({ code: 'custom', message: 'expected an object of strings' });
      return { pairs, timestamp };
    }
    // The parsed JSON itself: its own keys, `__proto__` included, never assigned into another object.
    for (const [k, v] of Object.entries(o)) {
      if (k === 'timestamp' && typeof v === 'number') {
        if (Number.isSafeInteger(v)) timestamp = v;
        else ctx.addIssue({ code: 'custom', message: 'expected an integer', path: [k] });
      } else if (!settingsKey.safeParse(k).success) ctx.addIssue({ code: 'custom', message: `keys are 1 to ${SETTINGS_LIMITS.keyLength} characters`, path: [k.slice(0, 40)] });
      else if (typeof v !== 'string') ctx.addIssue({ code: 'custom', message: 'expected a string', path: [k] });
      else if (Buffer.byteLength(v, 'utf8') > SETTINGS_LIMITS.valueBytes) ctx.addIssue({ code: 'custom', message: `longer than ${SETTINGS_LIMITS.valueBytes} bytes`, path: [k] });
      else pairs.push([k, v]);
    }
    if (pairs.length > SETTINGS_LIMITS.keys) ctx.addIssue({ code: 'custom', message: `at most ${SETTINGS_LIMITS.keys} keys` });
    return { pairs, timestamp };
});

/** `POST /sync/settings/set` query: `timestamp` in milliseconds (a signed 64-bit integer in Stoat; here a safe integer). */
export const SetSettingsQuery = z.object({
  timestamp: z
    .string()
    .regex(/^-?\d{1,16}$/, 'expected an integer')
    .transform(Number)
    .pipe(z.number().int().refine((n) => Number.isSafeInteger(n), 'out of range'))
    .optional(),
});
