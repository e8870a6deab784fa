/**
 * Crash: many clients send messages (half of them with an attachment) while the service process is
 * killed with SIGKILL at a random moment. After a restart on the same data directory every acknowledged
 * message is present exactly once, nothing is half-applied (an attachment is used exactly when a message
 * carries it), and the read models equal a rebuild from zero.
 */
import t from 'tap';
import { Redis } from 'ioredis';
import { SqliteEventStore } from '../../src/eventstore/sqlite.ts';
import { controlKeys, partitionKeys } from '../../src/readmodel/keys.ts';
import { dumpCurrent, dumpRebuild } from '../helpers/servers.ts';
import { deletePrefix, tempDir, TEST_REDIS_URL, uniquePrefix } from '../helpers/service.ts';
import { client, signup, type TestUser } from '../helpers/http.ts';
import { jpeg, upload } from '../helpers/media.ts';
import { exited, startRoleProcess } from '../helpers/processes.ts';
import { until } from '../helpers/wait.ts';

async function serving(apiUrl: string, token: string): Promise<void> {
  const end = Date.now() + 60_000;
  for (;;) {
    const r = await fetch(`${apiUrl}/users/@me`, { headers: { 'X-Session-Token': token } }).catch(() => null);
    if (r?.status === 200) return;
    if (Date.now() > end) throw new Error('not serving');
    await new Promise((res) => setTimeout(res, 100));
  }
}

t.test('SIGKILL during message sends', async (t) => {
  const dir = tempDir(t);
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const env = { API_PORT: '0', MEDIA_PORT: '0', HOST: '127.0.0.1', DATA_DIR: dir, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix, RATE_LIMITS: 'off', LOG_LEVEL: 'info' };
  let svc = await startRoleProcess(t, env);
  const base = { apiUrl: svc.apiUrl!, mediaUrl: svc.mediaUrl! };
  const owner = await signup(base);
  await serving(base.apiUrl, owner.token);
  const server = await owner.api.post('/servers/create', { name: 'crash' });
  const channelId = server.body.channels[0]._id as string;
  const invite = await owner.api.post(`/channels/${channelId}/invites`);
  const senders: TestUser[] = [owner];
  for (let i = 0; i < 5; i++) {
    const u = await signup(base);
    await u.api.post(`/invites/${invite.body._id}`);
    senders.push(u);
  }
  // Each sender uploads a few attachments before the crash.
  const image = await jpeg(64, 64);
  const files = new Map<string, string[]>();
  for (const u of senders) {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await upload(base, u.token, 'attachments', image, { filename: 'a.jpg', contentType: 'image/jpeg' });
      t.equal(r.status, 200);
      ids.push((r.body as { id: string }).id);
    }
    files.set(u.userId, ids);
  }

  const acked = new Map<string, { id: string; content: string; attachment?: string }>();
  let stop = false;
  const sendLoops = senders.map(async (u, w) => {
    let n = 0;
    const myFiles = [...files.get(u.userId)!];
    while (!stop) {
      const content = `w${w}-m${n++}`;
      const attachment = n % 2 === 0 ? myFiles.shift() : undefined;
      const body: Record<string, unknown> = { content };
      if (attachment) body.attachments = [attachment];
      const r = await client(base, u.token)
        .post(`/channels/${channelId}/messages`, body, { headers: { 'Idempotency-Key': content }, skipOpenApi: true })
        .catch(() => null);
      if (r?.status === 200) acked.set(content, { id: r.body._id, content, ...(attachment ? { attachment } : {}) });
      else if (r === null) break; // the process is gone
    }
  });
  // The kill lands at a random moment while sends are under way: once some are acknowledged (counted, not
  // assumed from 0.8-2.3 s of wall-clock time, which a loaded machine spent without one), after a random delay.
  await until('messages acknowledged before the kill', () => acked.size > 5).catch(() => undefined);
  await new Promise((r) => setTimeout(r, Math.random() * 1500));
  svc.child.kill('SIGKILL');
  stop = true;
  // The child may be gone before the send loops notice: wait on its state, not on an event already emitted.
  await Promise.all([exited(svc.child), ...sendLoops]);
  t.ok(acked.size > 5, `${acked.size} messages acknowledged before the kill`);

  svc = await startRoleProcess(t, env);
  await serving(svc.apiUrl!, owner.token);
  const api = client({ apiUrl: svc.apiUrl! }, owner.token);
  const store = new SqliteEventStore(`${dir}/events.sqlite`);
  t.teardown(() => store.close());
  // Read only once the restarted projector has caught up with what was appended but not yet projected (and
  // so not acknowledged) when the process died: such a send's FileAttached is in the log, and its message
  // must be read back beside it, not before it is projected.
  const redis = new Redis(TEST_REDIS_URL);
  t.teardown(() => redis.disconnect());
  const head = (await store.headPosition())!;
  const cpKey = partitionKeys(prefix, Number(await redis.get(controlKeys(prefix).generation)), 1, 0).checkpoint;
  for (const end = Date.now() + 60_000; BigInt((await redis.get(cpKey)) ?? '0') < head; ) {
    if (Date.now() > end) throw new Error('the projector did not catch up after the restart');
    await new Promise((r) => setTimeout(r, 50));
  }
  const seen: Array<{ _id: string; content: string; attachments?: Array<{ _id: string }> }> = [];
  let before: string | undefined;
  for (;;) {
    const page = await api.get(`/channels/${channelId}/messages?limit=100${before ? `&before=${before}` : ''}`);
    t.equal(page.status, 200);
    if (page.body.length === 0) break;
    seen.push(...page.body);
    before = page.body[page.body.length - 1]._id;
  }
  const byContent = new Map<string, number>();
  for (const m of seen) byContent.set(m.content, (byContent.get(m.content) ?? 0) + 1);
  const missing = [...acked.keys()].filter((c) => !byContent.has(c));
  t.same(missing, [], 'every acknowledged message is present');
  t.same([...byContent].filter(([, n]) => n > 1), [], 'no message is present twice');
  for (const a of acked.values()) {
    const m = seen.find((x) => x.content === a.content)!;
    t.equal(m?._id, a.id, `${a.content} kept its id`);
    if (a.attachment) t.same(m?.attachments?.map((f) => f._id), [a.attachment], `${a.content} kept its attachment`);
  }

  // Nothing half-applied: a file is used exactly when a message carries it.
  const carried = new Set(seen.flatMap((m) => (m.attachments ?? []).map((f) => f._id)));
  for (const ids of files.values()) {
    for (const id of ids) {
      const events = await store.readStream(`file-${id}`);
      const used = events.filter((e) => e.type === 'FileAttached').length;
      t.equal(used, carried.has(id) ? 1 : 0, `file ${id} used ${used} time(s), carried: ${carried.has(id)}`);
    }
  }

  // And the read models equal a rebuild from zero.
  t.same(await dumpCurrent(redis, prefix), await dumpRebuild(t, redis, { store, redisUrl: TEST_REDIS_URL, prefix, partitions: 1, dataDir: dir }), 'the same keys and values as a rebuild');
  svc.child.kill('SIGTERM');
  await exited(svc.child);
});
