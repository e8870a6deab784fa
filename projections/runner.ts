/**
 * Runs the projections of one partition in one generation: subscribes to the event store from the
 * partition's checkpoint, applies the events whose scope hashes to the partition, and commits every
 * write of a batch with the new checkpoint in one MULTI guarded by WATCH on the checkpoint key (in the
 * partition's home slot, `partitionKeys`; on a cluster, one MULTI per slot: `commitSplit`).
 *
 * Exactly once: the checkpoint is read after WATCH and compared with the runner's own; if another
 * process advanced it (a partition taken over) or it vanished (Redis flushed), nothing of the batch is
 * committed and the runner stops with a `CheckpointLost` reason so its owner can decide what to do.
 */
import type { RedisClient } from '../src/redis.ts';
import type { Logger } from 'pino';
import type { EventStore, RecordedEvent, Subscription } from '../src/eventstore/port.ts';
import { EVENT_SCHEMAS, isKnownEventType, upcast } from '../src/domain/events.ts';
import { partitionOf } from '../src/partition.ts';
import { controlKeys, generationPrefix, HOME_SLOT, liveShardOf, MAIN_SLOT, partitionKeys, SHARDS, slotCheckpointKey } from '../src/readmodel/keys.ts';
import { BatchTx, ValueCache, type Emitted, type ShardRouting } from './tx.ts';
import type { Invalidation } from '../src/readmodel/factCache.ts';
import type { Projection } from './types.ts';
import { quarantineEvents, type QuarantinedEvent } from './quarantine.ts';
import { isStorageUnavailable } from '../src/storageErrors.ts';
import { countQuarantinedEvent, observeProjectorBatch } from '../src/metrics/registry.ts';

/**
 * Runs a MULTI guarded by WATCH on a checkpoint: false when the WATCH aborted it (another runner moved the
 * checkpoint: nothing was written), the first error reply thrown (a storage error: the batch is retried).
 */
async function execWatched(m: { exec(): Promise<Array<[Error | null, unknown]> | null> }): Promise<boolean> {
  const result = await m.exec();
  if (result === null) return false;
  const failed = result.find(([err]) => err);
  if (failed) throw failed[0];
  return true;
}

/** One buffered Redis command of a batch (`BatchTx.ops`). */
type Op = [string, ...Array<string | number>];

/** Why a runner stopped on its own. */
export type StopReason = 'checkpoint-lost' | 'error';

/** Options of a partition runner. */
export interface PartitionRunnerOptions {
  store: EventStore;
  /**
   * A connection of its own: WATCH is per connection. On a cluster, a plain connection to the master of the
   * partition's home slot (`connectionForKey` of its checkpoint, `partitionKeys`).
   */
  redis: RedisClient;
  /**
   * On a cluster: where the client events go, after EXEC (their stream is in another slot than the
   * generation). Unset: inside the MULTI, on `redis`.
   */
  eventsRedis?: RedisClient;
  /**
   * How many live shards the client events spread over (`liveShardCount`, src/readmodel/keys.ts): on a
   * cluster several (appended after EXEC on `eventsRedis`), otherwise 1 (the partition's one stream). Default 1.
   */
  liveShards?: number;
  prefix: string;
  generation: number;
  partition: number;
  partitions: number;
  projections: readonly Projection[];
  log: Logger;
  /** Rebuilding from zero: client events are not emitted. The runner switches to live once caught up. */
  rebuilding: boolean;
  /** Stop once caught up (the rebuild tool); otherwise keep following live events. */
  stopWhenCaughtUp?: boolean;
  /** Events per subscription batch (default 500). */
  batchSize?: number;
  /** Called after each commit. */
  onCommit?: (position: bigint, applied: number, seen: number) => void;
  /** Called when the runner stops on its own. */
  onStop?: (reason: StopReason, err?: unknown) => void;
  /** Injected fault for tests: runs after the batch is applied in memory, before EXEC. */
  beforeExec?: () => Promise<void> | void;
  /** Maximum MULTI size before the batch is split (commands). */
  maxOps?: number;
  /**
   * Commit the home slot, the main slot and each shard (`SHARDS`, src/readmodel/keys.ts) in MULTIs of their own,
   * each with its own checkpoint: what a cluster needs (a MULTI stays in one slot). Set on a cluster; on one
   * Redis every write of a batch commits in one MULTI unless a test sets it.
   */
  splitCommits?: boolean;
  /** With `splitCommits`: the connection of each shard (plain, to the master of its slot). Unset: `redis`. */
  shardRedis?: readonly RedisClient[];
  /** With `splitCommits`: the connection of the generation's main slot (plain, to its master). Unset: `redis`. */
  mainRedis?: RedisClient;
  /** Injected fault for tests: with `splitCommits`, runs after the home slot's EXEC, before the main slot's. */
  afterHomeExec?: () => Promise<void> | void;
  /** Injected fault for tests: with `splitCommits`, runs after the main slot's EXEC (if any), before the shards'. */
  afterMainExec?: () => Promise<void> | void;
}

