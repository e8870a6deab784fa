/**
 * Retention (issue 39 part 1), end to end on the real service (SQLite log, Redis read models, HTTP, WebSocket)
 * with an injected clock that the test moves forward: the admin routes (401 / 403 / 2xx, validation, audit),
 * an expired message gone from REST, history, pins, search, reply quotes, the gateway (MessageDelete), link
 * previews, its attachment's bytes and every Redis key; a hold that protects and a lift that releases; a
 * policy per server, per channel and for DMs and groups; the log file itself (a copy read row by row and byte
 * by byte: no plain content, the sealed values do not open); the compliance export marking what was erased;
 * and a rebuild of the read models from the erased log equal to the live ones.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import { runAdmin } from '../src/cli/accountsAdmin.ts';
import { complianceRows, type ComplianceRow } from '../src/compliance/export.ts';
import { sweepRetention, type RetentionSweepDeps } from '../src/compliance/retention.ts';
import { uploadJobs } from '../src/compliance/uploadJobs.ts';
import { CONTENT_SUBJECT, parseContentSubject } from '../src/personal/fields.ts';
import type { PersonalDataStore } from '../src/personal/store.ts';
import { isSealed } from '../src/personal/cipher.ts';
import { cacheEmbed, cachedEmbed } from '../src/previews/generate.ts';
import { controlKeys } from '../src/readmodel/keys.ts';
import { scanKeys } from '../src/redis.ts';
import { signup, request, type TestUser } from './helpers/http.ts';
import { uploadImage } from './helpers/messages.ts';
import { get } from './helpers/media.ts';
import { createServer, dumpCurrent, dumpRebuild, join } from './helpers/servers.ts';
import { startTestService, tempDir } from './helpers/service.ts';
import { until } from './helpers/wait.ts';
import { connectReady } from './helpers/ws.ts';

const HOUR = 3_600_000;
// The service's clock: real time plus an offset the test moves forward. It starts 5 s into an hour, so the
// messages sent at the start share one hour-wide bucket.
const start = Date.now();
let offset = Math.ceil(start / HOUR) * HOUR + 5_000 - start;
const clock = () => Date.now() + offset;

/** Every file under `dir` whose bytes equal `bytes`. */
function filesWithBytes(dir: string, bytes: Buffer): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const p = path.join(e.parentPath, e.name);
    if (fs.statSync(p).size === bytes.length && fs.readFileSync(p).equals(bytes)) out.push(p);
  }
  return out;
}

