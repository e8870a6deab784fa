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