/**
 * Appends a committed batch's client events to partition `partition`'s streams, after its EXEC (on a cluster the
 * streams are in other slots than the batch). With one live shard: the partition's one stream. With several
 * (`liveShardCount`, src/readmodel/keys.ts): an event of a channel goes to its channel's live shard, and any other
 * event to every live shard, marked `b` = `<generation>.<position>.<index in the batch>` (increasing within the
 * partition's generation; a log that went back in time starts a new generation) so that a reader hands over its first copy only (src/gateway/streams.ts); one pipeline per live shard (a pipeline
 * stays in one slot), in parallel. Rejects when an append failed (the caller logs it: live delivery only).
 */
export async function appendClientEvents(
  conn: RedisClient,
  o: { prefix: string; generation: number; partitions: number; partition: number; liveShards: number },
  emitted: readonly Emitted[],
  position: bigint,
): Promise<void> {
  const ctl = controlKeys(o.prefix);
  if (o.liveShards <= 1) {
    const p = conn.pipeline();
    const key = ctl.clientEvents(o.partitions, o.partition);
    for (const ev of emitted) p.xadd(key, 'MAXLEN', '~', '10000', '*', 'e', JSON.stringify(ev));
    await p.exec();
    return;
  }
  // Each live shard's stream holds about a live shard's share of the one stream's 10,000 entries, at least 1,000.
  const maxLen = String(Math.max(1000, Math.ceil(10_000 / o.liveShards)));
  const byShard = new Map<number, string[][]>();
  const add = (j: number, fields: string[]) => {
    const list = byShard.get(j);
    if (list) list.push(fields);
    else byShard.set(j, [fields]);
  };
  emitted.forEach((ev, k) => {
    const j = liveShardOf(ev.route, o.liveShards);
    const text = JSON.stringify(ev);
    if (j >= 0) add(j, ['e', text]);
    else for (let all = 0; all < o.liveShards; all++) add(all, ['e', text, 'b', `${o.generation}.${position}.${k}`]);
  });
  await Promise.all(
    [...byShard].map(async ([j, entries]) => {
      const key = ctl.clientEvents(o.partitions, o.partition, j, o.liveShards);
      const p = conn.pipeline();
      for (const fields of entries) p.xadd(key, 'MAXLEN', '~', maxLen, '*', ...fields);
      const res = await p.exec();
      const err = res?.find(([e]) => e)?.[0];
      if (err) throw err;
    }),
  );
}

/**
 * The spread record (`genKeys.spread`): batch `(f, t]` is committed in the home slot, maybe not yet in the
 * secondary slots `v` (shards, and `MAIN_SLOT` for the main slot), whose commands are in `genKeys.redo`.
 */
interface SpreadRecord {
  f: string | null;
  t: string;
  v: number[];
}

/** One partition's projector in one generation. */
export class PartitionRunner {
  private readonly o: PartitionRunnerOptions;
  private readonly keyPrefix: string;
  private readonly cpKey: string;
  private readonly cpEventKey: string;
  private readonly readyKey: string;
  private readonly eventsKey: string;
  private readonly invKey: string;
  private readonly spreadKey: string;
  private readonly quarantineKey: string;
  private readonly redoKey: string;
  /**
   * With `splitCommits`: the partition's checkpoint in each secondary slot, a shard or `MAIN_SLOT` (absent: it
   * never wrote there).
   */
  private readonly shardCps = new Map<number, bigint>();
  /** With `splitCommits`: the spread record in Redis (JSON as written), while one may be there. */
  private spread: string | undefined;
  private readonly routing: ShardRouting;
  private readonly cache = new ValueCache();
  private readonly byType = new Map<string, Projection[]>();
  private checkpoint: bigint | undefined;
  private checkpointEvent: string | undefined;
  private sub: Subscription | undefined;
  private stopped = false;
  private caughtUp = false;
  private rebuilding: boolean;
  private caughtUpResolve!: () => void;
  /** Resolves once the runner has delivered everything that existed when it started. */
  readonly caughtUpPromise: Promise<void>;

