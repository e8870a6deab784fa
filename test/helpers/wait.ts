/** Polling for tests: wait for a condition with a deadline, so a missing delivery fails instead of hanging. */

/**
 * Resolves with the first truthy value of `cond()` (polled every `everyMs`; it may be async); rejects with
 * `timed out waiting for <what>` after `timeoutMs`.
 */
export async function until<T>(
  what: string,
  cond: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  timeoutMs = 20_000,
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