t.test('retention erases expired messages everywhere a reader can reach them, and from the log', async (t) => {
  const s = await startTestService(t, { RETENTION_SWEEP_INTERVAL_MS: '0', RETENTION_BUCKET_SECONDS: '3600', FILE_SWEEP_INTERVAL_MS: '0', RATE_LIMITS: 'off' }, { now: clock });
  const store = s.store as PersonalDataStore;
  const sweepDeps: RetentionSweepDeps = {
    store,
    readModels: s.readModels,
    blobs: s.blobs,
    log: s.log,
    now: clock,
    previews: { redis: s.redis, prefix: s.prefix },
    uploadJobs: uploadJobs(s.config.redisUrl, s.prefix),
    liveEvents: { redis: s.redis, keys: Array.from({ length: s.config.projectorPartitions }, (_, i) => controlKeys(s.prefix).clientEvents(s.config.projectorPartitions, i)) },
  };
  t.teardown(() => sweepDeps.uploadJobs!.close());
  const [admin, mod, alice, bob] = [await signup(s), await signup(s), await signup(s), await signup(s)];
  for (const [u, role] of [[admin, 'admin'], [mod, 'moderator']] as const) {
    t.equal(await runAdmin(['grant', u.userId, '--role', role], { store: s.store, print: () => {} }), 0);
    await until(`${role} granted`, async () => (await s.readModels.hgetJson('instance:staff', u.userId)) === role);
  }
  const server = await createServer(alice);
  await join(alice, server.general, bob);
  const other = (await alice.api.post(`/servers/${server.id}/channels`, { name: 'kept', type: 'Text' })).body._id as string;
  const group = await alice.api.post('/channels/create', { name: 'group', users: [] });
  t.equal(group.status, 200, 'group created');
  const groupId = group.body._id as string;

  await t.test('the admin routes: who may, what is valid, what is audited', async (t) => {
    const anon = await request(s.apiUrl, 'GET', '/admin/retention');
    t.equal(anon.status, 401, 'no session: 401');
    for (const [who, u] of [['a user', alice], ['a moderator', mod]] as const) {
      const list = await u.api.get('/admin/retention');
      t.same([list.status, list.body.type], [403, 'NotPrivileged'], `${who}: 403 on the list`);
      for (const p of ['/admin/retention/instance', `/admin/retention/servers/${server.id}`, `/admin/retention/channels/${other}`]) {
        const r = await u.api.put(p, { max_age_seconds: 60 });
        t.same([r.status, r.body.type], [403, 'NotPrivileged'], `${who}: 403 on PUT ${p.split('/')[3]}`);
      }
    }
    const noSession = await request(s.apiUrl, 'PUT', '/admin/retention/instance', { body: { max_age_seconds: 60 } });
    t.equal(noSession.status, 401, 'no session: 401 on PUT');
    for (const bad of [{ max_age_seconds: 0 }, { max_age_seconds: -5 }, { max_age_seconds: 1.5 }, { max_age_seconds: '60' }, {}, { max_age_seconds: 60, extra: 1 }, { max_age_seconds: 4_000_000_000 }]) {
      const r = await admin.api.put('/admin/retention/instance', bad);
      t.same([r.status, r.body.type], [400, 'FailedValidation'], `400 for ${JSON.stringify(bad)}`);
    }
    const unknown = await admin.api.put(`/admin/retention/servers/01ARZ3NDEKTSV4RRFFQ69G5FAV`, { max_age_seconds: 60 });
    t.same([unknown.status, unknown.body.type], [404, 'NotFound'], 'an unknown server: 404');
    const notId = await admin.api.put('/admin/retention/channels/nope', { max_age_seconds: 60 });
    t.equal(notId.status, 404, 'not an id: 404');
    const dm = await admin.api.put(`/admin/retention/channels/${groupId}`, { max_age_seconds: 60 });
    t.same([dm.status, dm.body.type], [400, 'InvalidOperation'], 'a group follows the instance default: no override');
    const headBefore = await s.store.headPosition();
    const refused = await alice.api.put('/admin/retention/instance', { max_age_seconds: 60 });
    t.equal(refused.status, 403);
    t.equal(await s.store.headPosition(), headBefore, 'a refused change appends nothing');

    const set = await admin.api.put(`/admin/retention/servers/${server.id}`, { max_age_seconds: 600 }, { headers: { 'X-Audit-Log-Reason': 'keep ten minutes' } });
    t.equal(set.status, 200);
    t.same(set.body, { instance: { max_age_seconds: null }, servers: [{ id: server.id, max_age_seconds: 600 }], channels: [] }, 'the answer shows the change');
    const ch = await admin.api.put(`/admin/retention/channels/${other}`, { max_age_seconds: 100_000 });
    t.same(ch.body.channels, [{ id: other, max_age_seconds: 100_000 }]);
    const again = await admin.api.put(`/admin/retention/channels/${other}`, { max_age_seconds: 100_000 });
    t.equal(again.status, 200, 'setting the same policy again is fine');
    const list = await admin.api.get('/admin/retention');
    t.same(list.body, { instance: { max_age_seconds: null }, servers: [{ id: server.id, max_age_seconds: 600 }], channels: [{ id: other, max_age_seconds: 100_000 }] });
    const audit = await admin.api.get('/admin/audit');
    const entries = (audit.body as Array<Record<string, any>>).filter((e) => e.action === 'RetentionPolicySet');
    t.same(
      entries.map((e) => [e.actor, e.target, e.details, e.reason]),
      [
        [admin.userId, { type: 'Channel', id: other }, { max_age_seconds: 100_000 }, null],
        [admin.userId, { type: 'Server', id: server.id }, { max_age_seconds: 600 }, 'keep ten minutes'],
      ],
      'each change is one audit entry (newest first) with actor, target and reason; an unchanged set is none',
    );
  });

  // The messages: alice's with an attachment, a text embed and a link; bob's reply to it (held later); one in
  // the channel with a longer override; one in the group (the instance default, forever for now).
  const fileBytes = Buffer.from(await (await import('./helpers/media.ts')).png(13, 7, { r: 201, g: 3, b: 99 }));
  const fileId = await uploadImage(s, alice, 'attachments', { bytes: fileBytes, filename: 'zulu-secret-plans.png' });
  const link = `https://retention-${process.pid}.example.invalid/page`;
  const m1 = await alice.api.post(`/channels/${server.general}/messages`, {
    content: `alpha secret words ${link}`,
    attachments: [fileId],
    embeds: [{ title: 'echo secret title', description: 'foxtrot secret description' }],
  });
  t.equal(m1.status, 200, 'sent with attachment and embed');
  const m1Id = m1.body._id as string;
  const m2Id = (await bob.api.post(`/channels/${server.general}/messages`, { content: 'bravo reply words', replies: [{ id: m1Id, mention: false }] })).body._id as string;
  t.equal((await alice.api.post(`/channels/${server.general}/messages/${m1Id}/pin`)).status, 204, 'pinned');
  const m3Id = (await alice.api.post(`/channels/${other}/messages`, { content: 'charlie kept words' })).body._id as string;
  const m4Id = (await alice.api.post(`/channels/${groupId}/messages`, { content: 'delta group words' })).body._id as string;
  t.ok(m2Id && m3Id && m4Id, 'all sent');
  await until('the attachment served', async () => (await get(`${s.mediaUrl}/attachments/${fileId}/zulu-secret-plans.png`)).status === 200);
  // The link's preview job runs (the fetch fails: "no preview" is cached), then a real embed is cached for it.
  const previewCtx = { redis: s.redis, prefix: s.prefix, policy: undefined as never, limits: { cacheTtlSeconds: 86_400, cacheMax: 1000 } as never };
  await until('the preview job ran', async () => (await cachedEmbed(link, previewCtx)) !== undefined);
  await cacheEmbed(link, { type: 'Website', url: link, title: 'golf cached preview' }, previewCtx);

  // Before anything expires: the log holds no content in plain text already.
  const logFile = path.join(s.dataDir, 'events.sqlite');
  const ws = await connectReady(s, alice.token);
  t.teardown(() => ws.close());

  // Legal holds through their admin routes (issue 39 part 2): the sweep reads the standing ones from the read model.
  const holdIds = new Map<string, string>();
  const hold = async (name: string, target: { type: string; id: string }) => {
    const r = await admin.api.post('/admin/holds', { name, reason: 'retention test', target });
    if (r.status !== 200) throw new Error(`placing hold ${name}: ${r.status} ${JSON.stringify(r.body)}`);
    holdIds.set(name, r.body._id as string);
  };
  const lift = async (name: string) => {
    const r = await admin.api.post(`/admin/holds/${holdIds.get(name)}/lift`, {});
    if (r.status !== 200) throw new Error(`lifting hold ${name}: ${r.status} ${JSON.stringify(r.body)}`);
  };

  await t.test('nothing expires before its time', async (t) => {
    offset += 5 * 60_000;
    const r = await sweepRetention(sweepDeps);
    t.same(r.erased, [], 'five minutes into a ten-minute policy: nothing erased');
    t.equal((await alice.api.get(`/channels/${server.general}/messages/${m1Id}`)).status, 200);
  });

  await t.test('a hold protects; the others go from every reader', async (t) => {
    await hold('h1', { type: 'user', id: bob.userId });
    offset += 2 * HOUR;
    const r = await sweepRetention(sweepDeps);
    t.ok(r.erased.includes(m1Id), 'alice’s message erased');
    t.same(r.held, [m2Id], 'bob’s message held');
    t.same(r.shredded, [], 'the bucket holding a held message keeps its key');
    t.notOk(r.erased.includes(m3Id) || r.erased.includes(m4Id), 'the longer override and the group (forever) are kept');

    const fetched = await alice.api.get(`/channels/${server.general}/messages/${m1Id}`);
    t.same([fetched.status, fetched.body.type], [404, 'NotFound'], 'REST: the message is gone');
    const history = await alice.api.get(`/channels/${server.general}/messages?limit=100`);
    const ids = (history.body as Array<{ _id: string; system?: unknown }>).map((m) => m._id);
    t.notOk(ids.includes(m1Id), 'not in the history');
    t.ok(ids.includes(m2Id), 'the held reply is');
    t.notOk((history.body as Array<{ system?: unknown }>).some((m) => m.system), 'the pin’s system message expired too');
    const reply = await alice.api.get(`/channels/${server.general}/messages/${m2Id}`);
    t.same(reply.body.replies, [m1Id], 'the reply keeps the id it quoted (as after a deletion)…');
    t.equal((await alice.api.get(`/channels/${server.general}/messages/${reply.body.replies[0]}`)).status, 404, '…whose quote no longer resolves');
    const pins = await alice.api.post(`/channels/${server.general}/search`, { pinned: true });
    t.same(pins.body, [], 'not in the pins');
    await until('the search index dropped it', async () => ((await alice.api.post(`/channels/${server.general}/search`, { query: 'alpha' })).body as unknown[]).length === 0);
    const held = await alice.api.post(`/channels/${server.general}/search`, { query: 'bravo' });
    t.same((held.body as Array<{ _id: string }>).map((m) => m._id), [m2Id], 'the held message is still found');
    const del = await ws.waitFor((e) => e.type === 'MessageDelete' && e.id === m1Id);
    t.same(del, { type: 'MessageDelete', id: m1Id, channel: server.general }, 'the gateway: Stoat’s MessageDelete');
    t.equal((await get(`${s.mediaUrl}/attachments/${fileId}/zulu-secret-plans.png`)).status, 404, 'the attachment is not served');
    t.same(filesWithBytes(path.join(s.dataDir, 'files'), fileBytes), [], 'its bytes are gone from the disk');
    t.equal(await cachedEmbed(link, previewCtx), undefined, 'the cached link preview of its URL is gone');
    // No Redis key of this service holds the erased words (read models, client-event streams, queues).
    const found: string[] = [];
    await scanKeys(s.redis, `${s.prefix}*`, async (batch) => {
      for (const key of batch) {
        const type = await s.redis.type(key);
        const dump = type === 'string' ? await s.redis.get(key) : type === 'hash' ? JSON.stringify(await s.redis.hgetall(key)) : type === 'zset' ? JSON.stringify(await s.redis.zrange(key, 0, -1)) : type === 'list' ? JSON.stringify(await s.redis.lrange(key, 0, -1)) : type === 'set' ? JSON.stringify(await s.redis.smembers(key)) : type === 'stream' ? JSON.stringify(await s.redis.xrange(key, '-', '+')) : '';
        for (const word of ['alpha secret', 'echo secret', 'foxtrot secret', 'zulu-secret', 'golf cached']) if (dump?.includes(word)) found.push(`${key}: ${word}`);
      }
    });
    t.same(found, [], 'no Redis key holds the erased content');
    // The log still opens it while the bucket's key is kept for the held message.
    const [sent] = await store.readStream(`message-${m1Id}`, { maxCount: 1 });
    t.equal((sent!.data as any).message.content, `alpha secret words ${link}`, 'the bucket key is kept while a held message needs it');
  });

  await t.test('a lift releases: the next sweep erases it and destroys the bucket key', async (t) => {
    await lift('h1');
    const r = await sweepRetention(sweepDeps);
    t.same(r.erased, [m2Id], 'the lifted message is erased');
    t.equal(r.shredded.length, 1, 'its bucket key is destroyed');
    t.equal(parseContentSubject(r.shredded[0]!)?.channel, server.general);
    t.equal((await alice.api.get(`/channels/${server.general}/messages/${m2Id}`)).status, 404);
    t.equal((await alice.api.get(`/channels/${other}/messages/${m3Id}`)).status, 200, 'the channel override keeps its message');
    t.equal((await alice.api.get(`/channels/${groupId}/messages/${m4Id}`)).status, 200, 'the group keeps its message (instance default: forever)');
    const again = await sweepRetention(sweepDeps);
    t.same([again.erased, again.shredded, again.conflicts], [[], [], 0], 'a second run finds nothing to do (idempotent)');

    // Read through the boundary: the send is marked erased, id, author, channel and time stay.
    const events = await store.readStream(`message-${m1Id}`);
    const sent = events[0]!.data as any;
    t.same([sent.erased, sent.message.content, sent.message.embeds, sent.message._id, sent.message.author, sent.message.channel], [true, undefined, undefined, m1Id, alice.userId, server.general]);
    t.same(sent.message.attachments.map((a: any) => [a._id, a.filename]), [[fileId, undefined]], 'the attachment’s id stays, its name is gone');
    t.same(events.map((e) => e.type), ['MessageSent', 'MessagePinned', 'MessageErased']);
  });

  await t.test('the group follows the instance default', async (t) => {
    const set = await admin.api.put('/admin/retention/instance', { max_age_seconds: 600 });
    t.equal(set.status, 200);
    const r = await sweepRetention(sweepDeps);
    t.ok(r.erased.includes(m4Id), 'the group message is erased under the instance default');
    t.notOk(r.erased.includes(m3Id), 'the channel override still wins over the server and the instance');
    t.equal((await alice.api.get(`/channels/${groupId}/messages/${m4Id}`)).status, 404);
  });

  await t.test('a copy of the log file: no content in plain text, nothing of it opens', async (t) => {
    const dir = tempDir(t, 'retention-copy');
    const copy = path.join(dir, 'events.sqlite');
    const live = new Database(logFile, { readonly: true });
    await live.backup(copy);
    live.close();
    const bytes = fs.readFileSync(copy);
    for (const word of ['alpha secret', 'bravo reply', 'delta group', 'echo secret', 'foxtrot secret', 'zulu-secret-plans', 'charlie kept']) {
      t.equal(bytes.indexOf(Buffer.from(word)), -1, `the file's bytes do not hold "${word}"`);
    }
    const db = new Database(copy, { readonly: true });
    t.teardown(() => db.close());
    const cols = (db.prepare("SELECT name FROM pragma_table_info('events')").all() as Array<{ name: string }>).map((c) => c.name);
    t.ok(cols.includes('data'), 'the events table has its data column');
    const rows = db.prepare("SELECT stream, type, data FROM events WHERE stream LIKE 'message-%'").all() as Array<{ stream: string; type: string; data: string }>;
    const m1Sent = rows.find((r) => r.stream === `message-${m1Id}` && r.type === 'MessageSent')!;
    const raw = JSON.parse(m1Sent.data) as any;
    t.ok(isSealed(raw.message.content) && isSealed(raw.message.embeds) && isSealed(raw.message.attachments[0].filename), 'content, embeds and the attachment name are sealed in the row');
    const subject = raw.message.content.s as string;
    t.ok(subject.startsWith(CONTENT_SUBJECT), 'under its channel’s time bucket');
    t.equal(await store.keys.lookup(subject), null, 'whose key is destroyed: it does not open');
    t.ok(await store.keys.destroyed(subject));
    const kept = JSON.parse(rows.find((r) => r.stream === `message-${m3Id}` && r.type === 'MessageSent')!.data) as any;
    t.ok(isSealed(kept.message.content), 'a kept message is sealed too…');
    t.ok(await store.keys.lookup(kept.message.content.s), '…under a key that still exists');
  });

  await t.test('the compliance export keeps id, author, channel and time, marked erased', async (t) => {
    const rows: ComplianceRow[] = [];
    for await (const r of complianceRows(store, {})) rows.push(r);
    const of = (id: string) => rows.filter((r) => r.message === id).map((r) => [r.kind, r.author, r.channel, r.content, r.erased]);
    t.same(of(m1Id), [
      ['message_sent', alice.userId, server.general, null, true],
      ['message_pinned', alice.userId, server.general, null, false],
      ['message_erased', alice.userId, server.general, null, true],
    ]);
    t.same(of(m3Id), [['message_sent', alice.userId, other, 'charlie kept words', false]], 'a kept message is exported as it is');
    const erasedRow = rows.find((r) => r.kind === 'message_erased' && r.message === m1Id)!;
    t.same(erasedRow.attachments, [fileId]);
    t.equal(erasedRow.actor, null, 'erased by the system');
  });

  await t.test('a hold on a channel or a server keeps all of it; lifting it releases', async (t) => {
    t.equal((await admin.api.put(`/admin/retention/channels/${other}`, { max_age_seconds: 60 })).status, 200);
    for (const target of [{ type: 'channel', id: other }, { type: 'server', id: server.id }]) {
      await hold('h2', target);
      const r = await sweepRetention(sweepDeps);
      t.same([r.erased, r.shredded], [[], []], `a ${target.type} hold: nothing of it erased`);
      t.equal((await alice.api.get(`/channels/${other}/messages/${m3Id}`)).status, 200);
      await lift('h2');
    }
    const r = await sweepRetention(sweepDeps);
    t.same(r.erased, [m3Id], 'lifted: erased at the next sweep');
    t.equal(r.shredded.length, 1, 'with its bucket key');
    t.equal((await alice.api.get(`/channels/${other}/messages/${m3Id}`)).status, 404);
  });

  await t.test('a rebuild of the read models from the erased log equals the live ones', async (t) => {
    await until('the projector caught up', async () => {
      const head = await s.store.headPosition();
      await s.readModels.waitForAll(head!);
      return true;
    });
    const live = await dumpCurrent(s.redis, s.prefix);
    const rebuilt = await dumpRebuild(t, s.redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions });
    t.same(rebuilt, live);
    t.notOk(JSON.stringify(rebuilt).includes('alpha secret'), 'and holds no erased content');
  });
});