  constructor(o: PartitionRunnerOptions) {
    this.o = o;
    this.rebuilding = o.rebuilding;
    this.keyPrefix = generationPrefix(o.prefix, o.generation);
    const home = partitionKeys(o.prefix, o.generation, o.partitions, o.partition);
    this.cpKey = home.checkpoint;
    this.cpEventKey = home.checkpointEvent;
    this.readyKey = home.caughtUp;
    this.spreadKey = home.spread;
    this.quarantineKey = home.quarantine;
    this.redoKey = home.redo;
    this.eventsKey = controlKeys(o.prefix).clientEvents(o.partitions, o.partition);
    this.invKey = controlKeys(o.prefix).invalidations(o.partitions, o.partition);
    // Where each key of a batch lives. Without split commits everything is one MULTI: no slot checkpoints,
    // and no write is ever dropped (the runner resumes from its one checkpoint).
    this.routing = {
      prefix: o.prefix,
      generation: o.generation,
      conn: (shard) => (shard === MAIN_SLOT ? (o.mainRedis ?? o.redis) : shard < 0 || !o.shardRedis ? o.redis : o.shardRedis[shard]!),
      done: (shard) => (!o.splitCommits ? undefined : shard === HOME_SLOT ? this.checkpoint : this.shardCps.get(shard)),
    };
    for (const p of o.projections) {
      for (const t of p.handles === 'all' ? Object.keys(EVENT_SCHEMAS) : p.handles) {
        const list = this.byType.get(t) ?? [];
        list.push(p);
        this.byType.set(t, list);
      }
    }
    this.caughtUpPromise = new Promise((r) => (this.caughtUpResolve = r));
  }

  /** The last position committed by this runner. */
  get position(): bigint | undefined {
    return this.checkpoint;
  }

  /** The last position committed and the id of the event there (undefined before the first commit of a checkpoint written before ids were). */
  get anchor(): { position: bigint; eventId: string } | undefined {
    return this.checkpoint !== undefined && this.checkpointEvent !== undefined ? { position: this.checkpoint, eventId: this.checkpointEvent } : undefined;
  }

  /** True while this runner is rebuilding from zero (before it first caught up). */
  get isRebuilding(): boolean {
    return this.rebuilding;
  }

  /** Loads the checkpoint and starts following the log. */
  async start(): Promise<void> {
    let raw: string | null | undefined;
    let rawEvent: string | null | undefined;
    let rawSpread: string | null | undefined;
    try {
      [raw, rawEvent, rawSpread] = await this.o.redis.mget(this.cpKey, this.cpEventKey, this.spreadKey);
      if (this.o.splitCommits) await this.loadShardCheckpoints();
    } catch (err) {
      // A storage error before the subscription (on a cluster: a slot being moved answers ASK or TRYAGAIN to the
      // plain connections, a master lost): the owner must hear of it and start the partition again. Thrown
      // instead, the runner stayed the partition's owner without following the log while its lease was renewed:
      // the partition stood still for good (seen in test/redis.cluster.reshard.test.ts moving a home slot).
      this.fail(err);
      return;
    }
    this.checkpoint = raw === null || raw === undefined ? undefined : BigInt(raw);
    this.checkpointEvent = this.checkpoint === undefined ? undefined : (rawEvent ?? undefined);
    const after = this.checkpoint;
    if (this.o.splitCommits) {
      if (rawSpread !== null && rawSpread !== undefined) {
        // The last batch committed in the home slot may be missing from some secondary slots (a crash between
        // the commits): its recorded commands are applied to those slots before anything else.
        this.spread = rawSpread;
        try {
          if (!(await this.repair(JSON.parse(rawSpread) as SpreadRecord))) return;
        } catch (err) {
          // A storage error (a slot that moved, a lost connection): the owner starts the partition again.
          this.fail(err);
          return;
        }
      }
    }
    // Stopped while it loaded (its owner stopped): a subscription opened now would never be closed.
    if (this.stopped) return;
    this.o.log.info(
      { partition: this.o.partition, generation: this.o.generation, checkpoint: raw, from: after?.toString(), rebuilding: this.rebuilding },
      'projector partition starting',
    );
    this.sub = this.o.store.subscribe({
      after,
      batchSize: this.o.batchSize ?? 500,
      onEvents: (events) => this.onEvents(events),
      onCaughtUp: () => void this.onCaughtUp(),
      onError: (err) => this.fail(err),
    });
  }

