/**
 * Benchmark plumbing. Every figure is measured next to the ceiling it is compared with, in the same run
 * (DESIGN: speed is shown by benchmarks, never by timed tests). The machine is small and noisy: runs
 * are repeated and medians reported.
 */

/** One measured figure. */
export interface BenchResult {
  /** Short id, printed as `bench <name> ratio=<x.xx>`. */
  name: string;
  /** What is measured, e.g. "appends/s, 50 writers". */
  figure: string;
  /** Median of the runs of the figure. */
  median: number;
  unit: string;
  p50?: number;
  p99?: number;
  /** The ceiling measured in the same run, and what it is. */
  ceiling: number;
  ceilingLabel: string;
  /** figure / ceiling when higher is better (throughput); ceiling / figure when lower is better (latency). */
  ratio: number;
  notes?: string;
}

/** A benchmark module. */
export interface Bench {
  name: string;
  description: string;
  run(ctx: BenchContext): Promise<BenchResult[]>;
}

/** What a benchmark gets from the runner. */
export interface BenchContext {
  /** A scratch directory of this benchmark, removed after it. */
  tmpDir: string;
  /** A scratch directory kept for the whole run, for fixtures several benchmarks share (bench/seeded.ts). */
  sharedDir: string;
  /** Registers a clean-up run once every benchmark has finished (a shared fixture's Redis keys). */
  atEnd(fn: () => Promise<void>): void;
  /** Redis for the benchmark (its own prefix is up to the benchmark). */
  redisUrl: string;
  /** Repetitions for medians (default 3; `--quick` lowers it). */
  repeats: number;
  quick: boolean;
  log(msg: string): void;
}

/** Median of numbers. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** The p-th percentile (0–100) of numbers. */
export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[i]!;
}

/** Runs fn `repeats` times and returns the results. */
export async function repeat<T>(repeats: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < repeats; i++) out.push(await fn(i));
  return out;
}

/** Latency percentiles of calls made one after another, in ms (fractions kept). */
export interface Latency {
  p50: number;
  p99: number;
  n: number;
}

/** Times `n` calls of `fn` one after another (`fn(i)` for the i-th) and returns the p50 and p99 in ms. */
export async function latencies(n: number, fn: (i: number) => unknown): Promise<Latency> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn(i);
    ms.push(performance.now() - t0);
  }
  return { p50: percentile(ms, 50), p99: percentile(ms, 99), n };
}

/** Milliseconds for a table cell: µs below 1 ms. */
export function fmtMs(ms: number): string {
  return ms < 1 ? `${Math.round(ms * 1000)} µs` : `${ms.toFixed(ms < 10 ? 2 : 1)} ms`;
}

/** Runs `fn` over `items`, `n` at a time. */
export async function inFlight<T>(items: readonly T[], n: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}
