/**
 * Every Redis connection of the service is made here, for one Redis (`REDIS_URL`) or a Redis Cluster
 * (`REDIS_CLUSTER_NODES`). The configuration carries either as one string: a `redis://` URL, or
 * `redis-cluster://host:port,host:port` (the seed nodes; the cluster's topology is discovered from them).
 * Key layout and hash tags: `src/readmodel/keys.ts` and docs/ARCHITECTURE.md "Redis Cluster".
 */
import type { RedisOptions as BullRedisOptions } from 'bullmq';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';

/** A connection to one Redis or to a cluster (the commands the service uses are the same on both). */
export type RedisClient = Redis | Cluster;

/** The parts of ioredis 5's `Cluster` that `stopSlotsRefreshAfterClose` replaces (not in its typings). */
interface ClusterSlotsRefresh {
  status: string;
  slotsTimer: NodeJS.Timeout | null;
  options: { slotsRefreshInterval?: number };
  resetNodesRefreshInterval(): void;
  refreshSlotsCache(callback?: (err?: Error) => void): void;
}

/**
 * Works around ioredis 5.x: a cluster client's periodic slot refresh that is still in flight when the
 * client is closed (`quit`, `disconnect`) arms its timer again when it ends, and from then on every
 * `slotsRefreshInterval` for ever (each refresh fails at once on the closed client and arms the next): the
 * process never exits. Here the timer is armed again only while the client is not closing or closed; a
 * reconnection arms it anew when the client is ready (as ioredis does). Applied once to the prototype, so
 * it covers clients ioredis makes itself (`duplicate()`, BullMQ's blocking connections). Test:
 * test/redis.cluster.test.ts (a process that closes a client during a refresh exits by itself).
 */
function stopSlotsRefreshAfterClose(): void {
  const proto = Cluster.prototype as unknown as ClusterSlotsRefresh & { stoatSlotsRefreshGuard?: true };
  if (proto.stoatSlotsRefreshGuard || typeof proto.resetNodesRefreshInterval !== 'function') return;
  proto.stoatSlotsRefreshGuard = true;
  proto.resetNodesRefreshInterval = function (this: ClusterSlotsRefresh) {
    if (this.slotsTimer || !this.options.slotsRefreshInterval) return;
    const interval = this.options.slotsRefreshInterval;
    const nextRound = () => {
      if (this.status === 'disconnecting' || this.status === 'close' || this.status === 'end') {
        this.slotsTimer = null;
        return;
      }
      this.slotsTimer = setTimeout(() => this.refreshSlotsCache(nextRound), interval);
    };
    nextRound();
  };
}
stopSlotsRefreshAfterClose();

/** Scheme of the configuration string that names a cluster's seed nodes. */
export const CLUSTER_SCHEME = 'redis-cluster://';

/** The configuration string of a cluster from `REDIS_CLUSTER_NODES` (`host:port,host:port`). */
export function clusterUrl(nodes: string): string {
  return CLUSTER_SCHEME + clusterNodes(CLUSTER_SCHEME + nodes)
      .map((n) => `${n.host.includes(':') ? `[${n.host}]` : n.host}:${n.port}`)
      .join(',');
}

/** True when the configuration string names a cluster. */
export function isClusterUrl(url: string): boolean {
  return url.startsWith(CLUSTER_SCHEME);
}

/** True when a connection is a cluster connection. */
export function isCluster(r: RedisClient): r is Cluster {
  return (r as { isCluster?: boolean }).isCluster === true;
}

/** The seed nodes of a cluster configuration string; throws on a malformed entry. */
export function clusterNodes(url: string): Array<{ host: string; port: number }> {
  const list = url.slice(CLUSTER_SCHEME.length).split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (list.length === 0) throw new Error('REDIS_CLUSTER_NODES: at least one host:port');
  return list.map((entry) => {
    const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(entry);
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65535) throw new Error(`REDIS_CLUSTER_NODES: "${entry}" is not host:port`);
    return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
  });
}