  /**
   * Finishes the batch an open spread record names: each slot of `v` whose checkpoint there is below `t` gets the
   * commands the batch recorded for it (`genKeys.redo`), with its checkpoint, in one MULTI WATCHed like any
   * commit; then the record and the log go. The commands are applied as they were computed the first time, so
   * no event is replayed and no read can see a slot that is already ahead. False when the runner lost a race (it
   * stopped).
   */
  private async repair(sp: SpreadRecord): Promise<boolean> {
    const t = BigInt(sp.t);
    if (!this.spreadDone(sp)) {
      const redo = await this.o.redis.hgetall(this.redoKey);
      const lost: string[] = [];
      // `v` is sorted: the main slot (-1) before the shards, as in a commit.
      for (const s of sp.v) {
        if ((this.shardCps.get(s) ?? -1n) >= t) continue;
        const raw = redo[String(s)];
        if (raw === undefined) throw new Error(`partition ${this.o.partition}'s spread record names slot ${s} but its redo log has no commands for it`);
        await this.commitSlot(this.routing.conn(s), s, JSON.parse(raw) as Op[], t, lost);
        if (lost.length > 0) {
          this.lose(lost[0]!);
          return false;
        }
      }
      this.o.log.warn({ partition: this.o.partition, generation: this.o.generation, batch: sp }, 'projector partition finished a batch a crash had left half committed');
    }
    await this.clearSpread();
    return true;
  }

  /** Removes the spread record and its redo log, unless another runner wrote its own since. */
  private async clearSpread(): Promise<void> {
    if (this.spread === undefined) return;
    await this.o.redis.eval(
      `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1], KEYS[2]) end return 0`,
      2,
      this.spreadKey,
      this.redoKey,
      this.spread,
    );
    this.spread = undefined;
  }

  /** Reads the partition's checkpoint in every secondary slot: the shards and the main slot. */
  private async loadShardCheckpoints(): Promise<void> {
    const slots = [...Array.from({ length: SHARDS }, (_, s) => s), MAIN_SLOT];
    const values = await Promise.all(slots.map((s) => this.routing.conn(s).get(this.shardCpKey(s))));
    this.shardCps.clear();
    values.forEach((v, n) => {
      if (v !== null && v !== undefined) this.shardCps.set(slots[n]!, BigInt(v));
    });
  }

  private shardCpKey(slot: number): string {
    return slotCheckpointKey(this.o.prefix, this.o.generation, this.o.partitions, this.o.partition, slot);
  }

  /** Whether every secondary slot a spread record names has committed its batch. */
  private spreadDone(sp: SpreadRecord): boolean {
    const t = BigInt(sp.t);
    return sp.v.every((s) => (this.shardCps.get(s) ?? -1n) >= t);
  }

  private async onCaughtUp(): Promise<void> {
    if (this.caughtUp || this.stopped) return;
    this.caughtUp = true;
    try {
      await this.o.redis.set(this.readyKey, '1');
      this.o.log.info(
        { partition: this.o.partition, generation: this.o.generation, checkpoint: this.checkpoint?.toString() },
        'projector partition caught up',
      );
    } catch (err) {
      this.o.log.warn({ err }, 'could not mark partition caught up');
    }
    this.rebuilding = false;
    this.caughtUpResolve();
    if (this.o.stopWhenCaughtUp) void this.stop();
  }

