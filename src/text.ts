/** Text rules: lengths are counted in Unicode code points (DESIGN §4 "lengths"). */
import { z } from 'zod';

/** Number of code points in a string. */
export function codepointLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** A string of min..max code points. */
export function codepoints(min: number, max: number) {
  return z.string().refine((s) => {
    const n = codepointLength(s);
    return n >= min && n <= max;
  }, { message: min > 0 ? `must be ${min}–${max} characters` : `must be at most ${max} characters` });
}

/**
 * What no name may hold (issue 35): control characters (C0, DEL, C1), lone surrogates, the bidirectional
 * controls (ALM, LRM, RLM, the embeddings and overrides U+202A–202E, the isolates U+2066–2069), the line and
 * paragraph separators, the BOM, the interlinear annotation controls and the noncharacters. Joiners (ZWJ,
 * ZWNJ) stay allowed: emoji sequences and several scripts need them.
 */
const UNRENDERABLE = /[\p{Cc}\p{Cs}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\u2028\u2029\uFEFF\uFFF9-\uFFFB\uFDD0-\uFDEF\uFFFE\uFFFF]/u;

/** Whether a name holds none of the characters `UNRENDERABLE` lists. */
export function renderableName(s: string): boolean {
  return !UNRENDERABLE.test(s);
}

/** The message of a name refused by `renderableName`. */
export const UNRENDERABLE_NAME = 'must not contain control characters, lone surrogates or bidirectional controls';

/**
 * A name of min..max code points without control characters, lone surrogates or bidi controls: the one
 * validator of every name field (users' display names, servers, channels, categories, roles, groups,
 * webhooks, nicknames, masquerades; usernames and bot names check `renderableName` in `normaliseUsername`).
 */
export function nameText(min: number, max: number) {
  return codepoints(min, max).refine(renderableName, { message: UNRENDERABLE_NAME });
}
