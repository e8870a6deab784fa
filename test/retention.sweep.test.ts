/**
 * Retention below the routes (issue 39 part 1): how content is sealed per channel and time bucket and read back
 * (on a bare SQLite log and key store), what a destroyed bucket key and a retired file do to the events, the
 * erasure record that keeps destroyed keys destroyed across a restore, the operator's CLI, and the sweep's
 * recovery: a sweep killed midway resumes, and a bucket whose destruction was recorded by a sweep that died
 * before destroying the key is destroyed anyway (by the projector, and by the next run).
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { restoreBackup, takeBackup } from '../src/backup/backup.ts';
import { readErasures } from '../src/backup/erasures.ts';
import { runAccounts } from '../src/cli/accounts.ts';
import { runRetention } from '../src/cli/accountsRetention.ts';
import { sweepRetention } from '../src/compliance/retention.ts';
import { loadConfig } from '../src/config.ts';
import { contentKeyStream } from '../src/domain/retention/events.ts';
import type { NewEvent } from '../src/eventstore/port.ts';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import { newId, ulidTime } from '../src/ids.ts';
import { isSealed } from '../src/personal/cipher.ts';
import { contentSubject, CONTENT_SUBJECT, parseContentSubject } from '../src/personal/fields.ts';
import { SqliteKeyStore } from '../src/personal/keyStore.ts';
import { PostgresKeyStore } from '../src/personal/keyStorePostgres.ts';
import { openPostgresEventStore } from '../src/eventstore/postgres.ts';
import pg from 'pg';
import { testDatabase } from './helpers/postgres.ts';
import { PersonalDataStore } from '../src/personal/store.ts';
import { signup } from './helpers/http.ts';
import { createServer } from './helpers/servers.ts';
import { startTestService, tempDir } from './helpers/service.ts';
import { until } from './helpers/wait.ts';

const ev = (type: string, data: unknown, at = new Date().toISOString()): NewEvent => ({ id: randomUUID(), type, data, metadata: { actor: null, requestId: 'r', at, scope: 's' } });

t.test('content is sealed under its channel’s time bucket; a destroyed bucket erases it from every event', async (t) => {
  const dir = tempDir(t, 'retention-seal');
  const raw = new SqliteEventStore(path.join(dir, 'events.sqlite'));
  const keys = new SqliteKeyStore(path.join(dir, 'keys.sqlite'), path.join(dir, 'erasures.jsonl'));
  const store = new PersonalDataStore(raw, keys, { contentBucketMs: 1000 });
  t.teardown(() => store.close());
  const channel = newId();
  const base = Math.ceil(Date.now() / 1000) * 1000 + 10_000;
  const [m1, m2] = [newId(base + 100), newId(base + 1500)];
  const file = 'Xy7secretfileid';
  await store.append(`message-${m1}`, [ev('MessageSent', { message: { _id: m1, channel, author: 'a', content: 'first words', embeds: [{ type: 'Text', title: 'a title' }], attachments: [{ _id: file, tag: 'attachments', filename: 'plans.pdf', metadata: { type: 'File' }, content_type: 'application/pdf', size: 3 }] } })], 'no_stream');
  await store.append(`message-${m1}`, [ev('MessageEdited', { channel, data: { content: 'edited words' }, edited: new Date().toISOString() })], 0);
  await store.append(`message-${m1}`, [ev('MessageAppended', { channel, embeds: [{ type: 'Website', title: 'a preview' }], revision: 1 })], 1);
  await store.append(`message-${m2}`, [ev('MessageSent', { message: { _id: m2, channel, author: 'b', content: 'second words' } })], 'no_stream');
  // A message written before content was sealed: plain in the log, read as it is.
  const old = newId(base + 200);
  await raw.append(`message-${old}`, [ev('MessageSent', { message: { _id: old, channel, author: 'c', content: 'old plain words' } })], 'no_stream');
  await store.append(`file-${file}`, [ev('FileUploaded', { file: { _id: file, tag: 'attachments', filename: 'plans.pdf', metadata: { type: 'File' }, content_type: 'application/pdf', size: 3 }, uploaderId: 'a' })], 'no_stream');

  const rawOf = async (stream: string) => (await raw.readStream(stream)).map((e) => e.data as any);
  const [sent, edit, appended] = await rawOf(`message-${m1}`);
  const b1 = contentSubject(channel, base + 100, 1000);
  const b2 = contentSubject(channel, base + 1500, 1000);
  t.not(b1, b2, 'two seconds, two buckets');
  t.same(parseContentSubject(b1), { channel, start: base, end: base + 1000 });
  for (const [v, what] of [[sent.message.content, 'content'], [sent.message.embeds, 'embeds'], [sent.message.attachments[0].filename, 'attachment name'], [edit.data.content, 'edit'], [appended.embeds, 'preview']] as const) {
    t.ok(isSealed(v) && (v as { s?: string }).s === b1, `${what}: sealed in the log under the message’s bucket`);
  }
  t.equal(sent.message.attachments[0]._id, file, 'ids stay plain');
  t.equal((await rawOf(`message-${m2}`))[0].message.content.s, b2);
  const fileRaw = (await rawOf(`file-${file}`))[0];
  t.ok(isSealed(fileRaw.file.filename) && fileRaw.file.filename.s === `file:${file}`, 'an upload’s name is sealed under the file');
  t.notOk(fs.readFileSync(path.join(dir, 'events.sqlite')).includes('words'), 'no content in the log file');

  const opened = (await store.readStream(`message-${m1}`)).map((e) => e.data as any);
  t.same([opened[0].message.content, opened[0].message.embeds, opened[0].message.attachments[0].filename, opened[1].data.content, opened[2].embeds[0].title], ['first words', [{ type: 'Text', title: 'a title' }], 'plans.pdf', 'edited words', 'a preview']);
  t.equal(opened[0].erased, undefined, 'not erased');
  t.same(await keys.liveSubjects(CONTENT_SUBJECT), [b1, b2].sort());

  // The sweep's record of a bucket destroys its key on append.
  await store.append(contentKeyStream(channel, base), [ev('RetentionBucketShredded', { channel, subject: b1, from: new Date(base).toISOString(), to: new Date(base + 1000).toISOString() })], 'no_stream');
  t.ok(await keys.destroyed(b1), 'the bucket key is destroyed by the append');
  t.same(readErasures(path.join(dir, 'erasures.jsonl')).map((e) => e.subject), [b1], 'and recorded for restores');
  const erased = (await store.readStream(`message-${m1}`)).map((e) => e.data as any);
  t.same([erased[0].erased, erased[0].message.content, erased[0].message.embeds, erased[0].message.attachments[0].filename, erased[0].message.author], [true, undefined, undefined, undefined, 'a'], 'the send: erased, id and author kept');
  t.same([erased[1].erased, erased[1].data.content, erased[2].erased, erased[2].embeds], [true, undefined, true, undefined], 'the edit and the preview too');
  t.equal((await store.readStream(`message-${m2}`))[0]!.data && ((await store.readStream(`message-${m2}`))[0]!.data as any).message.content, 'second words', 'the next bucket is untouched');
  t.equal(((await store.readStream(`message-${old}`))[0]!.data as any).message.content, 'old plain words', 'plain content from before reads as it is');
  const all: string[] = [];
  for await (const e of store.readAll()) if (e.stream === `message-${m1}`) all.push((e.data as any).erased ? 'erased' : 'open');
  t.same(all, ['erased', 'erased', 'erased'], '$all reads it erased too');

  // Content that arrives for a destroyed bucket is dropped, never written in plain text.
  await store.append(`message-${m1}`, [ev('MessageEdited', { channel, data: { content: 'too late' }, edited: new Date().toISOString() })], 2);
  const late = (await raw.readStream(`message-${m1}`, { fromRevision: 3 }))[0]!.data as any;
  t.equal(late.data.content, undefined, 'a late edit into a destroyed bucket carries no content');

  // A retired upload takes its name with it.
  await store.append(`file-${file}`, [ev('FileExpired', { reason: 'detached' })], 0);
  t.ok(await keys.destroyed(`file:${file}`));
  const f = (await store.readStream(`file-${file}`))[0]!.data as any;
  t.same([f.erased, f.file.filename, f.file._id], [true, undefined, file], 'the file’s name is gone, its id stays');
});

t.test('on PostgreSQL (event store and key store): sealed in the rows, erased with the bucket key', async (t) => {
  const url = await testDatabase(t, 'retention_pg');
  const raw = await openPostgresEventStore(url);
  const keys = await PostgresKeyStore.open(url);
  const store = new PersonalDataStore(raw, keys, { contentBucketMs: 1000 });
  t.teardown(() => store.close());
  const channel = newId();
  const m = newId();
  await store.append(`message-${m}`, [ev('MessageSent', { message: { _id: m, channel, author: 'a', content: 'postgres words', embeds: [{ type: 'Text', title: 'postgres title' }] } })], 'no_stream');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  t.teardown(() => c.end());
  const rows = async () => (await c.query<{ data: string }>("SELECT data::text AS data FROM events WHERE stream LIKE 'message-%'")).rows.map((r) => r.data).join('\n');
  t.notOk((await rows()).includes('postgres words') || (await rows()).includes('postgres title'), 'no content in the rows');
  t.equal(((await store.readStream(`message-${m}`))[0]!.data as any).message.content, 'postgres words', 'it opens');
  const subject = contentSubject(channel, ulidTime(m), 1000);
  t.same(await keys.liveSubjects(CONTENT_SUBJECT), [subject]);
  await store.append(contentKeyStream(channel, 0), [ev('RetentionBucketShredded', { channel, subject, from: 'x', to: 'y' })], 'no_stream');
  t.ok(await keys.destroyed(subject));
  const data = (await store.readStream(`message-${m}`))[0]!.data as any;
  t.same([data.erased, data.message.content, data.message.embeds], [true, undefined, undefined], 'erased once the key is gone');
});

t.test('a restore of an older backup destroys the bucket keys destroyed since', async (t) => {
  const dir = tempDir(t, 'retention-restore');
  const config = loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' });
  const open = () => {
    const raw = new SqliteEventStore(path.join(dir, 'events.sqlite'));
    return new PersonalDataStore(raw, new SqliteKeyStore(path.join(dir, 'keys.sqlite'), config.erasureLog), { contentBucketMs: 1000 });
  };
  let store = open();
  const channel = newId();
  const m = newId();
  await store.append(`message-${m}`, [ev('MessageSent', { message: { _id: m, channel, author: 'a', content: 'restored words' } })], 'no_stream');
  const subject = contentSubject(channel, ulidTime(m), 1000);
  t.same(await store.keys.liveSubjects(CONTENT_SUBJECT), [subject]);
  await store.close();
  const backup = path.join(tempDir(t, 'retention-backup'), 'b');
  await takeBackup(config, backup);
  store = open();
  await store.append(contentKeyStream(channel, 0), [ev('RetentionBucketShredded', { channel, subject, from: 'x', to: 'y' })], 'no_stream');
  t.equal(((await store.readStream(`message-${m}`))[0]!.data as any).erased, true, 'erased before the restore');
  await store.close();
  const r = await restoreBackup(config, backup);
  t.same(r.reapplied, [], 'no account deletion is re-appended for a bucket');
  store = open();
  t.teardown(() => store.close());
  t.ok(await store.keys.destroyed(subject), 'the restored key store had the key; the erasure record destroyed it again');
  const data = (await store.readStream(`message-${m}`))[0]!.data as any;
  t.same([data.erased, data.message.content], [true, undefined], 'the restored log does not open it');
});

t.test('the CLI sets and lists policies, revision-checked and audited', async (t) => {
  const s = await startTestService(t, { RETENTION_SWEEP_INTERVAL_MS: '0', RATE_LIMITS: 'off' });
  const owner = await signup(s);
  const server = await createServer(owner);
  const group = (await owner.api.post('/channels/create', { name: 'g', users: [] })).body._id as string;
  const out: string[] = [];
  const err: string[] = [];
  const io = { store: s.store, print: (l: string) => out.push(l), error: (l: string) => err.push(l) };
  const head = await s.store.headPosition();
  for (const bad of [[], ['set'], ['set', '--instance'], ['set', '--instance', '--server', server.id, '--forever'], ['set', '--instance', '--max-age-seconds', '0'], ['set', '--instance', '--max-age-seconds', '1.5'], ['set', '--instance', '--max-age-seconds', '60', '--forever'], ['list', 'extra'], ['drop']]) {
    t.equal(await runRetention(bad, io), 2, `usage: ${bad.join(' ') || '(nothing)'}`);
  }
  t.equal(await runRetention(['set', '--server', 'nope', '--max-age-seconds', '60'], io), 1, 'not an id');
  t.equal(await runRetention(['set', '--server', newId(), '--max-age-seconds', '60'], io), 1, 'no such server');
  t.equal(await runRetention(['set', '--channel', group, '--max-age-seconds', '60'], io), 1, 'a group follows the instance default');
  t.equal(await s.store.headPosition(), head, 'a refused or wrong command appends nothing');
  out.length = 0;
  t.equal(await runRetention(['set', '--server', server.id, '--max-age-seconds', '86400'], io), 0);
  t.equal(await runRetention(['set', '--channel', server.general, '--max-age-seconds', '3600'], io), 0);
  t.equal(await runRetention(['set', '--instance', '--max-age-seconds', '604800'], io), 0);
  t.equal(await runRetention(['set', '--instance', '--max-age-seconds', '604800'], io), 0, 'the same again');
  t.same(out, [`server ${server.id}: 86400 s`, `channel ${server.general}: 3600 s`, 'the instance default: 604800 s', 'the instance default is that already']);
  out.length = 0;
  t.equal(await runRetention(['list'], io), 0);
  t.same(out, ['instance\t604800', `server ${server.id}\t86400`, `channel ${server.general}\t3600`]);
  out.length = 0;
  t.equal(await runRetention(['set', '--channel', server.general, '--forever'], io), 0);
  t.equal(await runRetention(['set', '--instance', '--forever'], io), 0);
  t.same(out, [`channel ${server.general}: override removed`, 'the instance default: forever']);
  out.length = 0;
  await runRetention(['list'], io);
  t.same(out, ['instance\tforever', `server ${server.id}\t86400`]);
  t.equal(await runAccounts(['retention', 'list'], () => {}), 0, 'reached through npm run accounts -- retention …');
  const entries = await until('five audit entries', async () => {
    const all = await s.readModels.hgetallJson<{ action: string; actor: string | null; target: { type: string; id: string }; details: { max_age_seconds: number | null } }>('instance:audit');
    const mine = [...all.values()].filter((e) => e.action === 'RetentionPolicySet');
    return mine.length === 5 ? mine : null;
  });
  t.ok(entries.every((e) => e.actor === null), 'the operator acts with a null actor');
  t.same(entries.map((e) => `${e.target.type}:${e.details.max_age_seconds}`).sort(), ['Channel:3600', 'Channel:null', 'Instance:604800', 'Instance:null', 'Server:86400'].sort());
  const admin = await s.readModels.getJson<{ instance: number | null; servers: Record<string, number>; channels: Record<string, number> }>('retention:policies');
  t.same([admin?.instance, admin?.servers, admin?.channels], [null, { [server.id]: 86400 }, {}], 'the read model follows');
});

t.test('a killed sweep resumes; a bucket recorded but not destroyed is destroyed anyway', async (t) => {
  const HOUR = 3_600_000;
  let offset = Math.ceil(Date.now() / HOUR) * HOUR + 5_000 - Date.now();
  const clock = () => Date.now() + offset;
  const s = await startTestService(t, { RETENTION_SWEEP_INTERVAL_MS: '0', RETENTION_BUCKET_SECONDS: '3600', RATE_LIMITS: 'off' }, { now: clock });
  const store = s.store as PersonalDataStore;
  const owner = await signup(s);
  const server = await createServer(owner);
  const second = (await owner.api.post(`/servers/${server.id}/channels`, { name: 'second', type: 'Text' })).body._id as string;
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await owner.api.post(`/channels/${server.general}/messages`, { content: `message ${i}` })).body._id);
  const lone = (await owner.api.post(`/channels/${second}/messages`, { content: 'lone message' })).body._id as string;
  t.equal(await runRetention(['set', '--server', server.id, '--max-age-seconds', '60'], { store: s.store, print: () => {} }), 0);
  offset += 2 * HOUR;
  const deps = { store, readModels: s.readModels, blobs: s.blobs, log: s.log, now: clock };
  let n = 0;
  const killed = sweepRetention({ ...deps, afterErase: () => void (++n === 2 && (() => { throw new Error('killed'); })()) });
  await t.rejects(killed, /killed/, 'the sweep dies after its second erasure');
  await until('the two erasures projected', async () => (await owner.api.get(`/channels/${server.general}/messages/${ids[1]}`)).status === 404);
  t.equal((await owner.api.get(`/channels/${server.general}/messages/${ids[2]}`)).status, 200, 'the rest are still there');
  const buckets = await store.keys.liveSubjects(CONTENT_SUBJECT);
  t.equal(buckets.length, 2, 'both buckets keep their keys');
  const resumed = await sweepRetention(deps);
  t.same(resumed.erased, [...ids.slice(2), lone], 'the next run erases what is left, nothing twice');
  t.equal(resumed.shredded.length, 2, 'and destroys both keys');
  t.same(await store.keys.liveSubjects(CONTENT_SUBJECT), []);

  // A third channel: its message erased, then the bucket's record appended by a sweep that died at once.
  const third = (await owner.api.post(`/servers/${server.id}/channels`, { name: 'third', type: 'Text' })).body._id as string;
  const m = (await owner.api.post(`/channels/${third}/messages`, { content: 'third words' })).body._id as string;
  offset += 2 * HOUR;
  await t.rejects(sweepRetention({ ...deps, afterErase: () => { throw new Error('killed'); } }), /killed/);
  const [subject] = await store.keys.liveSubjects(`${CONTENT_SUBJECT}${third}:`);
  t.ok(subject, 'the bucket key is still there');
  const b = parseContentSubject(subject!)!;
  await store.inner.append(contentKeyStream(third, b.start), [ev('RetentionBucketShredded', { channel: third, subject, from: new Date(b.start).toISOString(), to: new Date(b.end).toISOString() })], 'no_stream');
  await until('the projector destroyed the recorded key', () => store.keys.destroyed(subject!));
  const after = await sweepRetention(deps);
  t.same([after.erased, after.shredded, after.conflicts], [[], [], 0], 'the next run has nothing left to do');
  t.equal((await owner.api.get(`/channels/${third}/messages/${m}`)).status, 404);
  t.equal(((await store.readStream(`message-${m}`))[0]!.data as any).erased, true, 'its content does not open');
});
