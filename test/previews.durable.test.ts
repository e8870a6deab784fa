/**
 * Link previews are produced from the event log, never from the request (issue 20): the send's event says
 * `previews: true` when its content has links and the sender holds SendEmbeds; the worker role's
 * subscription (checkpoint `previews:cp`) turns it into a job. So an API process that never sees the queue,
 * a worker that was down when the message was sent, and a worker killed in the middle of a job lose nothing:
 * the preview lands exactly once.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { Queue } from 'bullmq';
import { messageStream } from '../src/domain/message/events.ts';
import { Permission } from '../src/permissions/bits.ts';
import { PREVIEW_QUEUE } from '../src/previews/queue.ts';
import { bullConnection, bullPrefix } from '../workers/media/jobs.ts';
import { signup } from './helpers/http.ts';
import { startRoleProcess } from './helpers/processes.ts';
import { createServer, join } from './helpers/servers.ts';
import { startTestService, waitServing, TEST_REDIS_URL } from './helpers/service.ts';
import { until, WAIT_MS } from './helpers/wait.ts';

/** A page server on loopback; `hold` makes it keep requests open until released. */
async function pageServer(t: { teardown(fn: () => unknown): void }) {
  let hold = false;
  let requests = 0;
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    requests++;
    if (hold) return void held.push(res);
    res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html><head><title>Durable page</title><meta property="og:title" content="Durable page"><meta property="og:description" content="from the log"></head></html>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => {
    for (const res of held) res.destroy();
    server.close();
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/page`,
    get requests() {
      return requests;
    },
    hold(on: boolean) {
      hold = on;
    },
  };
}

t.test('previews come from the log: the API never queues, a worker down at send time catches up', async (t) => {
  const page = await pageServer(t);
  const env = { RATE_LIMITS: 'off', OUTBOUND_ALLOW_PRIVATE: '127.0.0.0/8' };
  const api = await startTestService(t, { ...env, ROLES: 'api,projector' });
  const shared = { ...env, DATA_DIR: api.dataDir, REDIS_PREFIX: api.prefix };
  const owner = await signup(api);
  const member = await signup(api);
  const server = await createServer(owner);
  await join(owner, server.general, member);
  const queue = new Queue(PREVIEW_QUEUE, { connection: bullConnection(TEST_REDIS_URL), prefix: bullPrefix(api.prefix, TEST_REDIS_URL) });
  t.teardown(() => queue.close());
  const jobs = async () => Object.values(await queue.getJobCounts()).reduce((a, b) => a + b, 0);

  // The event carries the decision: links and SendEmbeds → previews: true.
  const sent = await owner.api.post(`/channels/${server.general}/messages`, { content: `look ${page.url}` });
  t.equal(sent.status, 200);
  const [event] = await api.store.readStream(messageStream(sent.body._id));
  t.equal((event!.data as { previews?: boolean }).previews, true, 'the send says there are previews');
  const plain = await owner.api.post(`/channels/${server.general}/messages`, { content: 'no links here' });
  t.equal(((await api.store.readStream(messageStream(plain.body._id)))[0]!.data as { previews?: boolean }).previews, undefined, 'no links: no previews');
  const denied = BigInt((await owner.api.get(`/servers/${server.id}`)).body.default_permissions) & ~Permission.SendEmbeds;
  t.equal((await owner.api.put(`/servers/${server.id}/permissions/default`, { permissions: Number(denied) })).status, 200);
  const noEmbeds = await member.api.post(`/channels/${server.general}/messages`, { content: `look ${page.url}` });
  t.equal(noEmbeds.status, 200);
  t.equal(((await api.store.readStream(messageStream(noEmbeds.body._id)))[0]!.data as { previews?: boolean }).previews, undefined, 'without SendEmbeds: no previews');

  await new Promise((r) => setTimeout(r, 300));
  t.equal(await jobs(), 0, 'the API process queued nothing');

  // A worker starts (at the log's head: history is never previewed), stops; then a message is sent.
  const first = await startTestService(t, { ...shared, ROLES: 'worker' });
  await first.previewWorker!.caughtUp;
  await first.stop();
  const later = await owner.api.post(`/channels/${server.general}/messages`, { content: `while no worker ran ${page.url}` });
  t.equal(later.status, 200);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(await jobs(), 0, 'no worker, no job');

  // The next worker catches up from the checkpoint: the message sent while none ran gets its preview.
  const second = await startTestService(t, { ...shared, ROLES: 'worker' });
  await second.previewWorker!.caughtUp;
  const appended = async (id: string) => (await api.store.readStream(messageStream(id))).filter((e) => e.type === 'MessageAppended');
  await until('the preview of the message sent while no worker ran', async () => (await appended(later.body._id)).length === 1, WAIT_MS);
  t.equal(((await appended(later.body._id))[0]!.data as { embeds: Array<{ title?: string }> }).embeds[0]!.title, 'Durable page');
  t.equal((await appended(sent.body._id)).length, 0, 'messages before the first worker started are history: never previewed');
  t.equal((await appended(noEmbeds.body._id)).length, 0);
  await waitServing(api);
});

t.test('a preview worker killed mid-job loses nothing: another takes the job, the preview lands once', async (t) => {
  const page = await pageServer(t);
  const env = { RATE_LIMITS: 'off', OUTBOUND_ALLOW_PRIVATE: '127.0.0.0/8', PREVIEW_JOB_LOCK_MS: '1500', PREVIEW_ATTEMPTS: '3' };
  const api = await startTestService(t, { ...env, ROLES: 'api,projector' });
  const shared = { ...env, DATA_DIR: api.dataDir, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: api.prefix, LOG_LEVEL: 'info', API_PORT: '0', MEDIA_PORT: '0', HOST: '127.0.0.1' };
  const owner = await signup(api);
  const server = await createServer(owner);

  // The first worker process takes the job and hangs in the fetch: then it is killed.
  page.hold(true);
  const doomed = await startRoleProcess(t, { ...shared, ROLES: 'worker' });
  // Its producer has read the log's head (it keeps it as the checkpoint at once): the message below is new.
  await until('the worker\'s checkpoint', async () => (await api.redis.exists(`${api.prefix}previews:cp`)) === 1);
  const sent = await owner.api.post(`/channels/${server.general}/messages`, { content: `survive ${page.url}` });
  t.equal(sent.status, 200);
  await until('the first worker is fetching', async () => page.requests > 0, WAIT_MS);
  await doomed.stop('SIGKILL');
  page.hold(false);

  // Another worker takes the stalled job once its lock expired.
  await startRoleProcess(t, { ...shared, ROLES: 'worker' });
  const appended = async () => (await api.store.readStream(messageStream(sent.body._id))).filter((e) => e.type === 'MessageAppended');
  await until('the preview after the kill', async () => (await appended()).length === 1, WAIT_MS);
  await new Promise((r) => setTimeout(r, 2000));
  t.equal((await appended()).length, 1, 'appended exactly once');
  t.ok(page.requests >= 2, `the page was fetched again by the second worker (${page.requests} requests)`);
  t.equal(((await appended())[0]!.data as { embeds: Array<{ title?: string }> }).embeds[0]!.title, 'Durable page');
});