/** Options of a connection; the same names for one Redis and a cluster. */
export interface CreateRedisOptions {
  /** Failed attempts before a command is rejected (null = retry forever; default 20 as in ioredis). */
  maxRetriesPerRequest?: number | null;
  /** Queue commands while disconnected (default true). */
  enableOfflineQueue?: boolean;
  connectTimeout?: number;
  lazyConnect?: boolean;
  /** Never reconnect once the connection is lost (the projector's partition connections). */
  noReconnect?: boolean;
  /** Do not resend commands in flight when the connection was lost. */
  noResend?: boolean;
  /** CLIENT SETNAME of the connection(s). */
  connectionName?: string;
  /** Send the commands issued in one event-loop turn in one write (ioredis auto-pipelining; one Redis only). */
  autoPipelining?: boolean;
  /**
   * On a cluster: how often the client re-reads the slot map by itself (default 2,000 ms). Each refresh opens
   * a new connection (CLIENT SETNAME, CLUSTER SLOTS, close), so every cluster client pays it: a client that
   * follows MOVED and connection losses anyway (ioredis refreshes on both before it retries) can wait longer.
   */
  slotsRefreshMs?: number;
}

/**
 * Opens a connection to one Redis or a cluster, from the configuration string. On a cluster, a command
 * that meets CLUSTERDOWN (a master lost and not yet replaced) or a moved slot is retried by the client for
 * about two seconds, then rejected (answered 503 by the API).
 */
export function createRedis(url: string, o: CreateRedisOptions = {}): RedisClient {
  if (!isClusterUrl(url)) {
    const opts: RedisOptions = {
      ...(o.maxRetriesPerRequest !== undefined ? { maxRetriesPerRequest: o.maxRetriesPerRequest } : {}),
      ...(o.enableOfflineQueue !== undefined ? { enableOfflineQueue: o.enableOfflineQueue } : {}),
      ...(o.connectTimeout !== undefined ? { connectTimeout: o.connectTimeout } : {}),
      ...(o.lazyConnect !== undefined ? { lazyConnect: o.lazyConnect } : {}),
      ...(o.noReconnect ? { retryStrategy: () => null } : {}),
      ...(o.noResend ? { autoResendUnfulfilledCommands: false } : {}),
      ...(o.connectionName ? { connectionName: o.connectionName } : {}),
      ...(o.autoPipelining ? { enableAutoPipelining: true } : {}),
    };
    return new Redis(url, opts);
  }
  const opts: ClusterOptions = {
    ...(o.enableOfflineQueue !== undefined ? { enableOfflineQueue: o.enableOfflineQueue } : {}),
    ...(o.lazyConnect !== undefined ? { lazyConnect: o.lazyConnect } : {}),
    ...(o.noReconnect ? { clusterRetryStrategy: () => null } : { clusterRetryStrategy: (times: number) => Math.min(100 * times, 2000) }),
    // CLUSTERDOWN and failovers: retried every 100 ms, at most 20 times (2 s), then the command fails.
    retryDelayOnClusterDown: 100,
    retryDelayOnFailover: 100,
    maxRedirections: 20,
    // No auto-pipelining on a cluster: ioredis groups the commands of one tick per master, and when such a
    // group meets MOVED during a resharding (its slots now on several masters) it fails the whole group with
    // "All keys in the pipeline should belong to the same slots allocation group" (seen as 500s in
    // test/redis.cluster.reshard.test.ts). Each command then follows its own MOVED/ASK.
    ...(o.autoPipelining ? { enableAutoPipelining: false } : {}),
    // Slot moves after a failover are picked up at once on MOVED; this also catches promotions seen late.
    slotsRefreshInterval: o.slotsRefreshMs ?? 2000,
    redisOptions: {
      ...(o.maxRetriesPerRequest !== undefined ? { maxRetriesPerRequest: o.maxRetriesPerRequest } : {}),
      ...(o.connectTimeout !== undefined ? { connectTimeout: o.connectTimeout } : {}),
      ...(o.noResend ? { autoResendUnfulfilledCommands: false } : {}),
      ...(o.connectionName ? { connectionName: o.connectionName } : {}),
    },
  };
  return new Cluster(clusterNodes(url), opts);
}

/**
 * The master connections of a cluster (every node of one Redis: itself). A cluster client created with
 * `lazyConnect` is connected first; one still connecting knows no masters yet (pass a connected client).
 */
export async function masters(r: RedisClient): Promise<Redis[]> {
  if (!isCluster(r)) return [r];
  if (r.status === 'wait') await r.connect();
  return r.nodes('master');
}

/**
 * Every key matching `pattern` (SCAN MATCH), on every master of a cluster; calls `each` with each batch.
 */
export async function scanKeys(r: RedisClient, pattern: string, each: (keys: string[], node: Redis) => Promise<void>): Promise<void> {
  for (const node of await masters(r)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await each(keys, node);
    } while (cursor !== '0');
  }
}

/**
 * BullMQ's connection: ioredis options for one Redis (BullMQ opens its own connections from them), or a
 * cluster connection (BullMQ shares it and duplicates it for blocking commands; the caller closes it).
 */
