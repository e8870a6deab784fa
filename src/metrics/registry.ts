/**
 * Prometheus metrics (prom-client). One registry per process; every role records into it what it owns,
 * and `GET /metrics` on `METRICS_PORT` (src/metrics/server.ts) exposes it. Labels are bounded: route
 * patterns (never raw paths), the four bucket names, partition numbers, upload tags, queue names.
 *
 * Hot paths call the small functions below: an HTTP request costs one timer, a Map lookup of its
 * pre-labelled child and one `observe`; an append one timer and one `inc`.
 */
import client from 'prom-client';
import type { EventStore } from '../eventstore/port.ts';

/** The registry `GET /metrics` serves. */
export const registry = new client.Registry();

let defaultsStarted = false;
/** Node's default metrics (event loop lag, heap, GC, handles, CPU), once per process. */
export function startDefaultMetrics(): void {
  if (defaultsStarted) return;
  defaultsStarted = true;
  client.collectDefaultMetrics({ register: registry });
}

// ---------------------------------------------------------------------------------------------- HTTP

/** Request durations per app (`api`, `media`), method, route pattern and status. */
export const httpDuration = new client.Histogram({
  name: 'http_request_duration_seconds',
  help: 'HTTP request duration by app, method, route pattern (unmatched paths: "*") and status',
  labelNames: ['app', 'method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

/** Requests being handled now, per app. */
export const httpInFlight = new client.Gauge({
  name: 'http_requests_in_flight',
  help: 'HTTP requests being handled now',
  labelNames: ['app'] as const,
  registers: [registry],
});

/** Methods as labels: anything else (a client can send any token) counts as OTHER. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
type Child = client.Histogram.Internal<'app' | 'method' | 'route' | 'status'>;
/** app → method → route → status → child: lookups without building a key string per request. */
const httpChildren = new Map<string, Map<string, Map<string, Map<number, Child>>>>();

/** Records one finished request. `route` must be a registered pattern, `*` or another fixed string. */
export function observeHttp(app: string, method: string, route: string, status: number, seconds: number): void {
  const m = METHODS.has(method) ? method : 'OTHER';
  let byMethod = httpChildren.get(app);
  if (!byMethod) httpChildren.set(app, (byMethod = new Map()));
  let byRoute = byMethod.get(m);
  if (!byRoute) byMethod.set(m, (byRoute = new Map()));
  let byStatus = byRoute.get(route);
  if (!byStatus) byRoute.set(route, (byStatus = new Map()));
  let child = byStatus.get(status);
  if (!child) byStatus.set(status, (child = httpDuration.labels(app, m, route, String(status))));
  child.observe(seconds);
}

// ----------------------------------------------------------------------------------------- rate limits

/** Requests refused with 429, per bucket. */
export const rateLimitRefusals = new client.Counter({
  name: 'ratelimit_refusals_total',
  help: 'Requests refused with 429, per rate-limit bucket',
  labelNames: ['bucket'] as const,
  registers: [registry],
});

/** Counts one 429 of a bucket. */
export function countRefusal(bucket: string): void {
  rateLimitRefusals.labels(bucket).inc();
}

// ----------------------------------------------------------------------------------------- event store

/** Append latency (one `append` or `appendMany`, from call to durable commit). */
export const appendDuration = new client.Histogram({
  name: 'eventstore_append_duration_seconds',
  help: 'Event store append latency (call to durable commit), by outcome',
  labelNames: ['outcome'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
});

/** Events written. */
export const eventsAppended = new client.Counter({
  name: 'eventstore_events_appended_total',
  help: 'Events appended to the event store',
  registers: [registry],
});

/**
 * The store with its appends timed and counted. Everything else passes through unchanged (the object is
 * the store itself with two methods wrapped, so adapter-specific methods keep working).
 */
export function instrumentStore<S extends EventStore>(store: S): S {
  if ((store as { __metrics?: boolean }).__metrics) return store;
  const append = store.append.bind(store);
  const appendMany = store.appendMany.bind(store);
  const timed = async <T>(events: number, run: () => Promise<T>): Promise<T> => {
    const end = appendDuration.startTimer();
    try {
      const r = await run();
      end({ outcome: 'ok' });
      eventsAppended.inc(events);
      return r;
    } catch (err) {
      end({ outcome: 'error' });
      throw err;
    }
  };
  const wrapped: Pick<EventStore, 'append' | 'appendMany'> = {
    append: (stream, events, expected) => timed(events.length, () => append(stream, events, expected)),
    appendMany: (writes) => timed(writes.reduce((n, w) => n + w.events.length, 0), () => appendMany(writes)),
  };
  // A proxy, so every other method runs on the store itself (its own `this`), and instanceof still holds.
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, key) {
      if (key === '__metrics') return true;
      if (key === 'append' || key === 'appendMany') return wrapped[key];
      const v = Reflect.get(target, key, target) as unknown;
      if (typeof v !== 'function') return v;
      let b = bound.get(key);
      if (b === undefined) bound.set(key, (b = (v as (...a: unknown[]) => unknown).bind(target)));
      return b;
    },
  });
}

// ------------------------------------------------------------------------------------------ projector

/** Events applied per committed batch, per partition. */
export const projectorBatch = new client.Histogram({
  name: 'projector_batch_events',
  help: 'Events applied per committed projector batch, per partition',
  labelNames: ['partition'] as const,
  buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 5000],
  registers: [registry],
});

