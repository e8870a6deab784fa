/**
 * The compliance export (issue 39 part 3): sends, edits with previous and new content, deletions with who
 * deleted, bulk deletes, pins, reactions and moderation actions, in log order with positions and times; the
 * filters; erased content marked, never an error; CSV quoting; the CLI; `GET /admin/export` for admins only.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import t from 'tap';
import { runAdmin } from '../src/cli/accountsAdmin.ts';
import { complianceRows, csvField, type ComplianceRow } from '../src/compliance/export.ts';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import { newId } from '../src/ids.ts';
import { seal } from '../src/personal/cipher.ts';
import { runCli } from './helpers/cli.ts';
import { request, signup, type TestUser } from './helpers/http.ts';
import { createServer, join } from './helpers/servers.ts';
import { startTestService, tempDir, type TestService } from './helpers/service.ts';
import { until } from './helpers/wait.ts';

async function collect(it: AsyncIterable<ComplianceRow>): Promise<ComplianceRow[]> {
  const out: ComplianceRow[] = [];
  for await (const r of it) out.push(r);
  return out;
}

t.test('the export over a log: edits, deletions, erased content, filters, stream look-ups', async (t) => {
  const dir = tempDir(t, 'compliance');
  const store = new SqliteEventStore(path.join(dir, 'events.sqlite'));
  t.teardown(() => store.close());
  const [alice, bob, mod] = [newId(), newId(), newId()];
  const [server, channel, other] = [newId(), newId(), newId()];
  const at = (min: number) => new Date(Date.UTC(2026, 0, 1, 0, min)).toISOString();
  const put = async (stream: string, type: string, data: unknown, actor: string | null, minute: number, scope = server, expected: number | 'no_stream' | 'any' = 'any') =>
    store.append(stream, [{ id: randomUUID(), type, data, metadata: { actor, requestId: 'r', at: at(minute), scope } }], expected);
  const m1 = newId();
  const m2 = newId();
  const m3 = newId();
  const m4 = newId();
  const sent = (id: string, author: string, content: unknown, ch = channel) => ({ message: { _id: id, channel: ch, author, ...(content !== undefined ? { content } : {}) } });
  await put(`message-${m1}`, 'MessageSent', sent(m1, alice, 'first words'), alice, 1);
  await put(`message-${m2}`, 'MessageSent', sent(m2, bob, 'in the other channel', other), bob, 2);
  await put(`message-${m1}`, 'MessageEdited', { channel, data: { content: 'second words' }, edited: at(3) }, alice, 3);
  // Content sealed under a key nobody holds (a destroyed key): erased, not an error.
  await put(`message-${m3}`, 'MessageSent', sent(m3, bob, seal(randomBytes(32), 'gone', 'content', 'secret')), bob, 4);
  // A send whose personal fields the boundary left out (nothing at all remains): erased.
  await put(`message-${m4}`, 'MessageSent', sent(m4, alice, undefined), alice, 5);
  await put(`message-${m1}`, 'MessageEdited', { channel, data: { content: 'third words' }, edited: at(6) }, alice, 6);
  await put(`message-${m1}`, 'MessagePinned', { channel, by: mod }, mod, 7);
  await put(`message-${m1}`, 'MessageReacted', { channel, userId: bob, emoji: '👍' }, bob, 8);
  await put(`message-${m3}`, 'MessageEdited', { channel, data: { content: 'readable again' }, edited: at(9) }, bob, 9);
  await store.appendMany([
    { stream: `message-${m1}`, expected: 'any', events: [{ id: randomUUID(), type: 'MessageDeleted', data: { channel, inBulk: true }, metadata: { actor: mod, requestId: 'b', at: at(10), scope: server } }] },
    { stream: `message-${m4}`, expected: 'any', events: [{ id: randomUUID(), type: 'MessageDeleted', data: { channel, bulkIds: [m1, m4] }, metadata: { actor: mod, requestId: 'b', at: at(10), scope: server } }] },
  ]);
  await put(`server-${server}`, 'MemberLeft', { userId: bob, reason: 'Kick' }, mod, 11);
  await put(`server-${server}`, 'MemberLeft', { userId: alice, reason: 'Leave' }, alice, 11);
  await put(`server-${server}`, 'UserBanned', { userId: bob, reason: 'spam' }, mod, 12);
  await put(`server-${server}`, 'MemberEdited', { userId: alice, data: { timeout: at(60) }, remove: [] }, mod, 13);
  await put(`message-${m2}`, 'MessageDeleted', { channel: other }, bob, 30);

  const all = await collect(complianceRows(store, { from: new Date(at(0)), to: new Date(at(20)) }));
  t.same(
    all.map((r) => [r.kind, r.message ?? r.target]),
    [
      ['message_sent', m1],
      ['message_sent', m2],
      ['message_edited', m1],
      ['message_sent', m3],
      ['message_sent', m4],
      ['message_edited', m1],
      ['message_pinned', m1],
      ['reaction_added', m1],
      ['message_edited', m3],
      ['message_deleted', m1],
      ['message_deleted', m4],
      ['member_kicked', bob],
      ['member_banned', bob],
      ['member_timed_out', alice],
    ],
    'every kind, in log order; a member leaving on their own is no moderation action; out of range left out',
  );
  const positions = all.map((r) => BigInt(r.position));
  t.ok(positions.every((p, i) => i === 0 || p > positions[i - 1]!), 'positions ascend');
  t.equal(all[0]!.at, at(1), 'each row has its time');
  const edits = all.filter((r) => r.kind === 'message_edited');
  t.same(edits.map((r) => [r.previous_content, r.content, r.erased]), [
    ['first words', 'second words', false],
    ['second words', 'third words', false],
    [null, 'readable again', true],
  ], 'edits carry the previous and the new content; an erased previous content is marked');
  const erased = all.filter((r) => r.kind === 'message_sent' && r.erased).map((r) => [r.message, r.content]);
  t.same(erased, [[m3, null], [m4, null]], 'sealed or stripped content is marked erased');
  const del = all.find((r) => r.kind === 'message_deleted' && r.message === m1)!;
  t.same([del.actor, del.author, del.content, del.bulk], [mod, alice, 'third words', true], 'a deletion says who deleted, whose it was and what it said');
  t.equal(all.find((r) => r.kind === 'message_pinned')!.actor, mod);
  t.same([all.find((r) => r.kind === 'member_banned')!.reason, all.find((r) => r.kind === 'member_timed_out')!.until], ['spam', at(60)]);

  // A one-entry cache: every edit's previous content comes from reading the message's own stream.
  const small = await collect(complianceRows(store, { from: new Date(at(0)), to: new Date(at(20)) }, { cacheSize: 1 }));
  t.same(small, all, 'the same rows with a tiny cache (stream look-ups)');
  // A range starting after the sends: the edits still know what came before.
  const late = await collect(complianceRows(store, { from: new Date(at(6)), to: new Date(at(6)) }));
  t.same(late.map((r) => [r.kind, r.previous_content, r.content, r.author]), [['message_edited', 'second words', 'third words', alice]]);

  const byChannel = await collect(complianceRows(store, { channelId: other }));
  t.same(byChannel.map((r) => r.kind), ['message_sent', 'message_deleted'], 'channel filter (no server-wide actions)');
  const byUser = await collect(complianceRows(store, { userId: bob, to: new Date(at(20)) }));
  t.same(byUser.map((r) => r.kind), ['message_sent', 'message_sent', 'reaction_added', 'message_edited', 'member_kicked', 'member_banned'], 'user filter: their messages, their acts, actions on them');
  const byServer = await collect(complianceRows(store, { serverId: newId() }));
  t.same(byServer, [], 'server filter');
});

t.test('CSV fields are quoted per RFC 4180', async (t) => {
  t.equal(csvField('plain'), 'plain');
  t.equal(csvField('a, "b"\nc'), '"a, ""b""\nc"');
  t.equal(csvField('x\ry'), '"x\ry"');
  t.equal(csvField(null), '');
  t.equal(csvField(true), 'true');
});

async function grant(s: TestService, u: TestUser, role: 'moderator' | 'admin'): Promise<void> {
  t.equal(await runAdmin(['grant', u.userId, '--role', role], { store: s.store, print: () => {}, error: () => {} }), 0);
  await until(`${role} granted`, async () => (await s.readModels.hgetJson<string>('instance:staff', u.userId)) === role);
}

t.test('GET /admin/export and the CLI over a running service', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [admin, mod, alice, bob] = await Promise.all([signup(s), signup(s), signup(s), signup(s)]);
  const srv = await createServer(alice);
  await join(alice, srv.general, bob);
  const start = new Date(Date.now() - 1000).toISOString();
  const tricky = 'hello, "world"\nsecond line';
  const m = (await alice.api.post(`/channels/${srv.general}/messages`, { content: tricky })).body._id as string;
  const m2 = (await bob.api.post(`/channels/${srv.general}/messages`, { content: 'bob speaks' })).body._id as string;
  t.equal((await alice.api.patch(`/channels/${srv.general}/messages/${m}`, { content: 'edited' })).status, 200);
  t.equal((await alice.api.del(`/channels/${srv.general}/messages/${m2}`)).status, 204, 'the owner deletes bob\'s message');
  t.equal((await alice.api.put(`/servers/${srv.id}/bans/${bob.userId}`, { reason: 'enough' })).status, 200);
  await grant(s, admin, 'admin');
  await grant(s, mod, 'moderator');
  const end = new Date(Date.now() + 60_000).toISOString();
  const q = `from=${encodeURIComponent(start)}&to=${encodeURIComponent(end)}`;

  const anon = await request(s.apiUrl, 'GET', `/admin/export?${q}`, { skipOpenApi: true });
  t.same([anon.status, anon.body?.type], [401, 'NotAuthenticated'], 'no session: 401');
  for (const who of [alice, mod]) {
    const r = await request(s.apiUrl, 'GET', `/admin/export?${q}`, { token: who.token, skipOpenApi: true });
    t.same([r.status, r.body?.type], [403, 'NotPrivileged'], 'not an admin (a moderator neither): 403');
    const invalid = await request(s.apiUrl, 'GET', '/admin/export?from=nope', { token: who.token, skipOpenApi: true });
    t.same([invalid.status, invalid.body?.type], [403, 'NotPrivileged'], 'authorization before validation');
  }
  const bad = await request(s.apiUrl, 'GET', `/admin/export?from=yesterday&to=${encodeURIComponent(end)}`, { token: admin.token, skipOpenApi: true });
  t.same([bad.status, bad.body?.type], [400, 'FailedValidation'], 'a malformed time: 400');
  const badFormat = await request(s.apiUrl, 'GET', `/admin/export?${q}&format=xml`, { token: admin.token, skipOpenApi: true });
  t.same([badFormat.status, badFormat.body?.type], [400, 'FailedValidation']);

  const ok = await request(s.apiUrl, 'GET', `/admin/export?${q}&server=${srv.id}`, { token: admin.token, skipOpenApi: true });
  t.equal(ok.status, 200);
  t.match(ok.headers.get('content-type'), /application\/x-ndjson/);
  const rows = ok.text.trim().split('\n').map((l) => JSON.parse(l) as ComplianceRow);
  t.same(rows.map((r) => r.kind), ['message_sent', 'message_sent', 'message_edited', 'message_deleted', 'member_banned'], 'the server\'s rows in log order');
  t.same(rows.find((r) => r.kind === 'message_edited')!.previous_content, tricky);
  const del = rows.find((r) => r.kind === 'message_deleted')!;
  t.same([del.actor, del.author, del.content], [alice.userId, bob.userId, 'bob speaks'], 'who deleted whose message');

  const csv = await request(s.apiUrl, 'GET', `/admin/export?${q}&format=csv&user=${bob.userId}`, { token: admin.token, skipOpenApi: true });
  t.equal(csv.status, 200);
  t.match(csv.headers.get('content-type'), /text\/csv/);
  t.ok(csv.text.startsWith('position,at,kind,'), 'a header line');
  t.notOk(csv.text.includes(tricky), 'user filter: alice\'s message is not in bob\'s export');

  // The CLI, as a separate process on the same SQLite log.
  const out = path.join(tempDir(t, 'compliance-cli'), 'export.csv');
  const env = { DATA_DIR: s.dataDir, REDIS_URL: s.config.redisUrl, REDIS_PREFIX: s.prefix };
  const run = await runCli(env, ['export', '--from', start, '--to', end, '--channel', srv.general, '--format', 'csv', '--out', out], { script: 'src/cli/compliance.ts' });
  t.equal(run.code, 0, run.err);
  const text = fs.readFileSync(out, 'utf8');
  t.ok(text.includes(`"hello, ""world""\nsecond line"`), 'content with a comma, quotes and a newline is quoted');
  t.equal(text.split('\r\n').filter((l) => l.includes(',message_')).length, 4, 'four message rows in the channel');
  t.equal((await runCli(env, ['export', '--from', 'nope', '--to', end, '--out', out], { script: 'src/cli/compliance.ts' })).code, 2, 'usage error');

  await t.test('moderation beyond messages: a legal hold placed and lifted, an account deleted for abuse', async (t) => {
    const carol = await signup(s);
    const placed = await admin.api.post('/admin/holds', { name: 'Matter 7', reason: 'inquiry', target: { type: 'user', id: carol.userId } });
    t.equal(placed.status, 200);
    t.equal((await admin.api.post(`/admin/holds/${placed.body._id}/lift`, { reason: 'closed' })).status, 200);
    const channelHold = await admin.api.post('/admin/holds', { name: 'Matter 8', reason: 'audit', target: { type: 'channel', id: srv.general } });
    t.equal(channelHold.status, 200);
    t.equal((await admin.api.del(`/admin/users/${carol.userId}`, { reason: 'spam ring' })).status, 204);
    // The window ends now, after these acknowledged commands: the outer test's `end` (a minute after its own
    // commands) can be in the past by here, once the two CLI runs above took over a minute on a loaded machine.
    const q = `from=${encodeURIComponent(start)}&to=${encodeURIComponent(new Date().toISOString())}`;
    const r = await request(s.apiUrl, 'GET', `/admin/export?${q}&user=${carol.userId}`, { token: admin.token, skipOpenApi: true });
    t.equal(r.status, 200);
    const mine = r.text.trim().split('\n').map((l) => JSON.parse(l) as ComplianceRow);
    t.same(
      mine.map((row) => [row.kind, row.actor, row.target, row.reason]),
      [
        ['hold_placed', admin.userId, carol.userId, 'inquiry'],
        ['hold_lifted', admin.userId, carol.userId, 'closed'],
        ['account_deleted_by_moderator', admin.userId, carol.userId, 'spam ring'],
      ],
      'the user filter finds the holds on carol and her deletion, in log order, with who and why',
    );
    const inChannel = await request(s.apiUrl, 'GET', `/admin/export?${q}&channel=${srv.general}`, { token: admin.token, skipOpenApi: true });
    const kinds = inChannel.text.trim().split('\n').map((l) => (JSON.parse(l) as ComplianceRow).kind);
    t.equal(kinds.at(-1), 'hold_placed', 'a channel hold is in the channel\'s export');
  });
});
