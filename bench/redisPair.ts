/**
 * The two Redis setups the cluster benchmarks compare (bench/gatewayCluster.ts, bench/clusterCosts.ts): a
 * private redis-server and a private 3-master Redis Cluster, each with the environment a service needs to use
 * it and the pids and ports its CPU and INFO figures are read from; and CPU seconds of several processes.
 */
import path from 'node:path';
import { startPrivateRedis } from '../scripts/redis.mjs';
import { startRedisCluster } from '../test/helpers/redisCluster.ts';
import { cpuSplit, threadTicks } from './footprint.ts';

/** One Redis setup: the service's environment for it, and its processes. */
export interface RedisSide {
  env: Record<string, string>;
  pids: number[];
  ports: number[];
}

/** Both setups, and how to stop them. */
export interface RedisPair {
  one: RedisSide;
  cluster: RedisSide;
  stop(): Promise<void>;
}

/** Starts a private redis-server (in `tmpDir`) and a private 3-master cluster. */
export async function startRedisPair(tmpDir: string): Promise<RedisPair> {
  const cleanups: Array<() => unknown> = [];
  const stop = async () => {
    for (const fn of cleanups.reverse()) await Promise.resolve(fn()).catch(() => {});
  };
  try {
    const single = await startPrivateRedis({ dir: path.join(tmpDir, 'single') });
    cleanups.push(() => single.stop());
    const cluster = await startRedisCluster({ teardown: (fn: () => unknown) => void cleanups.push(fn) }, { masters: 3 });
    return {
      one: { env: { REDIS_URL: single.url }, pids: [single.child.pid!], ports: [single.port] },
      cluster: { env: { REDIS_CLUSTER_NODES: cluster.seeds }, pids: cluster.nodes.map((n) => n.child!.pid!), ports: cluster.nodes.map((n) => n.port) },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** CPU ticks of every thread of each process, to pass to `cpuSince`. */
export function ticksOf(pids: number[]): Array<Map<string, number>> {
  return pids.map((p) => threadTicks(p));
}

/** CPU seconds the processes spent since `before` (`ticksOf` of the same pids), summed. */
export function cpuSince(pids: number[], before: Array<Map<string, number>>): number {
  return pids.reduce((s, p, i) => s + cpuSplit(before[i]!, threadTicks(p)).total, 0);
}
