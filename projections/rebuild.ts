/**
 * Rebuilds every read model from position 0 into a fresh generation, then swaps it in (DESIGN §1):
 * live projectors notice the new generation and continue from its checkpoints; the old generation's keys
 * are deleted afterwards. Readers keep using the old generation until the swap, so a rebuild never shows
 * half-built read models. Client events are not emitted while rebuilding.
 */
import { connectionForKey, connectionsForKeys, createRedis, isCluster, scanKeys, type RedisClient } from '../src/redis.ts';
import type { Logger } from 'pino';
import type { EventStore } from '../src/eventstore/port.ts';
import { controlKeys, generationPrefixes, MAIN_SLOT, partitionKeys, readModelIdentity, SHARDS, slotCheckpointKey } from '../src/readmodel/keys.ts';
import { PartitionRunner } from './runner.ts';
import type { Projection } from './types.ts';

/** Progress of a rebuild. */
export interface RebuildProgress {
  /** Events read so far (summed over partitions' view of the log, divided by the partition count). */
  events: number;
  /** Global position reached by the slowest partition. */
  position: bigint;
  /** Head of the log when the rebuild started. */
  head: bigint | undefined;
}

/** Options of a rebuild. */
export interface RebuildOptions {
  store: EventStore;
  redisUrl: string;
  prefix: string;
  partitions: number;
  projections: readonly Projection[];
  log: Logger;
  onProgress?: (p: RebuildProgress) => void;
  /** Swap the new generation in when done (default true); false leaves it for inspection. */
  swap?: boolean;
  /** Delete the old generation after the swap (default true). */
  deleteOld?: boolean;
  /** Stop at this position instead of the head (for `events state --at`). */
  untilPosition?: bigint;
  /** Resubscriptions allowed per partition after its subscription drops, without progress in between (default 5). */
  maxResubscribes?: number;
  /** Use this prefix for the new generation's keys instead of the live one (for `events state --at`). */
  targetPrefix?: string;
}

/** Result of a rebuild. */
export interface RebuildResult {
  generation: number;
  previous: number | undefined;
  events: number;
  ms: number;
}

/** Deletes every key under a prefix, in batches (on every master of a cluster, one key at a time there). */
export async function deleteKeys(redis: RedisClient, prefix: string): Promise<number> {
  let n = 0;
  // A glob would read the prefix's `{…}` hash tags as character classes: escape them.
  await scanKeys(redis, `${prefix.replace(/[\\*?[\]{}]/g, (c) => `\\${c}`)}*`, async (keys, node) => {
    // One node may hold keys of many slots: UNLINK one by one there (a multi-key UNLINK must stay in a slot).
    if (redis === node) await node.unlink(...keys);
    else for (const k of keys) await node.unlink(k);
    n += keys.length;
  });
  return n;
}

