/** Polling for tests: wait for a condition with a deadline, so a missing delivery fails instead of hanging. */

/**
 * How long a test waits by default for a state that becomes true by itself (a delivery, a projection, a
 * registration). It bounds a wait, it is not a speed rule: on a 2-core machine loaded by other work a
 * delivery took over 20 s (issue 40), and a wait only ends early when the state arrives.
 */
export const WAIT_MS = 60_000;

/**
 * Resolves with the first truthy value of `cond()` (polled every `everyMs`; it may be async); rejects with
 * `timed out waiting for <what>` after `timeoutMs`.
 */
export async function until<T>(
  what: string,
  cond: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  timeoutMs = WAIT_MS,
  everyMs = 20,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
