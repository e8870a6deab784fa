/**
 * The client-event streams spread over live shards (what a Redis Cluster runs, docs/ARCHITECTURE.md "Redis
 * Cluster"), on a real Redis: the projector's append (`appendClientEvents`) puts an event of a channel in its
 * channel's live shard and any other event in every live shard of its partition; the gateway's reader
 * (`ClientEventReader`, one XREAD per live shard, in parallel) hands every event over exactly once, a channel's
 * events in order, and a channel event only after every event of its partition that came before it.
 */
import t from 'tap';
import type * as Tap from 'tap';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createLogger } from '../src/log.ts';
import { clientEventGroups, controlKeys, liveShardOf } from '../src/readmodel/keys.ts';
import { appendClientEvents } from '../projections/runner.ts';
import { ClientEventReader } from '../src/gateway/streams.ts';
import type { QueuedEvent } from '../src/gateway/socket.ts';
import type { Emitted } from '../projections/tx.ts';
import { until } from './helpers/wait.ts';

const url = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const LIVE = 4;
const PARTITIONS = 2;

async function withRedis(t: Tap.Test): Promise<{ redis: Redis; prefix: string }> {
  const prefix = `test:${randomUUID()}:`;
  const redis = new Redis(url);
  t.teardown(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });
  return { redis, prefix };
}

const channelEvent = (channelId: string, n: number): Emitted => ({ route: { kind: 'channel', serverId: 'S', channelId }, payload: { type: 'Message', channel: channelId, n } });
const serverEvent = (n: number): Emitted => ({ route: { kind: 'server', serverId: 'S' }, payload: { type: 'ServerUpdate', n } });

t.test('liveShardOf: a channel\'s events (server or private channel) in its channel\'s live shard, any other event in every one (-1)', async (t) => {
  const shards = new Set<number>();
  for (let i = 0; i < 200; i++) {
    const c = `channel${i}`;
    const j = liveShardOf({ kind: 'channel', channelId: c }, LIVE);
    t.equal(liveShardOf({ kind: 'users', channelId: c }, LIVE), j, 'a private channel\'s events go where a server channel of that id would');
    shards.add(j);
  }
  t.same([...shards].sort(), [0, 1, 2, 3], '200 channels use every live shard');
  t.equal(liveShardOf({ kind: 'server' }, LIVE), -1);
  t.equal(liveShardOf({ kind: 'user' }, LIVE), -1);
  t.equal(liveShardOf({ kind: 'users' }, LIVE), -1, 'a users route without a channel goes everywhere');
  t.equal(liveShardOf({ kind: 'server' }, 1), 0, 'one live shard: everything in the one stream');
});

t.test('appendClientEvents: a channel event in one live shard, any other event in each, marked with its position', async (t) => {
  const { redis, prefix } = await withRedis(t);
  const o = { prefix, generation: 3, partitions: PARTITIONS, partition: 1, liveShards: LIVE };
  await appendClientEvents(redis, o, [serverEvent(1), channelEvent('c1', 2), channelEvent('c2', 3)], 42n);
  const ctl = controlKeys(prefix);
  let channelEntries = 0;
  for (let j = 0; j < LIVE; j++) {
    const entries = await redis.xrange(ctl.clientEvents(PARTITIONS, 1, j, LIVE), '-', '+');
    t.same(entries[0]![1], ['e', JSON.stringify(serverEvent(1)), 'b', '3.42.0'], `live shard ${j} starts with the server event, marked 3.42.0 (generation, position, index)`);
    for (const [, f] of entries.slice(1)) {
      const ev = JSON.parse(f[1]!) as Emitted;
      t.equal(liveShardOf(ev.route, LIVE), j, 'a channel event is in its channel\'s live shard');
      t.equal(f.length, 2, 'unmarked');
      channelEntries++;
    }
    t.equal(await redis.exists(ctl.clientEvents(PARTITIONS, 0, j, LIVE)), 0, 'partition 0\'s streams untouched');
  }
  t.equal(channelEntries, 2, 'each channel event once');
  await appendClientEvents(redis, { ...o, liveShards: 1 }, [serverEvent(4)], 43n);
  t.same((await redis.xrange(ctl.clientEvents(PARTITIONS, 1), '-', '+')).map(([, f]) => f), [['e', JSON.stringify(serverEvent(4))]], 'one live shard: the partition\'s one stream, unmarked');
});

