/**
 * Starts the real service for a test file: ephemeral ports, a temporary data directory, its own Redis
 * prefix on the test Redis, and cleans all of it up at the end of the test.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createRedis } from '../../src/redis.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { deleteKeys } from '../../projections/rebuild.ts';
import { startService, type Service, type ServiceOptions } from '../../src/service.ts';
import { WAIT_MS } from './wait.ts';

/** The Redis the tests use (`npm test` sets it; a developer's own Redis otherwise). */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Minimal view of tap's Test used here (teardown only). */
export interface Teardownable {
  teardown(fn: () => unknown): void;
}

/** A running service with helpers for HTTP calls. */
export interface TestService extends Service {
  /** The temporary data directory. */
  dataDir: string;
  /** The Redis prefix of this service. */
  prefix: string;
}

/** A fresh temporary directory removed at teardown. */
export function tempDir(t: Teardownable, name = 'stoat-test'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${name}-`));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A unique Redis prefix. */
export function uniquePrefix(): string {
  return `test:${randomBytes(6).toString('hex')}:`;
}

/** Deletes every key under a prefix (on a connection of its own). */
export async function deletePrefix(redisUrl: string, prefix: string): Promise<void> {
  const r = createRedis(redisUrl, { lazyConnect: true });
  try {
    await deleteKeys(r, prefix);
  } finally {
    r.disconnect();
  }
}

/** Builds a configuration for a test (ports 0, temporary directory, own prefix, quiet logs). */
export function testConfig(t: Teardownable, env: Record<string, string> = {}): Config {
  const dataDir = env.DATA_DIR ?? tempDir(t);
  return loadConfig({
    API_PORT: '0',
    MEDIA_PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: uniquePrefix(),
    // `npm run test:cluster` runs suites on a Redis Cluster it started.
    ...(process.env.TEST_REDIS_CLUSTER_NODES ? { REDIS_CLUSTER_NODES: process.env.TEST_REDIS_CLUSTER_NODES } : {}),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // A write waits for its projection at most PROJECTION_WAIT_MS (10 s by default), then answers 503: a
    // deadline a loaded machine can outrun (a delivery took over 20 s, issue 40). A test about that deadline
    // sets its own.
    PROJECTION_WAIT_MS: String(WAIT_MS),
    ...env,
  });
}

/** Waits until the read models serve (the projector caught up once). */
export async function waitServing(s: Service, timeoutMs = WAIT_MS): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await s.readModels.serving())) {
    if (Date.now() > until) throw new Error('service did not start serving');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Starts the service with every role (unless ROLES is given) and registers its cleanup. */
export async function startTestService(t: Teardownable, env: Record<string, string> = {}, opts: ServiceOptions = {}): Promise<TestService> {
  const config = testConfig(t, env);
  const log = createLogger(config.logLevel);
  const s = await startService(config, { log, ...opts });
  t.teardown(async () => {
    // The test is over: close the idle keep-alive connections its own clients left (fetch keeps them), which
    // `stop()` would otherwise close only after its 2 s grace for just-accepted connections. A teardown waited
    // 2.5 s of wall time for nothing, 0.25 s with this (issue 40); the grace itself is service.stop.test's.
    for (const server of [s.apiServer, s.mediaServer, s.metricsServer]) server?.closeIdleConnections();
    await s.stop();
    await deletePrefix(config.redisUrl, config.redisPrefix);
  });
  if (config.roles.includes('projector')) await waitServing(s);
  return Object.assign(s, { dataDir: config.dataDir, prefix: config.redisPrefix });
}
