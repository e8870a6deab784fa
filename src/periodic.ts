/**
 * A background task run every `intervalMs` in this process (the file sweep, the retention sweep): a run that is
 * still going when the next tick comes is not started twice, a failure is logged and the next tick tries again,
 * and `close()` stops the timer and waits for the run under way. `intervalMs` ≤ 0 turns it off.
 */
export function startPeriodic(intervalMs: number, run: () => Promise<unknown>, onError: (err: Error) => void): { close(): Promise<void> } {
  if (intervalMs <= 0) return { close: async () => {} };
  let running: Promise<unknown> | null = null;
  const timer = setInterval(() => {
    if (running) return;
    running = run()
      .catch(onError)
      .finally(() => (running = null));
  }, intervalMs);
  timer.unref();
  return {
    async close() {
      clearInterval(timer);
      await running;
    },
  };
}