export function bullConnection(redisUrl: string): BullRedisOptions | Cluster {
  if (isClusterUrl(redisUrl)) return createRedis(redisUrl, { maxRetriesPerRequest: null }) as Cluster;
  const u = new URL(redisUrl);
  return {
    host: u.hostname,
    port: Number(u.port || 6379),
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.pathname.length > 1 ? { db: Number(u.pathname.slice(1)) } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}

/** Closes a connection returned by `bullConnection` (a cluster connection; options need nothing). */
export function closeBullConnection(c: BullRedisOptions | Cluster): void {
  if (c instanceof Cluster) c.disconnect();
}

/**
 * A plain connection to the master that serves `key`'s slot now (on one Redis: a new connection to it). The
 * projector commits through it: WATCH and its MULTI/EXEC then run on one socket, and when that master goes
 * (failover, slot moved) the connection ends or answers MOVED instead of carrying the transaction over to
 * another node without its WATCH. Options as `createRedis`.
 */
export async function connectionForKey(url: string, lookup: RedisClient, key: string, o: CreateRedisOptions = {}): Promise<Redis> {
  if (!isCluster(lookup)) {
    const r = createRedis(url, { ...o, lazyConnect: true }) as Redis;
    return r;
  }
  const slot = Number(await lookup.call('CLUSTER', 'KEYSLOT', key));
  const slots = (await lookup.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]], ...unknown[]]>;
  const range = slots.find(([from, to]) => slot >= from && slot <= to);
  if (!range) throw new Error(`CLUSTERDOWN no master serves the slot of ${key}`);
  const [host, port] = range[2];
  return plainConnection(host === '' ? '127.0.0.1' : host, port, o);
}

/** A plain (non-cluster) connection to one node of a cluster, not yet connected, with `o`'s options. */
function plainConnection(host: string, port: number, o: CreateRedisOptions): Redis {
  return new Redis({
    host,
    port,
    lazyConnect: true,
    ...(o.maxRetriesPerRequest !== undefined ? { maxRetriesPerRequest: o.maxRetriesPerRequest } : {}),
    ...(o.enableOfflineQueue !== undefined ? { enableOfflineQueue: o.enableOfflineQueue } : {}),
    ...(o.connectTimeout !== undefined ? { connectTimeout: o.connectTimeout } : {}),
    ...(o.noReconnect ? { retryStrategy: () => null } : {}),
    ...(o.noResend ? { autoResendUnfulfilledCommands: false } : {}),
    ...(o.connectionName ? { connectionName: o.connectionName } : {}),
  });
}

/**
 * On a cluster: plain connections to the masters that serve each of `keys`' slots now, one per master and in
 * the order of `keys` (`main`, a connection of `connectionForKey`, stands for its own master); connected.
 * The projector commits each shard of a generation on the connection of its slot's master (docs/
 * ARCHITECTURE.md "Redis Cluster"). `extra` are the connections opened here, for the caller to close.
 */
export async function connectionsForKeys(lookup: Cluster, keys: readonly string[], main: Redis, o: CreateRedisOptions = {}): Promise<{ conns: Redis[]; extra: Redis[] }> {
  const slots = (await lookup.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]], ...unknown[]]>;
  const keySlots = await Promise.all(keys.map(async (k) => Number(await lookup.call('CLUSTER', 'KEYSLOT', k))));
  const byAddress = new Map<string, Redis>([[`${main.options.host}:${main.options.port}`, main]]);
  const extra: Redis[] = [];
  const conns: Redis[] = [];
  try {
    for (const [i, slot] of keySlots.entries()) {
      const range = slots.find(([from, to]) => slot >= from && slot <= to);
      if (!range) throw new Error(`CLUSTERDOWN no master serves the slot of ${keys[i]}`);
      const host = range[2][0] === '' ? '127.0.0.1' : range[2][0];
      const address = `${host}:${range[2][1]}`;
      let c = byAddress.get(address);
      if (!c) {
        c = plainConnection(host, range[2][1], o);
        c.on('error', () => {});
        byAddress.set(address, c);
        extra.push(c);
        await c.connect();
      }
      conns.push(c);
    }
  } catch (err) {
    for (const c of extra) c.disconnect();
    throw err;
  }
  return { conns, extra };
}

/** The id of the last entry of each stream (`0-0` for an empty one): where a reader that wants only new entries starts. */
export async function streamEnds(r: RedisClient, keys: readonly string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const key of keys) ids.push((await r.xrevrange(key, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0');
  return ids;
}
