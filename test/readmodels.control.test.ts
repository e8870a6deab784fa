/**
 * The control channel carries `commit:<position>` for every SQLite commit (to wake idle subscriptions in other
 * processes) and `generation:<n>` when a rebuild swaps the read models. Only the second concerns the API's
 * generation: a commit announcement must not make every API process read the generation again (one Redis GET
 * per commit per process), and a generation announcement must.
 */
import t from 'tap';
import { controlKeys } from '../src/readmodel/keys.ts';
import { createRedis } from '../src/redis.ts';
import { startTestService } from './helpers/service.ts';
import { until } from './helpers/wait.ts';

t.test('commit announcements do not re-read the generation; generation announcements do', async (t) => {
  const s = await startTestService(t, { ROLES: 'api' });
  const reader = s.readModels as unknown as { refreshGeneration: () => Promise<void> };
  let reads = 0;
  const original = reader.refreshGeneration.bind(reader);
  reader.refreshGeneration = () => {
    reads++;
    return original();
  };
  const pub = createRedis(s.config.redisUrl);
  t.teardown(() => pub.disconnect());
  const channel = controlKeys(s.prefix).controlChannel;
  for (let i = 1; i <= 20; i++) await pub.publish(channel, `commit:${i}`);
  // A marker after the commits: once it is seen, every commit announcement before it was handled too.
  await pub.publish(channel, 'generation:1');
  await until('the generation announcement to be handled', async () => reads > 0);
  t.equal(reads, 1, 'twenty commit announcements: no read; one generation announcement: one read');
});
