/** A progress bar for long operator runs (events, events/s, ETA) on stderr; plain lines when not a TTY. */
import cliProgress from 'cli-progress';

/** A progress reporter. */
export interface Progress {
  update(done: number): void;
  stop(): void;
}

/** Creates a progress bar for `total` items (unknown total: a counter). */
export function progressBar(label: string, total: number | undefined): Progress {
  const started = Date.now();
  if (!process.stderr.isTTY) {
    let last = 0;
    return {
      update(done) {
        const now = Date.now();
        if (now - last < 1000) return;
        last = now;
        const rate = done / Math.max(0.001, (now - started) / 1000);
        const eta = total ? Math.max(0, (total - done) / Math.max(rate, 1)) : undefined;
        process.stderr.write(`${label}: ${done}${total ? `/${total}` : ''} events, ${Math.round(rate)} events/s${eta !== undefined ? `, ETA ${Math.round(eta)} s` : ''}\n`);
      },
      stop() {},
    };
  }
  const bar = new cliProgress.SingleBar(
    { format: `${label} [{bar}] {percentage}% | {value}/{total} events | {speed} events/s | ETA {eta_formatted}`, hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total ?? 0, 0, { speed: 0 });
  return {
    update(done) {
      const speed = Math.round(done / Math.max(0.001, (Date.now() - started) / 1000));
      if (total === undefined) bar.setTotal(done);
      bar.update(done, { speed });
    },
    stop() {
      bar.stop();
    },
  };
}
