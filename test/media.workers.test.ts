// Media workers as processes: a worker killed with SIGKILL mid-job loses the job to the next worker, and
// several worker processes share the queues.
import fs from 'node:fs';
import { Job, Queue } from 'bullmq';
import t from 'tap';
import { fileStream } from '../src/files.ts';
import { bullConnection, bullPrefix, queueName } from '../workers/media/jobs.ts';
import type { Tag } from '../workers/media/policy.ts';
import { signup } from './helpers/http.ts';
import { get, jpeg, png, upload } from './helpers/media.ts';
import { startRoleProcess, type RoleProcess } from './helpers/processes.ts';
import { startTestService, type Teardownable, type TestService } from './helpers/service.ts';
import { until } from './helpers/wait.ts';

/** Starts `ROLES=worker` in a child process with the service's environment; resolves once it started. */
function startWorkerProcess(t: Teardownable, s: TestService, env: Record<string, string>): Promise<RoleProcess> {
  return startRoleProcess(t, {
    ROLES: 'worker',
    REDIS_URL: s.config.redisUrl,
    REDIS_PREFIX: s.prefix,
    DATA_DIR: s.dataDir,
    LOG_LEVEL: 'info',
    MEDIA_JOB_LOCK_MS: '1000',
    ...env,
  });
}

function queueOf(s: TestService, tag: Tag): Queue {
  return new Queue(queueName(tag), { connection: bullConnection(s.config.redisUrl), prefix: bullPrefix(s.prefix) });
}

t.test('worker processes', async (t) => {
  // The upload pending over a worker's kill must outlast the start of the next worker process, which took
  // minutes on a loaded machine: the 30 s UPLOAD_DEADLINE_MS answered 503 first (issue 40). The deadline has
  // its own test (media.deadline).
  const s = await startTestService(t, { ROLES: 'api,media,projector', RATE_LIMITS: 'off', UPLOAD_DEADLINE_MS: '600000' });
  const alice = await signup(s);
  const avatars = queueOf(s, 'avatars');
  const attachments = queueOf(s, 'attachments');
  t.teardown(() => Promise.all([avatars.close(), attachments.close()]));

  t.test('a worker killed with SIGKILL mid-job: the job completes once another worker runs', async (t) => {
    const a = await startWorkerProcess(t, s, { MEDIA_TEST_DELAY_MS: '60000' });
    let answered = false;
    const pending = upload(s, alice.token, 'avatars', await png(200, 200), { filename: 'crash.png' }).finally(() => (answered = true));
    const [job] = await until('the job to be active', async () => {
      const active = await avatars.getJobs(['active']);
      return active.length ? active : undefined;
    });
    await a.stop('SIGKILL');
    await new Promise((r) => setTimeout(r, 1500));
    t.notOk(answered, 'no answer while no worker runs');
    await startWorkerProcess(t, s, {});
    const r = await pending;
    t.equal(r.status, 200);
    t.equal(r.body.id, job!.id, 'the job id is the file id');
    const events = await s.store.readStream(fileStream(r.body.id));
    t.same(events.map((e) => e.type), ['FileUploaded'], 'processed into one event');
    const me = await alice.api.patch('/users/@me', { avatar: r.body.id });
    t.equal(me.status, 200);
    t.equal((await get(`${s.mediaUrl}/avatars/${r.body.id}`)).status, 200);
    t.same(fs.readdirSync(s.blobs.incomingDir), []);
  });

  t.test('several worker processes consume the same queues', async (t) => {
    const env = { MEDIA_TEST_DELAY_MS: '300', MEDIA_CONCURRENCY_DEFAULT: '1' };
    await Promise.all([startWorkerProcess(t, s, env), startWorkerProcess(t, s, env)]);
    const img = await jpeg(100, 80);
    const results = await Promise.all(Array.from({ length: 4 }, (_, i) => upload(s, alice.token, 'attachments', img, { filename: `p${i}.jpg` })));
    t.same(results.map((r) => r.status), [200, 200, 200, 200]);
    const by = new Set<string | undefined>();
    for (const r of results) by.add((await Job.fromId(attachments, r.body.id))?.processedBy);
    t.ok(by.size >= 2, `processed by ${[...by].join(', ')}`);
  });
});