/** Runs a rebuild from zero. */
export async function rebuild(o: RebuildOptions): Promise<RebuildResult> {
  const started = Date.now();
  const prefix = o.targetPrefix ?? o.prefix;
  const ctl = controlKeys(prefix);
  const admin = createRedis(o.redisUrl, { maxRetriesPerRequest: null });
  const conns: RedisClient[] = [];
  try {
    const prevRaw = await admin.get(ctl.generation);
    const previous = prevRaw === null ? undefined : Number(prevRaw);
    const generation = await admin.incr(ctl.generationSeq);
    const head = o.untilPosition ?? (await o.store.headPosition());
    const positions = new Array<bigint>(o.partitions).fill(0n);
    let seen = 0;
    const store = o.untilPosition === undefined ? o.store : boundedStore(o.store, o.untilPosition);
    const runners: PartitionRunner[] = [];
    // A partition whose subscription drops (a KurrentDB node restart, a Postgres failover) resubscribes from
    // its checkpoint; after `maxResubscribes` drops in a row without progress the rebuild fails with one line.
    const maxResubscribes = o.maxResubscribes ?? 5;
    const runPartition = (i: number) =>
      new Promise<void>((resolve, reject) => {
        let drops = 0;
        let settled = false;
        const start = () => {
          // On a cluster: a plain connection to the master of the partition's home slot in the new generation,
          // which ends (and the partition resubscribes on a new one) when that master fails over.
          const cpKey = partitionKeys(prefix, generation, o.partitions, i).checkpoint;
          const plain = { maxRetriesPerRequest: null, noReconnect: true, noResend: true };
          connectionForKey(o.redisUrl, admin, cpKey, isCluster(admin) ? plain : { maxRetriesPerRequest: null })
            .then(async (redis) => {
              conns.push(redis);
              if (!isCluster(admin)) return begin(redis);
              // Each shard and the main slot commit on a plain connection to their slot's master (as the
              // projector's partitions).
              const keys = [...Array.from({ length: SHARDS }, (_, s) => s), MAIN_SLOT].map((s) => slotCheckpointKey(prefix, generation, o.partitions, i, s));
              const { conns: slotRedis, extra } = await connectionsForKeys(admin, keys, redis, plain);
              conns.push(...extra);
              redis.once('end', () => extra.forEach((c) => c.disconnect()));
              begin(redis, slotRedis.slice(0, SHARDS), slotRedis[SHARDS]);
            })
            .catch((err: unknown) => dropped(undefined, 'error', err));
        };
        const dropped = (redis: RedisClient | undefined, reason: 'error' | 'checkpoint-lost', err?: unknown) => {
          if (settled) return;
          const why = err instanceof Error ? err.message : reason;
          if (reason !== 'error' || ++drops > maxResubscribes) {
            settled = true;
            reject(new Error(`rebuild: partition ${i} stopped (${why})${reason === 'error' ? ` after ${drops - 1} resubscriptions` : ''}`));
            return;
          }
          o.log.warn({ partition: i, err: why, attempt: drops }, 'rebuild: the subscription dropped; resubscribing from the checkpoint');
          redis?.disconnect();
          setTimeout(start, Math.min(5000, 200 * 2 ** (drops - 1)));
        };
        const begin = (redis: RedisClient, shardRedis?: RedisClient[], mainRedis?: RedisClient) => {
          const onStop = (reason: 'error' | 'checkpoint-lost', err?: unknown) => dropped(redis, reason, err);
          const runner: PartitionRunner = new PartitionRunner({
            store,
            redis,
            prefix,
            generation,
            partition: i,
            partitions: o.partitions,
            projections: o.projections,
            log: o.log,
            rebuilding: true,
            stopWhenCaughtUp: true,
            batchSize: 2000,
            ...(shardRedis ? { splitCommits: true, shardRedis, ...(mainRedis ? { mainRedis } : {}) } : {}),
            onCommit: (position, _applied, n) => {
              drops = 0;
              positions[i] = position;
              seen += n;
              o.onProgress?.({ events: Math.round(seen / o.partitions), position: positions.reduce((a, b) => (b < a ? b : a)), head });
            },
            onStop,
          });
          runners[i] = runner;
          runner.start().then(
            () =>
              runner.caughtUpPromise.then(() => {
                settled = true;
                resolve();
              }),
            (err: unknown) => void runner.stop().then(() => onStop('error', err)),
          );
        };
        start();
      });
    try {
      await Promise.all(Array.from({ length: o.partitions }, (_, i) => runPartition(i)));
    } finally {
      await Promise.all(runners.map((r) => r?.stop()));
    }
    // The new generation's checkpoints are positions in this store (see Projector: a mismatch rebuilds).
    await admin.hset(ctl.generationStores, String(generation), readModelIdentity(await o.store.identity()));
    if (o.swap !== false) {
      await admin.set(ctl.generation, String(generation));
      await admin.publish(ctl.controlChannel, `generation:${generation}`);
      if (previous !== undefined && previous !== generation && o.deleteOld !== false) {
        // Readers that already hold the old prefix finish their request first.
        await new Promise((r) => setTimeout(r, 500));
        for (const p of generationPrefixes(prefix, previous)) await deleteKeys(admin, p);
        await admin.hdel(ctl.generationStores, String(previous));
      }
    }
    return { generation, previous, events: Math.round(seen / o.partitions), ms: Date.now() - started };
  } finally {
    for (const c of conns) c.disconnect();
    admin.disconnect();
  }
}

/** A read-only view of a store that ends at a position (used to rebuild the state as it was). */
function boundedStore(store: EventStore, until: bigint): EventStore {
  return {
    ...store,
    append: () => Promise.reject(new Error('read-only')),
    appendMany: () => Promise.reject(new Error('read-only')),
    readStream: (s, o) => store.readStream(s, o),
    streamRevision: (s) => store.streamRevision(s),
    readAll: (o) => store.readAll(o),
    headPosition: async () => until,
    identity: () => store.identity(),
    eventIdAt: (p) => (p > until ? Promise.resolve(undefined) : store.eventIdAt(p)),
    stats: () => store.stats(),
    close: async () => {},
    subscribe(opts) {
      let done = false;
      const sub = store.subscribe({
        ...opts,
        onEvents: async (events) => {
          if (done) return;
          const within = events.filter((e) => e.position <= until);
          if (within.length) await opts.onEvents(within);
          if (within.length < events.length) {
            done = true;
            opts.onCaughtUp?.();
          }
        },
        onCaughtUp: () => {
          if (!done) {
            done = true;
            opts.onCaughtUp?.();
          }
        },
      });
      return sub;
    },
  };
}