  private async onEvents(events: RecordedEvent[]): Promise<void> {
    if (this.stopped) return;
    const maxOps = this.o.maxOps ?? 20_000;
    let tx = this.newTx();
    let applied = 0;
    let seen = 0;
    // Index of the first event of the uncommitted part of the batch, and the poison events in that part.
    let from = 0;
    let poison = new Map<number, QuarantinedEvent>();
    for (let i = 0; i < events.length; i++) {
      const raw = events[i]!;
      seen++;
      if (poison.has(i)) continue;
      const fault = await this.applyOne(raw, tx);
      if (fault) {
        // The event's writes may be half in the batch: apply the uncommitted part again without it.
        poison.set(i, fault);
        tx = this.newTx();
        applied = 0;
        for (let j = from; j < i; j++) {
          if (poison.has(j)) continue;
          if (await this.applyOne(events[j]!, tx)) throw new Error('projection is not deterministic: an event applied once failed on its re-application');
          if (this.handles(events[j]!)) applied++;
        }
        continue;
      }
      if (this.handles(raw)) applied++;
      if (tx.ops.length >= maxOps) {
        await this.commit(tx, raw, applied, seen, [...poison.values()]);
        if (this.stopped) return;
        tx = this.newTx();
        applied = 0;
        seen = 0;
        from = i + 1;
        poison = new Map();
      }
    }
    await this.commit(tx, events[events.length - 1]!, applied, seen, [...poison.values()]);
  }

  /** Whether this partition projects the event at all. */
  private handles(raw: RecordedEvent): boolean {
    return partitionOf(raw.metadata.scope, this.o.partitions) === this.o.partition && isKnownEventType(raw.type) && this.byType.has(raw.type);
  }

  /**
   * Applies one event to the batch; returns its quarantine record when a projection threw on it (a storage
   * failure is rethrown: it is not the event's fault).
   */
  private async applyOne(raw: RecordedEvent, tx: BatchTx): Promise<QuarantinedEvent | undefined> {
    if (!this.handles(raw)) return undefined;
    const handlers = this.byType.get(raw.type)!;
    tx.position = raw.position;
    let current = '(upcast)';
    try {
      const e = upcast(raw);
      for (const h of handlers) {
        current = h.name;
        await h.apply(e, tx);
      }
      return undefined;
    } catch (err) {
      if (isStorageUnavailable(err) || this.o.redis.status !== 'ready') throw err;
      const record: QuarantinedEvent = {
        eventId: raw.id,
        position: raw.position.toString(),
        type: raw.type,
        stream: raw.stream,
        partition: this.o.partition,
        projection: current,
        error: err instanceof Error ? err.message.slice(0, 1000) : String(err).slice(0, 1000),
        // The event's own time, so a rebuild records exactly the same entry.
        at: raw.metadata.at,
      };
      this.o.log.error({ ...record, generation: this.o.generation }, 'projector: poison event quarantined');
      return record;
    }
  }

  private newTx(): BatchTx {
    return new BatchTx(this.o.redis, this.keyPrefix, this.cache, this.o.partition, this.rebuilding, this.routing);
  }

  private async commit(tx: BatchTx, last: RecordedEvent, applied: number, seen: number, quarantined: readonly QuarantinedEvent[] = []): Promise<void> {
    if (this.o.splitCommits) return this.commitSplit(tx, last, applied, seen, quarantined);
    const position = last.position;
    await this.o.beforeExec?.();
    const r = this.o.redis;
    await r.watch(this.cpKey);
    const current = await r.get(this.cpKey);
    const mine = this.checkpoint === undefined ? null : this.checkpoint.toString();
    if (current !== mine) {
      await r.unwatch();
      this.lose(`checkpoint is ${current ?? 'missing'}, expected ${mine ?? 'missing'}`);
      return;
    }
    const m = r.multi();
    for (const op of tx.ops) (m as unknown as { call: (...a: unknown[]) => void }).call(...op);
    // On a cluster the client-event stream is in another slot than the generation: appended after EXEC.
    const eventsAfter = this.o.eventsRedis;
    if (!eventsAfter && !this.rebuilding) {
      // The API processes' fact caches: which cached keys this commit wrote, and the checkpoints it moves between.
      const inv: Invalidation = { g: this.o.generation, p: position.toString(), q: mine, k: [...tx.touched] };
      m.xadd(this.invKey, 'MAXLEN', '~', '10000', '*', 'i', JSON.stringify(inv));
    }
    if (!eventsAfter) {
      for (const ev of tx.emitted) m.xadd(this.eventsKey, 'MAXLEN', '~', '10000', '*', 'e', JSON.stringify(ev));
    }
    for (const q of quarantined) m.hset(this.quarantineKey, q.position, JSON.stringify(q));
    m.set(this.cpKey, position.toString());
    // What the checkpoint points at: checked when the partition resumes (a log that went back in time fails it).
    m.set(this.cpEventKey, last.id);
    if (!(await execWatched(m))) {
      this.lose('checkpoint changed during the commit');
      return;
    }
    this.checkpoint = position;
    this.checkpointEvent = last.id;
    tx.commitToCache();
    if (eventsAfter && tx.emitted.length > 0) {
      // The batch is committed: a lost append only costs live delivery (docs/ARCHITECTURE.md "Redis Cluster").
      await this.appendEvents(eventsAfter, tx.emitted, position).catch((err: unknown) => this.o.log.warn({ err, partition: this.o.partition }, 'client events not appended'));
    }
    this.committed(position, applied, seen, quarantined);
  }

