/**
 * Retention sweep killed for real (issue 39 part 1, "survives a kill mid-sweep"): the API and the projector run
 * in this process, the worker — the process that runs the retention sweep — as a child process on the same data
 * directory and Redis prefix. With a thousand expired messages (a 1-second instance policy), the worker is
 * SIGKILLed once its sweep has erased part of them (counted in the log, not guessed from wall time), and
 * started again. Then:
 * - every expired message is erased exactly once: one `MessageErased` on its stream, never two, and REST 404;
 * - nothing else is touched: a held author's messages (a legal hold on the user) and the messages of a channel
 *   whose override keeps them a day have no erasure and read back with their content;
 * - the expired channel's bucket keys are destroyed (each bucket's `RetentionBucketShredded` appended once),
 *   the held and the kept channels' are not;
 * - the read models equal a rebuild from the log.
 */
import t from 'tap';
import { Redis } from 'ioredis';
import { runAdmin } from '../../src/cli/accountsAdmin.ts';
import { runRetention } from '../../src/cli/accountsRetention.ts';
import { CONTENT_SUBJECT } from '../../src/personal/fields.ts';
import type { PersonalDataStore } from '../../src/personal/store.ts';
import { dumpCurrent, dumpRebuild, createServer, join } from '../helpers/servers.ts';
import { startTestService, TEST_REDIS_URL } from '../helpers/service.ts';
import { signup, type TestUser } from '../helpers/http.ts';
import { startRoleProcess } from '../helpers/processes.ts';
import { until } from '../helpers/wait.ts';

/** Expired messages: enough that the sweep takes a while (one revision-checked append each). */
const EXPIRED = 1_200;
/** Messages of the held author, and of the channel kept a day. */
const HELD = 40;
const KEPT = 40;

