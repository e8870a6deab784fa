// Settling an upload in one process: a job that misses the request's deadline answers 503 and its id is never
// usable, a client that leaves before the answer has its id abandoned too, a deadline that loses the race to
// the worker answers the id, and a job run twice (a retry) settles the file once.
import fs from 'node:fs';
import { Job, Queue } from 'bullmq';
import t from 'tap';
import { fileStream, loadFile } from '../src/files.ts';
import { newId } from '../src/ids.ts';
import { bullConnection, bullPrefix, queueName, type UploadJob } from '../workers/media/jobs.ts';
import { runUploadJob } from '../workers/media/worker.ts';
import type { Tag } from '../workers/media/policy.ts';
import { signup } from './helpers/http.ts';
import { get, png, upload } from './helpers/media.ts';
import { startTestService, type TestService } from './helpers/service.ts';
import { until } from './helpers/wait.ts';

function queueOf(s: TestService, tag: Tag): Queue {
  return new Queue(queueName(tag), { connection: bullConnection(s.config.redisUrl), prefix: bullPrefix(s.prefix) });
}

t.test('a job that misses the deadline: 503, and the id is never usable', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', UPLOAD_DEADLINE_MS: '300', MEDIA_TEST_DELAY_MS: '1500' });
  const alice = await signup(s);
  const queue = queueOf(s, 'avatars');
  t.teardown(() => queue.close());
  const r = await upload(s, alice.token, 'avatars', await png(64, 64), { filename: 'late.png' });
  t.equal(r.status, 503);
  t.equal(r.body.type, 'InternalError');
  const abandoned = await until('the abandonment event', async () => {
    for await (const e of s.store.readAll()) if (e.type === 'FileUploadAbandoned') return e;
    return undefined;
  });
  const fileId = (abandoned.data as { fileId: string }).fileId;
  t.match(abandoned.data, { uploaderId: alice.userId, tag: 'avatars' });
  // The worker finishes later, meets the abandonment and discards what it made.
  const job = await until('the job to finish', async () => ((await queue.getJobState(fileId)) === 'completed' ? Job.fromId(queue, fileId) : undefined));
  t.same(job?.returnvalue, { status: 'abandoned' });
  t.same((await s.store.readStream(fileStream(fileId))).map((e) => e.type), ['FileUploadAbandoned']);
  t.equal(await loadFile(s.deps, fileId), null);
  const use = await alice.api.patch('/users/@me', { avatar: fileId });
  t.equal(use.status, 404);
  t.equal(use.body.type, 'NotFound');
  t.equal((await get(`${s.mediaUrl}/avatars/${fileId}`)).status, 404);
  t.notOk(fs.existsSync(s.blobs.originalPath(fileId)), 'no processed blob');
  t.notOk(fs.existsSync(s.blobs.incomingPath(fileId)), 'no upload blob');
});

t.test('a client that leaves before the answer: its id is abandoned too', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', MEDIA_TEST_DELAY_MS: '1000' });
  const alice = await signup(s);
  const queue = queueOf(s, 'avatars');
  t.teardown(() => queue.close());
  const form = new FormData();
  form.append('file', new Blob([await png(32, 32)]), 'left.png');
  const abort = new AbortController();
  const sent = fetch(`${s.mediaUrl}/avatars`, { method: 'POST', body: form, headers: { 'X-Session-Token': alice.token }, signal: abort.signal });
  sent.catch(() => {});
  const [job] = await until('the job to be active', async () => {
    const active = await queue.getJobs(['active']);
    return active.length ? active : undefined;
  });
  abort.abort();
  const fileId = job!.id!;
  await until('the abandonment', async () => (await s.store.readStream(fileStream(fileId)))[0]);
  t.same((await s.store.readStream(fileStream(fileId))).map((e) => e.type), ['FileUploadAbandoned']);
  const done = await until('the job to finish', async () => ((await queue.getJobState(fileId)) === 'completed' ? Job.fromId(queue, fileId) : undefined));
  t.same(done?.returnvalue, { status: 'abandoned' });
  t.equal((await alice.api.patch('/users/@me', { avatar: fileId })).status, 404);
});

t.test('settling an upload is idempotent', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const alice = await signup(s);
  const deps = { config: s.config, log: s.log, store: s.store, blobs: s.blobs };

  t.test('a deadline that loses to the worker answers the id', async (t) => {
    const r = await upload(s, alice.token, 'avatars', await png(30, 30), { filename: 'won.png' });
    const job: UploadJob = { fileId: r.body.id, tag: 'avatars', filename: 'won.png', uploaderId: alice.userId, requestId: 'late' };
    const outcome = await s.uploads!.abandon(job);
    t.match(outcome, { status: 'uploaded', position: /^\d+$/ });
    t.same((await s.store.readStream(fileStream(job.fileId))).map((e) => e.type), ['FileUploaded']);
    t.equal((await alice.api.patch('/users/@me', { avatar: job.fileId })).status, 200, 'the id stays usable');
  });

  t.test('a job that fails for good (not a refusal) is a 500 InternalError and settles nothing', async (t) => {
    const job: UploadJob = { fileId: newId(), tag: 'icons', filename: 'gone.png', uploaderId: alice.userId, requestId: 'lost' };
    // No blob in incoming/: the worker cannot process it.
    const err = await s.uploads!.process(job).then(
      () => undefined,
      (e: unknown) => e as { status?: number; body?: { type: string } },
    );
    t.match(err, { status: 500, body: { type: 'InternalError' } });
    t.same(await s.store.readStream(fileStream(job.fileId)), []);
  });

  t.test('a job run again (a retry) or twice at once settles the file once', async (t) => {
    const fileId = newId();
    fs.writeFileSync(s.blobs.incomingPath(fileId), await png(40, 40));
    const job: UploadJob = { fileId, tag: 'emojis', filename: 'twice.png', uploaderId: alice.userId, requestId: 'retry' };
    const [a, b] = await Promise.all([runUploadJob(deps, job), runUploadJob(deps, job)]);
    t.equal(a.status, 'uploaded');
    t.same(a, b, 'both runs report the same event');
    const again = await runUploadJob(deps, job);
    t.same(again, a, 'a later retry does no work and reports it too');
    t.same((await s.store.readStream(fileStream(fileId))).map((e) => e.type), ['FileUploaded']);
    t.notOk(fs.existsSync(s.blobs.incomingPath(fileId)));
    t.ok(fs.existsSync(s.blobs.originalPath(fileId)));
  });
});