t.test('ClientEventReader over live shards: every event once, in partition order before the channel events after it', async (t) => {
  const { redis, prefix } = await withRedis(t);
  const got: QueuedEvent[] = [];
  const reader = new ClientEventReader({ redisUrl: url, prefix, partitions: PARTITIONS, liveShards: LIVE, log: createLogger('silent'), onEvent: async (e) => void got.push(e) });
  await reader.start();
  t.teardown(() => reader.stop());
  t.same(clientEventGroups(prefix, PARTITIONS, LIVE).length, LIVE, 'one group (one XREAD) per live shard');

  // Each partition's batches, in the partition's order: server events between channel events of 12 channels.
  // Partition 1's positions are below partition 0's: the marks are compared within a partition only.
  const order: Array<Array<{ n: number; shared: boolean; channel?: string }>> = [[], []];
  let n = 0;
  const batches: Array<Promise<void>> = [];
  for (const partition of [0, 1]) {
    const appends: Array<() => Promise<void>> = [];
    for (let b = 0; b < 30; b++) {
      const batch: Emitted[] = [];
      for (let k = 0; k < 6; k++) {
        const id = ++n;
        if (k % 3 === 0) {
          batch.push(serverEvent(id));
          order[partition]!.push({ n: id, shared: true });
        } else {
          const c = `p${partition}c${(b * 7 + k) % 12}`;
          batch.push(channelEvent(c, id));
          order[partition]!.push({ n: id, shared: false, channel: c });
        }
      }
      const position = BigInt((partition === 0 ? 1_000_000 : 1000) + b * 10);
      appends.push(() => appendClientEvents(redis, { prefix, generation: 1, partitions: PARTITIONS, partition, liveShards: LIVE }, batch, position));
    }
    // A partition appends its batches one after the other (the runner awaits each); the partitions in parallel.
    batches.push((async () => {
      for (const a of appends) await a();
    })());
  }
  await Promise.all(batches);
  // Last, an end mark in every stream: once all are handed over, every stream was read to its end.
  const ends: Emitted[][] = [[], []];
  for (const partition of [0, 1]) {
    for (let j = 0; j < LIVE; j++) {
      let c = 0;
      while (liveShardOf({ kind: 'channel', channelId: `end${c}` }, LIVE) !== j) c++;
      ends[partition]!.push({ route: { kind: 'channel', serverId: 'S', channelId: `end${c}` }, payload: { type: 'End', n: 0 } });
    }
    await appendClientEvents(redis, { prefix, generation: 1, partitions: PARTITIONS, partition, liveShards: LIVE }, ends[partition]!, 10_000_000n);
  }
  await until('every stream read to its end', () => got.filter((e) => e.payload.type === 'End').length === 2 * LIVE, 10_000);
  const seen = got.filter((e) => e.payload.type !== 'End').map((e) => e.payload.n as number);
  t.equal(seen.length, n, `${n} events handed over, none twice`);
  t.same([...new Set(seen)].sort((a, b) => a - b), Array.from({ length: n }, (_, i) => i + 1), 'every event handed over');
  const at = new Map(seen.map((v, i) => [v, i]));
  let checked = 0;
  for (const list of order) {
    const lastOfChannel = new Map<string, number>();
    let lastShared = -1;
    for (const e of list) {
      const i = at.get(e.n)!;
      if (e.shared) {
        if (!(i > lastShared)) t.fail(`server event ${e.n} handed over before an earlier one of its partition`);
        lastShared = i;
      } else {
        // Every server event before it in its partition is handed over before it.
        if (lastShared >= 0 && !(lastShared < i)) t.fail(`channel event ${e.n} handed over before a server event that came before it`);
        const prev = lastOfChannel.get(e.channel!);
        if (prev !== undefined && !(prev < i)) t.fail(`channel ${e.channel}: event ${e.n} before an earlier one`);
        lastOfChannel.set(e.channel!, i);
        checked++;
      }
    }
  }
  t.equal(checked, (n * 2) / 3, 'every channel event was checked');
});

t.test('ClientEventReader over live shards: a new generation\'s events are handed over though its positions are lower (a log that went back in time)', async (t) => {
  const { redis, prefix } = await withRedis(t);
  const got: QueuedEvent[] = [];
  const reader = new ClientEventReader({ redisUrl: url, prefix, partitions: PARTITIONS, liveShards: LIVE, log: createLogger('silent'), onEvent: async (e) => void got.push(e) });
  await reader.start();
  t.teardown(() => reader.stop());
  const o = { prefix, partitions: PARTITIONS, partition: 0, liveShards: LIVE };
  await appendClientEvents(redis, { ...o, generation: 1 }, [serverEvent(1)], 5000n);
  await until('generation 1\'s event', () => got.some((e) => e.payload.n === 1), 10_000);
  await appendClientEvents(redis, { ...o, generation: 1 }, [serverEvent(2)], 4000n);
  await appendClientEvents(redis, { ...o, generation: 2 }, [serverEvent(3)], 7n);
  await until('generation 2\'s event', () => got.some((e) => e.payload.n === 3), 10_000);
  t.same(got.map((e) => e.payload.n), [1, 3], 'within a generation a lower position is a copy already handed over; a new generation starts anew, each once');
});