t.test('SIGKILL of the worker midway through a retention sweep', async (t) => {
  const shared = { RATE_LIMITS: 'off', RETENTION_BUCKET_SECONDS: '2', RETENTION_SWEEP_INTERVAL_MS: '100' };
  const s = await startTestService(t, { ...shared, ROLES: 'api,media,projector' });
  const store = s.store as PersonalDataStore;
  const workerEnv = {
    ...shared,
    ROLES: 'worker',
    HOST: '127.0.0.1',
    API_PORT: '0',
    MEDIA_PORT: '0',
    DATA_DIR: s.dataDir,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: s.prefix,
    LOG_LEVEL: 'info',
  };

  const [admin, author, heldAuthor] = await Promise.all([signup(s), signup(s), signup(s)]);
  await runAdmin(['grant', admin.userId, '--role', 'admin'], { store: s.store, print: () => {} });
  await until('admin granted', async () => (await s.readModels.hgetJson('instance:staff', admin.userId)) === 'admin');
  const server = await createServer(author, 'retention kill');
  await join(author, server.general, heldAuthor);
  const channel = async (name: string) => (await author.api.post(`/servers/${server.id}/channels`, { name })).body._id as string;
  const [heldRoom, kept] = [await channel('held'), await channel('kept')];
  // The policies and the hold stand before the first message: the kept channel keeps a day, the held author's
  // messages are held; the instance default (1 s) is set once everything is sent, and starts the sweep.
  t.equal(await runRetention(['set', '--channel', kept, '--max-age-seconds', '86400'], { store: s.store, print: () => {} }), 0);
  const hold = await admin.api.post('/admin/holds', { name: 'matter', reason: 'kill test', target: { type: 'user', id: heldAuthor.userId } });
  t.equal(hold.status, 200, 'a hold on the held author');

  const send = async (u: TestUser, c: string, content: string) => {
    const r = await u.api.post(`/channels/${c}/messages`, { content }, { skipOpenApi: true });
    if (r.status !== 200) throw new Error(`send: ${r.status} ${r.text}`);
    return r.body._id as string;
  };
  const expired: string[] = [];
  const held = new Map<string, string>();
  const keptIds = new Map<string, string>();
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let i = next++; i < EXPIRED; i = next++) {
        expired.push(await send(author, server.general, `expired ${i}`));
        if (i % 30 === 0 && held.size < HELD) held.set(await send(heldAuthor, heldRoom, `held ${i}`), `held ${i}`);
        if (i % 30 === 15 && keptIds.size < KEPT) keptIds.set(await send(author, kept, `kept ${i}`), `kept ${i}`);
      }
    }),
  );
  t.equal(expired.length, EXPIRED);

  let worker = await startRoleProcess(t, workerEnv);
  const start = (await store.headPosition()) ?? 0n;
  t.equal(await runRetention(['set', '--instance', '--max-age-seconds', '1'], { store: s.store, print: () => {} }), 0);
  // The kill lands once the sweep has erased a quarter of the expired messages: every append after the policy's
  // is an erasure (or a bucket's record), so the log's head counts them.
  await until('a quarter erased', async () => ((await store.headPosition()) ?? 0n) - start > BigInt(EXPIRED / 4));
  await worker.stop('SIGKILL');
  const atKill = Number(((await store.headPosition()) ?? 0n) - start - 1n);
  t.ok(atKill < EXPIRED, `the kill landed midway: ${atKill} of ${EXPIRED} appended before it`);

  worker = await startRoleProcess(t, workerEnv);
  const erasures = async (id: string) => (await store.readStream(`message-${id}`)).filter((e) => e.type === 'MessageErased').length;
  await until(
    'every expired message erased and its buckets destroyed',
    async () => (await erasures(expired[expired.length - 1]!)) === 1 && (await store.keys.liveSubjects(`${CONTENT_SUBJECT}${server.general}:`)).length === 0,
    180_000,
  );
  await worker.stop('SIGTERM');

  const counts = await Promise.all(expired.map(erasures));
  t.same(
    expired.filter((_, i) => counts[i] !== 1).map((id, i) => `${id}: ${counts[i]}`),
    [],
    `each of the ${EXPIRED} expired messages has exactly one MessageErased`,
  );
  t.equal((await author.api.get(`/channels/${server.general}/messages?limit=100`)).body.length, 0, 'the expired channel lists nothing');
  for (const id of expired.slice(0, 20).concat(expired.slice(-20))) t.equal((await author.api.get(`/channels/${server.general}/messages/${id}`)).status, 404, `${id}: 404`);
  for (const [what, ids, c] of [
    ['held', held, heldRoom],
    ['kept', keptIds, kept],
  ] as const) {
    t.equal(ids.size, what === 'held' ? HELD : KEPT);
    for (const [id, content] of ids) {
      t.equal(await erasures(id), 0, `${what} ${id}: no erasure`);
      t.equal((await author.api.get(`/channels/${c}/messages/${id}`)).body.content, content, `${what} ${id}: read back`);
    }
    t.ok((await store.keys.liveSubjects(`${CONTENT_SUBJECT}${c}:`)).length > 0, `the ${what} channel keeps its bucket keys`);
  }
  const subjects: string[] = [];
  for await (const e of store.readAll()) if (e.type === 'RetentionBucketShredded') subjects.push((e.data as { subject: string }).subject);
  t.ok(subjects.length > 0 && subjects.every((x) => x.startsWith(`${CONTENT_SUBJECT}${server.general}:`)), `${subjects.length} buckets shredded, all of the expired channel`);
  t.equal(new Set(subjects).size, subjects.length, 'each bucket recorded once');

  // Once the projector has caught up with the log's head (the worker is stopped: nothing is appended any
  // more), the read models must equal a rebuild.
  await s.readModels.waitForAll((await store.headPosition())!);
  const redis = new Redis(TEST_REDIS_URL);
  t.teardown(() => redis.disconnect());
  t.same(await dumpCurrent(redis, s.prefix), await dumpRebuild(t, redis, { store, redisUrl: TEST_REDIS_URL, prefix: s.prefix, partitions: s.config.projectorPartitions }), 'the read models equal a rebuild');
});
