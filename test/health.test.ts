// The container health command (`src/cli/health.ts <role>`, used by docker-compose.yml) run for real against a
// running service: exit 0 while each role is healthy; exit 1 on a wrong port, another partition count or
// prefix, leases released by a stopped projector, no worker of this host on the queues, Redis unreachable.
import net from 'node:net';
import t from 'tap';
import { controlKeys } from '../src/readmodel/keys.ts';
import { runCli } from './helpers/cli.ts';
import { startTestService } from './helpers/service.ts';

/** A port nothing listens on (just released by the kernel). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

t.test('health command', async (t) => {
  const s = await startTestService(t, { PROJECTOR_PARTITIONS: '2', PROJECTOR_LEASE_MS: '1500' });
  const env = {
    REDIS_URL: s.config.redisUrl,
    REDIS_PREFIX: s.prefix,
    PROJECTOR_PARTITIONS: '2',
    HOST: '127.0.0.1',
    API_PORT: new URL(s.apiUrl).port,
    MEDIA_PORT: new URL(s.mediaUrl).port,
  };
  const health = (role: string, extra: Record<string, string> = {}) => runCli({ ...env, ...extra }, [role], { script: 'src/cli/health.ts' });

  for (const role of ['api', 'media', 'projector', 'worker']) {
    const r = await health(role);
    t.equal(r.code, 0, `${role} healthy: ${r.out.trim()}${r.err.trim()}`);
    t.match(r.out, /^healthy: /);
  }
  // HOST 0.0.0.0 (the image's default) is checked on the loopback address.
  t.equal((await health('api', { HOST: '0.0.0.0' })).code, 0, 'api on HOST=0.0.0.0 checked through 127.0.0.1');

  const port = String(await closedPort());
  for (const [role, extra] of [['api', { API_PORT: port }], ['media', { MEDIA_PORT: port }]] as const) {
    const r = await health(role, extra);
    t.equal(r.code, 1, `${role} on a port nothing listens on: ${r.err.trim()}`);
    t.match(r.err, /^unhealthy: /);
  }
  t.equal((await health('projector', { PROJECTOR_PARTITIONS: '3' })).code, 1, "another partition count: that deployment's leases do not exist");
  t.equal((await health('projector', { REDIS_PREFIX: `${s.prefix}other:` })).code, 1, 'another prefix: no generation');
  t.equal((await health('worker', { REDIS_PREFIX: `${s.prefix}other:` })).code, 1, "another prefix: no worker on that deployment's queues");
  t.equal((await health('worker', { REDIS_URL: `redis://127.0.0.1:${port}` })).code, 1, 'Redis unreachable');
  t.equal((await health('nonsense')).code, 1, 'an unknown role');

  // A stopped projector releases its leases; a live one is only missing once its lease has expired.
  await s.projector!.stop();
  t.same(await s.redis.exists(controlKeys(s.prefix).lease(2, 0), controlKeys(s.prefix).lease(2, 1)), 0, 'leases released');
  const r = await health('projector');
  t.equal(r.code, 1, `no projector: ${r.err.trim()}`);
  t.match(r.err, /partition 0\/2 has no live lease/);

  await s.mediaWorkers!.close();
  const w = await health('worker');
  t.equal(w.code, 1, `workers closed: ${w.err.trim()}`);
  t.match(w.err, /no worker of host/);
});