/** Events applied, per partition. */
export const projectorApplied = new client.Counter({
  name: 'projector_events_applied_total',
  help: 'Events applied to read models, per partition',
  labelNames: ['partition'] as const,
  registers: [registry],
});

/** Poison events set aside by a partition (see `countQuarantinedEvent`). */
export const projectorQuarantined = new client.Counter({
  name: 'projector_quarantined_events_total',
  help: 'Events a projector partition could not apply and quarantined',
  labelNames: ['partition'] as const,
  registers: [registry],
});

/** Records a committed batch of a partition (called by the runner after its EXEC). */
export function observeProjectorBatch(partition: number, applied: number): void {
  const p = String(partition);
  projectorBatch.labels(p).observe(applied);
  if (applied > 0) projectorApplied.labels(p).inc(applied);
}

/** Counts one quarantined (poison) event of a partition. Call once per event set aside. */
export function countQuarantinedEvent(partition: number): void {
  projectorQuarantined.labels(String(partition)).inc();
}

/** What the lag gauges read from a running projector at scrape time. */
export interface LagSource {
  store: EventStore;
  /** The partitions this process runs now, with their committed position and rebuilding flag. */
  partitions(): Array<{ partition: number; position: bigint | undefined; rebuilding: boolean }>;
}
const lagSources = new Set<LagSource>();

/** Registers a projector for the lag and rebuild gauges; returns the function that unregisters it. */
export function trackProjector(source: LagSource): () => void {
  lagSources.add(source);
  return () => lagSources.delete(source);
}

/** A gauge per partition filled at scrape time from every registered projector. */
function partitionGauge(name: string, help: string, value: (head: bigint | undefined, p: ReturnType<LagSource['partitions']>[number], s: LagSource) => Promise<number>) {
  return new client.Gauge({
    name,
    help,
    labelNames: ['partition'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const s of lagSources) {
        const head = await s.store.headPosition();
        for (const p of s.partitions()) this.labels(String(p.partition)).set(await value(head, p, s));
      }
    },
  });
}

/** Log positions between a partition's checkpoint and the head (events, on SQLite and PostgreSQL). */
export const projectorLagEvents = partitionGauge(
  'projector_lag_events',
  'Events between a partition checkpoint and the log head (KurrentDB: commit-position difference)',
  async (head, p) => (head === undefined ? 0 : Number(head - (p.position ?? 0n))),
);

/** Age of the oldest event the partition has not passed yet (0 when caught up). */
export const projectorLagSeconds = partitionGauge(
  'projector_lag_seconds',
  'Seconds between now and the oldest event a partition has not projected yet (0 when caught up)',
  async (head, p, s) => {
    if (head === undefined || (p.position !== undefined && p.position >= head)) return 0;
    for await (const e of s.store.readAll({ ...(p.position !== undefined ? { after: p.position } : {}), maxCount: 1 })) {
      return Math.max(0, (Date.now() - Date.parse(e.metadata.at)) / 1000);
    }
    return 0;
  },
);

/** Share of the log a rebuilding partition has passed (1 when not rebuilding). */
export const projectorRebuildProgress = partitionGauge(
  'projector_rebuild_progress_ratio',
  'Share of the log a rebuilding partition has projected (1 when it is not rebuilding)',
  async (head, p) => {
    if (!p.rebuilding) return 1;
    if (head === undefined || head === 0n) return 1;
    return Number(p.position ?? 0n) / Number(head);
  },
);

