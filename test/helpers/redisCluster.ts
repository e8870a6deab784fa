/**
 * A real Redis Cluster for a test: `redis-server --cluster-enabled yes` on loopback ephemeral ports, each in
 * its own folder of a temporary directory, joined with `redis-cli --cluster create`. Nodes can be killed
 * (SIGKILL) and started again on the same port and folder (they rejoin from their `nodes.conf`).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Redis } from 'ioredis';
import { tempDir, type Teardownable } from './service.ts';
import { until } from './wait.ts';

/** One node of the test cluster. */
export interface ClusterNodeProcess {
  port: number;
  dir: string;
  child: ChildProcess | undefined;
}

/** A running test cluster. */
export interface TestCluster {
  nodes: ClusterNodeProcess[];
  /** `host:port,…` of every node (what REDIS_CLUSTER_NODES takes). */
  seeds: string;
  /** Port of the master serving the slot of `key` now. */
  masterOf(key: string): Promise<number>;
  /** SIGKILLs the node on `port`; resolves once it exited. */
  kill(port: number): Promise<void>;
  /** Starts the node on `port` again (same folder: same node id, same data with persistence). */
  restart(port: number): Promise<void>;
  /** Resolves once every live node reports `cluster_state:ok` and `key`'s slot has a master that answers. */
  healthy(key?: string, timeoutMs?: number): Promise<void>;
  /** Stops every node. */
  stop(): Promise<void>;
}

/** True when both `redis-server` and `redis-cli` are on PATH. */
export function haveRedisClusterTools(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0 && spawnSync('redis-cli', ['--version'], { stdio: 'ignore' }).status === 0;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** `cluster-port` is the data port + 10000: both must be free. */
/**
 * `taken`: the ports already chosen for this cluster (not yet bound: the kernel hands a port that was just free
 * out again, and two nodes got one port, failing with EEXIST on its folder). A port whose bus port is taken, or
 * that is another's bus port, is skipped too.
 */
async function freeClusterPort(taken: ReadonlySet<number>): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port + 10000 > 65535) continue;
    if (taken.has(port) || taken.has(port + 10000) || taken.has(port - 10000)) continue;
    const ok = await new Promise<boolean>((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port + 10000, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (ok) return port;
  }
}

async function info(port: number, section: string): Promise<string> {
  const r = new Redis({ host: '127.0.0.1', port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: 1000 });
  r.on('error', () => {});
  try {
    await r.connect();
    return String(await r.call(section === 'cluster' ? 'CLUSTER' : 'INFO', ...(section === 'cluster' ? ['INFO'] : [section])));
  } finally {
    r.disconnect();
  }
}

/**
 * Starts `masters` masters (and `replicasPerMaster` replicas of each) and waits until the cluster is ok.
 * `nodeTimeoutMs` is `cluster-node-timeout` (how long before a silent master is failed over).
 */
export async function startRedisCluster(
  t: Teardownable,
  o: { masters?: number; replicasPerMaster?: number; nodeTimeoutMs?: number; persist?: boolean } = {},
): Promise<TestCluster> {
  const masters = o.masters ?? 3;
  const replicas = o.replicasPerMaster ?? 0;
  const root = tempDir(t, 'redis-cluster');
  const nodes: ClusterNodeProcess[] = [];
  for (let i = 0; i < masters * (1 + replicas); i++) {
    const port = await freeClusterPort(new Set(nodes.map((n) => n.port)));
    const dir = path.join(root, String(port));
    fs.mkdirSync(dir);
    nodes.push({ port, dir, child: undefined });
  }

  const launch = async (n: ClusterNodeProcess) => {
    const args = [
      '--port', String(n.port), '--bind', '127.0.0.1', '--dir', n.dir, '--daemonize', 'no', '--logfile', 'redis.log',
      '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', String(o.nodeTimeoutMs ?? 1000),
      '--save', '',
      ...(o.persist ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
    ];
    const child = spawn('redis-server', args, { stdio: 'ignore' });
    n.child = child;
    await until(`redis-server on ${n.port}`, async () => {
      if (child.exitCode !== null) throw new Error(`redis-server exited while starting on port ${n.port}`);
      return info(n.port, 'server').then(() => true, () => false);
    }, 10_000, 25);
  };

  const kill = (port: number) => {
    const n = nodes.find((x) => x.port === port)!;
    const child = n.child;
    n.child = undefined;
    if (!child || child.exitCode !== null) return Promise.resolve();
    return new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  };

  const cluster: TestCluster = {
    nodes,
    seeds: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
    async masterOf(key) {
      const live = nodes.find((n) => n.child)!;
      const r = new Redis({ host: '127.0.0.1', port: live.port, maxRetriesPerRequest: 1 });
      try {
        const slot = Number(await r.call('CLUSTER', 'KEYSLOT', key));
        const slots = (await r.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, string]]>;
        const owner = slots.find(([from, to]) => slot >= from && slot <= to);
        if (!owner) throw new Error(`no master for slot ${slot}`);
        return Number(owner[2][1]);
      } finally {
        r.disconnect();
      }
    },
    kill,
    async restart(port) {
      await launch(nodes.find((x) => x.port === port)!);
    },
    async healthy(key, timeoutMs = 30_000) {
      await until('cluster_state:ok on every live node', async () => {
        for (const n of nodes) {
          if (!n.child) continue;
          const text = await info(n.port, 'cluster').catch(() => '');
          if (!text.includes('cluster_state:ok')) return false;
        }
        if (key === undefined) return true;
        const port = await cluster.masterOf(key).catch(() => 0);
        const n = nodes.find((x) => x.port === port);
        if (!n?.child) return false;
        return (await info(port, 'replication').catch(() => '')).includes('role:master');
      }, timeoutMs, 100);
    },
    async stop() {
      await Promise.all(nodes.map((n) => kill(n.port)));
    },
  };
  t.teardown(() => cluster.stop());

  await Promise.all(nodes.map(launch));
  const create = spawnSync(
    'redis-cli',
    ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'],
    { encoding: 'utf8', timeout: 60_000 },
  );
  if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}\n${create.stderr}`);
  await cluster.healthy();
  if (replicas > 0) {
    // Every replica attached and in sync before a test kills its master.
    await until('replicas in sync', async () => {
      for (const n of nodes) {
        const text = await info(n.port, 'replication').catch(() => '');
        if (text.includes('role:slave') && !text.includes('master_link_status:up')) return false;
      }
      return true;
    }, 30_000, 100);
  }
  return cluster;
}
