// `npm run test:cluster [-- files…]`: starts a real 3-master Redis Cluster on loopback ports (test/helpers/
// redisCluster.ts), runs test files with TEST_REDIS_CLUSTER_NODES set (every service the test helpers
// start then uses the cluster, through REDIS_CLUSTER_NODES), and stops the cluster. Default files: the
// message, gateway and rebuild suites.
import { spawn } from 'node:child_process';
import { startRedisCluster } from '../test/helpers/redisCluster.ts';

const DEFAULT_FILES = ['test/messages.test.ts', 'test/messages.history.test.ts', 'test/gateway.test.ts'];
const files = process.argv.slice(2);
const teardowns: Array<() => unknown> = [];
let code = 1;
try {
  const cluster = await startRedisCluster({ teardown: (fn) => void teardowns.unshift(fn) }, { masters: 3 });
  console.error(`redis cluster on ${cluster.seeds}`);
  code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, ['scripts/test.mjs', ...(files.length ? files : DEFAULT_FILES)], {
      stdio: 'inherit',
      env: { ...process.env, TEST_REDIS_CLUSTER_NODES: cluster.seeds },
    });
    child.on('exit', (c) => resolve(c ?? 1));
  });
} finally {
  for (const fn of teardowns) await fn();
}
process.exit(code);
