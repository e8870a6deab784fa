/**
 * Poison events (issue 17 item 13). When a projection throws on an event, that event would stop its
 * partition at the same checkpoint forever. The runner instead quarantines it: the event's writes are
 * dropped (the batch is re-applied without it), it is logged, recorded durably in the generation's
 * `quarantine:<n>:<i>` hash (in the same MULTI as the checkpoint that moves past it) and announced on
 * `quarantineEvents`; the partition goes on projecting. A rebuild meets the same event, skips it and records
 * it again in its own generation. Storage failures (Redis unreachable) are not poison: they stop the
 * partition as before, to be restarted.
 *
 * For metrics and health: `quarantinedCount(redis, prefix, partitions)` (durable, the current generation)
 * and `quarantineEvents` (`'quarantined'`, in the process running the partition).
 */
import { EventEmitter } from 'node:events';
import type { RedisClient as Redis } from '../src/redis.ts';
import { controlKeys, partitionKeys } from '../src/readmodel/keys.ts';

/** A quarantined event as recorded. */
export interface QuarantinedEvent {
  eventId: string;
  /** Global position (decimal). */
  position: string;
  type: string;
  stream: string;
  partition: number;
  /** The projection that threw. */
  projection: string;
  /** The error's message (never the event data). */
  error: string;
  /** The event's time (ISO; not the time of quarantine, so rebuilds record the same entry). */
  at: string;
}

/** Emits `'quarantined'` with a `QuarantinedEvent` whenever a runner of this process quarantines one. */
export const quarantineEvents = new EventEmitter();
quarantineEvents.setMaxListeners(0);

/** Events quarantined by this process since it started (every generation, rebuilds included). */
let quarantinedHere = 0;
quarantineEvents.on('quarantined', () => quarantinedHere++);

/** Events quarantined by runners of this process since it started. */
export function quarantinedInProcess(): number {
  return quarantinedHere;
}

/** Events quarantined in the current read-model generation, over every partition of `partitions`. */
export async function quarantinedCount(redis: Redis, prefix: string, partitions: number): Promise<number> {
  const gen = await redis.get(controlKeys(prefix).generation);
  if (gen === null) return 0;
  const counts = await Promise.all(Array.from({ length: partitions }, (_, i) => redis.hlen(partitionKeys(prefix, Number(gen), partitions, i).quarantine)));
  return counts.reduce((a, b) => a + b, 0);
}

/** The quarantined events of the current generation, oldest first. */
export async function quarantinedEvents(redis: Redis, prefix: string, partitions: number): Promise<QuarantinedEvent[]> {
  const gen = await redis.get(controlKeys(prefix).generation);
  if (gen === null) return [];
  const out: QuarantinedEvent[] = [];
  for (let i = 0; i < partitions; i++) {
    for (const v of Object.values(await redis.hgetall(partitionKeys(prefix, Number(gen), partitions, i).quarantine))) out.push(JSON.parse(v) as QuarantinedEvent);
  }
  return out.sort((a, b) => (BigInt(a.position) < BigInt(b.position) ? -1 : 1));
}
