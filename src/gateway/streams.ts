/**
 * Follows the client-event streams of every projector partition (written by the projector with its commits)
 * and the presence stream with XREAD BLOCK. Each API process reads every stream from the position it had when
 * the process started, and hands the events over in stream order.
 *
 * On one Redis every stream is read by one XREAD on one connection (`{live}:events:<n>:<i>` and the presence
 * stream). On a Redis Cluster a partition's client events are spread over `LIVE_SHARDS` live shards, each in
 * a slot of its own (src/readmodel/keys.ts `liveTag`): live shard j of every partition is read by one XREAD on
 * a connection of its own, the live shards in parallel, and the presence stream by another. An event of a
 * channel is in its channel's live shard only; any other event is in every live shard of its partition, marked
 * `b` = `<generation>.<position>.<index>` (increasing within the partition; a new generation, which a log that
 * went back in time starts, starts anew): the first copy read is handed over, the later
 * copies are skipped. Each stream holds, in the partition's order, every event that can change who receives
 * the channel events after it in that stream, so a channel event is never handed over before them.
 */
import { createRedis, isClusterUrl, streamEnds, type RedisClient } from '../redis.ts';
import type { Logger } from 'pino';
import { clientEventGroups, controlKeys, liveShardCount } from '../readmodel/keys.ts';
import type { QueuedEvent } from './socket.ts';

/** Options of the reader. */
export interface StreamReaderOptions {
  redisUrl: string;
  prefix: string;
  partitions: number;
  log: Logger;
  /** Live shards per partition; default `liveShardCount` of the URL (1 on one Redis). */
  liveShards?: number;
  /** Called with each event, in order per stream; the reader waits for it before reading on. */
  onEvent: (event: QueuedEvent) => Promise<void>;
}

/** The streams one XREAD reads (one slot), on a connection of its own. */
interface Group {
  conn: RedisClient;
  keys: string[];
  /** The partition of each key (-1: the presence stream). */
  partitionOf: number[];
  ids: string[];
}

/**
 * Whether mark `a` = `<generation>.<position>.<index>` comes after `b` (both of one partition): a later
 * generation does, whatever its position (a log that went back in time starts one; during a live rebuild's swap
 * both generations' runners may append, and a copy of the new one's may then be handed over twice).
 */
function after(a: string, b: string | undefined): boolean {
  if (b === undefined) return true;
  const [ag, ap, ak] = a.split('.');
  const [bg, bp, bk] = b.split('.');
  if (Number(ag) !== Number(bg)) return Number(ag) > Number(bg);
  const x = BigInt(ap ?? '0');
  const y = BigInt(bp ?? '0');
  return x !== y ? x > y : Number(ak) > Number(bk);
}

/** The reading loops. */
export class ClientEventReader {
  private readonly groups: Group[] = [];
  /** Per partition: the mark (`b`) of the last event of every live shard handed over. */
  private readonly lastShared = new Map<number, string>();
  private stopped = false;
  private loops: Promise<void>[] = [];

  constructor(private readonly o: StreamReaderOptions) {
    const ctl = controlKeys(o.prefix);
    const liveShards = o.liveShards ?? liveShardCount(isClusterUrl(o.redisUrl));
    const events = clientEventGroups(o.prefix, o.partitions, liveShards);
    const parts = Array.from({ length: o.partitions }, (_, i) => i);
    const specs: Array<{ keys: string[]; partitionOf: number[] }> =
      events.length === 1 && !isClusterUrl(o.redisUrl)
        ? [{ keys: [...events[0]!, ctl.presenceEvents], partitionOf: [...parts, -1] }]
        : [...events.map((keys) => ({ keys, partitionOf: parts })), { keys: [ctl.presenceEvents], partitionOf: [-1] }];
    for (const spec of specs) {
      // On a cluster, 17 of these per API process: with the default 2 s slot refresh they opened 8.5 connections a
      // second between them while idle (bench gateway-cluster). A blocked XREAD whose master goes away fails with
      // a closed connection, and ioredis re-reads the slot map before it retries; a moved slot answers MOVED,
      // which does the same. So the periodic refresh is only a safety net here.
      const conn = createRedis(o.redisUrl, { maxRetriesPerRequest: null, enableOfflineQueue: true, connectTimeout: 5000, slotsRefreshMs: 30_000 });
      conn.on('error', (err) => o.log.debug({ err: err.message }, 'gateway stream reader: redis error'));
      this.groups.push({ conn, keys: spec.keys, partitionOf: spec.partitionOf, ids: [] });
    }
  }

  /** Resolves the start positions (the current end of every stream, like `$`) and starts reading. */
  async start(): Promise<void> {
    await Promise.all(this.groups.map(async (g) => g.ids.push(...(await streamEnds(g.conn, g.keys)))));
    this.loops = this.groups.map((g) => this.run(g));
  }

  private async run(g: Group): Promise<void> {
    while (!this.stopped) {
      let res: Array<[string, Array<[string, string[]]>]> | null;
      try {
        res = (await g.conn.xread('COUNT', 500, 'BLOCK', 5000, 'STREAMS', ...g.keys, ...g.ids)) as typeof res;
      } catch (err) {
        if (this.stopped) return;
        this.o.log.warn({ err }, 'gateway stream reader: XREAD failed, retrying');
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      if (!res) continue;
      for (const [key, entries] of res) {
        const index = g.keys.indexOf(key);
        const partition = g.partitionOf[index]!;
        for (const [id, fields] of entries) {
          g.ids[index] = id;
          const raw = fields[fields.indexOf('e') + 1];
          if (raw === undefined) continue;
          const b = fields.indexOf('b');
          if (b >= 0) {
            // An event of every live shard: handed over from the first live shard that reaches it.
            const mark = fields[b + 1] ?? '';
            if (!after(mark, this.lastShared.get(partition))) continue;
            this.lastShared.set(partition, mark);
          }
          let event: QueuedEvent;
          try {
            event = JSON.parse(raw) as QueuedEvent;
          } catch {
            this.o.log.warn({ id, key }, 'gateway stream reader: unreadable entry skipped');
            continue;
          }
          await this.o.onEvent(event);
        }
      }
    }
  }

  /** Stops reading and closes the connections. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const g of this.groups) g.conn.disconnect();
    await Promise.all(this.loops.map((l) => l.catch(() => {})));
  }
}