// ------------------------------------------------------------------------------------------ queues

/** Something with BullMQ-style job counts (a Queue). */
export interface CountableQueue {
  getJobCounts(...types: string[]): Promise<Record<string, number>>;
}
const queues = new Map<string, CountableQueue>();

/** Registers a queue for the depth gauge under a tag; returns the function that unregisters it. */
export function trackQueue(tag: string, queue: CountableQueue): () => void {
  queues.set(tag, queue);
  return () => {
    if (queues.get(tag) === queue) queues.delete(tag);
  };
}

/** Jobs waiting, delayed or running, per queue tag and state. */
export const queueDepth = new client.Gauge({
  name: 'queue_jobs',
  help: 'BullMQ jobs per queue tag and state (waiting, active, delayed, prioritized, failed)',
  labelNames: ['queue', 'state'] as const,
  registers: [registry],
  async collect() {
    this.reset();
    for (const [tag, q] of queues) {
      try {
        const counts = await q.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed');
        for (const [state, n] of Object.entries(counts)) this.labels(tag, state).set(n);
      } catch {
        /* Redis unavailable: no sample for this queue */
      }
    }
  },
});

/** Job durations per queue and outcome. */
export const jobDuration = new client.Histogram({
  name: 'queue_job_duration_seconds',
  help: 'BullMQ job durations per queue tag and outcome (completed, failed)',
  labelNames: ['queue', 'outcome'] as const,
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [registry],
});

/** Failed job attempts per queue. */
export const jobFailures = new client.Counter({
  name: 'queue_job_failures_total',
  help: 'Failed BullMQ job attempts per queue tag',
  labelNames: ['queue'] as const,
  registers: [registry],
});

/** Wraps a job processor: times every attempt and counts failures under the queue's tag. */
export function timedJob<A extends unknown[], R>(queue: string, run: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args: A) => {
    const end = jobDuration.startTimer({ queue });
    try {
      const r = await run(...args);
      end({ outcome: 'completed' });
      return r;
    } catch (err) {
      end({ outcome: 'failed' });
      jobFailures.labels(queue).inc();
      throw err;
    }
  };
}

// ------------------------------------------------------------------------------------------ gateway

/** Open WebSockets of this process. */
export const gatewaySockets = new client.Gauge({
  name: 'gateway_open_sockets',
  help: 'Open events-gateway WebSockets in this process',
  registers: [registry],
});

/** Events sent to sockets (rate() of it is events delivered per second). */
export const gatewayDelivered = new client.Counter({
  name: 'gateway_events_delivered_total',
  help: 'Client events sent to gateway sockets',
  registers: [registry],
});

/** Sockets cut because their unsent data passed GATEWAY_MAX_BUFFERED_BYTES. */
export const gatewaySlowDropped = new client.Counter({
  name: 'gateway_slow_sockets_dropped_total',
  help: 'Gateway sockets cut for being too slow (unsent bytes over GATEWAY_MAX_BUFFERED_BYTES)',
  registers: [registry],
});

// ------------------------------------------------------------------------------------------ fact cache

/** What the fact-cache gauges read at scrape time. */
export interface FactCacheSource {
  size: number;
  heldBytes: number;
  stats: { hits: number; misses: number; invalidations: number; flushes: number };
}
const factCaches = new Set<FactCacheSource>();

/** Registers an API process's fact cache for its gauges; returns the function that unregisters it. */
export function trackFactCache(cache: FactCacheSource): () => void {
  factCaches.add(cache);
  return () => factCaches.delete(cache);
}

/** The fact cache's counters and size (src/readmodel/factCache.ts), summed over this process's caches. */
export const factCacheGauge = new client.Gauge({
  name: 'fact_cache',
  help: 'API fact cache: hits, misses, invalidated keys and flushes since start, entries and bytes held now',
  labelNames: ['what'] as const,
  registers: [registry],
  collect() {
    this.reset();
    const sum = { hits: 0, misses: 0, invalidations: 0, flushes: 0, entries: 0, bytes: 0 };
    for (const c of factCaches) {
      sum.hits += c.stats.hits;
      sum.misses += c.stats.misses;
      sum.invalidations += c.stats.invalidations;
      sum.flushes += c.stats.flushes;
      sum.entries += c.size;
      sum.bytes += c.heldBytes;
    }
    for (const [what, v] of Object.entries(sum)) this.labels(what).set(v);
  },
});