  /** Appends a committed batch's client events after its EXEC (`appendClientEvents`). */
  private appendEvents(conn: RedisClient, emitted: readonly Emitted[], position: bigint): Promise<void> {
    return appendClientEvents(conn, { prefix: this.o.prefix, generation: this.o.generation, partitions: this.o.partitions, partition: this.o.partition, liveShards: this.o.liveShards ?? 1 }, emitted, position);
  }

  /** After every commit of a batch: metrics, quarantine notices, the checkpoint's announcement. */
  private committed(position: bigint, applied: number, seen: number, quarantined: readonly QuarantinedEvent[]): void {
    for (const q of quarantined) {
      countQuarantinedEvent(this.o.partition);
      quarantineEvents.emit('quarantined', q);
    }
    observeProjectorBatch(this.o.partition, applied);
    const ctl = controlKeys(this.o.prefix);
    // While a spread record is open the shards it names may lack its batch: readers may rely on its start only.
    const announced = this.spread !== undefined ? (JSON.parse(this.spread) as SpreadRecord).f : (this.checkpoint ?? position).toString();
    if (announced !== null) void this.o.redis.publish(ctl.checkpointChannel, `${this.o.generation}:${this.o.partition}:${announced}`).catch(() => {});
    this.o.onCommit?.(position, applied, seen);
  }

  /**
   * The cluster's commit (docs/ARCHITECTURE.md "Redis Cluster"): in the partition's home slot (WATCH on its
   * checkpoint) one MULTI with the new checkpoint, the quarantine records, a spread record naming the secondary
   * slots the batch wrote and a redo log of its commands for each of them; then the main slot's writes with the
   * partition's checkpoint there, then each shard's writes with its checkpoint there, one MULTI per slot (WATCH on
   * that checkpoint); then the record and the log go. A crash in between leaves them: the next runner applies the
   * logged commands to the slots that lack the batch (`repair`).
   */
  private async commitSplit(tx: BatchTx, last: RecordedEvent, applied: number, seen: number, quarantined: readonly QuarantinedEvent[]): Promise<void> {
    const position = last.position;
    await this.o.beforeExec?.();
    const r = this.o.redis;
    const bySlot = new Map<number, Op[]>();
    tx.opShards.forEach((s, i) => {
      const list = bySlot.get(s);
      if (list) list.push(tx.ops[i]!);
      else bySlot.set(s, [tx.ops[i]!]);
    });
    // MAIN_SLOT (-1) sorts first: the main slot commits before the shards.
    const slots = [...bySlot.keys()].sort((a, b) => a - b);
    const mine = this.checkpoint === undefined ? null : this.checkpoint.toString();
    await r.watch(this.cpKey);
    const current = await r.get(this.cpKey);
    if (current !== mine) {
      await r.unwatch();
      this.lose(`checkpoint is ${current ?? 'missing'}, expected ${mine ?? 'missing'}`);
      return;
    }
    const m = r.multi();
    for (const q of quarantined) m.hset(this.quarantineKey, q.position, JSON.stringify(q));
    let record: string | undefined;
    if (slots.length > 0) {
      record = JSON.stringify({ f: mine, t: position.toString(), v: slots } satisfies SpreadRecord);
      m.set(this.spreadKey, record);
      m.del(this.redoKey);
      m.hset(this.redoKey, ...slots.flatMap((s) => [String(s), JSON.stringify(bySlot.get(s)!)]));
    } else if (this.spread !== undefined) m.del(this.spreadKey, this.redoKey);
    m.set(this.cpKey, position.toString());
    m.set(this.cpEventKey, last.id);
    if (!(await execWatched(m))) {
      this.lose('checkpoint changed during the commit');
      return;
    }
    this.checkpoint = position;
    this.checkpointEvent = last.id;
    this.spread = record;
    await this.o.afterHomeExec?.();
    const lost: string[] = [];
    if (bySlot.has(MAIN_SLOT) && !this.stopped) {
      await this.commitSlot(this.routing.conn(MAIN_SLOT), MAIN_SLOT, bySlot.get(MAIN_SLOT)!, position, lost);
      if (lost.length > 0) {
        this.lose(lost[0]!);
        return;
      }
      await this.o.afterMainExec?.();
    }
    // Each shard's writes with the partition's checkpoint there; shards on one connection one after the other.
    const byConn = new Map<RedisClient, number[]>();
    for (const s of slots) {
      if (s === MAIN_SLOT) continue;
      const c = this.routing.conn(s);
      const list = byConn.get(c);
      if (list) list.push(s);
      else byConn.set(c, [s]);
    }
    await Promise.all(
      [...byConn].map(async ([c, list]) => {
        for (const s of list) {
          if (lost.length > 0 || this.stopped) return;
          await this.commitSlot(c, s, bySlot.get(s)!, position, lost);
        }
      }),
    );
    if (lost.length > 0) {
      this.lose(lost[0]!);
      return;
    }
    // Every slot has the batch: the record and its log go (unless another runner wrote its own since).
    if (this.spread !== undefined && this.spreadDone(JSON.parse(this.spread) as SpreadRecord)) await this.clearSpread();
    tx.commitToCache();
    // Live events once every slot has the batch: a client that reads on an event finds what it announces.
    if (tx.emitted.length > 0 && !this.rebuilding) {
      await this.appendEvents(this.o.eventsRedis ?? r, tx.emitted, position).catch((err: unknown) => this.o.log.warn({ err, partition: this.o.partition }, 'client events not appended'));
    }
    this.committed(position, applied, seen, quarantined);
  }

  /**
   * Commits a batch's commands for one secondary slot (a shard or `MAIN_SLOT`) with the partition's checkpoint
   * there, WATCHed; a lost race is pushed to `lost` (nothing of it written).
   */
  private async commitSlot(c: RedisClient, slot: number, ops: readonly Op[], position: bigint, lost: string[]): Promise<void> {
    const key = this.shardCpKey(slot);
    const name = slot === MAIN_SLOT ? 'main slot' : `shard ${slot}`;
    const known = this.shardCps.get(slot);
    await c.watch(key);
    const current = await c.get(key);
    if (current !== (known === undefined ? null : known.toString())) {
      await c.unwatch();
      lost.push(`${name} checkpoint is ${current ?? 'missing'}, expected ${known ?? 'missing'}`);
      return;
    }
    const m = c.multi();
    for (const op of ops) (m as unknown as { call: (...a: unknown[]) => void }).call(...op);
    m.set(key, position.toString());
    if (!(await execWatched(m))) {
      lost.push(`${name} checkpoint changed during the commit`);
      return;
    }
    this.shardCps.set(slot, position);
  }

  private lose(why: string): void {
    this.o.log.warn({ partition: this.o.partition, generation: this.o.generation, why }, 'projector checkpoint lost');
    this.cache.clear();
    this.stopped = true;
    void this.sub?.close();
    this.o.onStop?.('checkpoint-lost');
  }

  private fail(err: unknown): void {
    if (this.stopped) return;
    this.o.log.error({ err, partition: this.o.partition }, 'projector partition failed');
    this.cache.clear();
    this.stopped = true;
    this.o.onStop?.('error', err);
  }

  /** Stops following; resolves when no batch is in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.sub?.close();
  }
}
