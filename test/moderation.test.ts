/**
 * Reports and instance moderation: POST /safety/report (Stoat's kinds and reasons), ReportCreate to the staff's
 * sockets, the operator command granting instance roles, the moderation queue (list, triage, resolve, reject),
 * suspensions and bans ending sessions and sockets and refusing logins, moderator deletion of content, the
 * instance audit log with actor and reason, authorization of every /admin route, and rebuild equals live.
 */
import t from 'tap';
import { runAdmin } from '../src/cli/accountsAdmin.ts';
import { newId } from '../src/ids.ts';
import { runCli } from './helpers/cli.ts';
import { client, request, signup, type TestUser } from './helpers/http.ts';
import { createServer, dumpCurrent, dumpRebuild, join } from './helpers/servers.ts';
import { startTestService, type TestService } from './helpers/service.ts';
import { connectReady } from './helpers/ws.ts';
import { until } from './helpers/wait.ts';

/** Grants an instance role through the operator command (in process, on the service's store) and waits for it. */
async function grant(s: TestService, u: TestUser, role: 'moderator' | 'admin' = 'moderator'): Promise<void> {
  const out: string[] = [];
  const code = await runAdmin(['grant', u.userId, '--role', role], { store: s.store, print: (l) => out.push(l), error: (l) => out.push(l) });
  if (code !== 0) throw new Error(out.join('\n'));
  await until(`${role} granted`, async () => (await s.readModels.hgetJson<string>('instance:staff', u.userId)) === role);
}

async function sendMessage(u: TestUser, channel: string, content = 'hello'): Promise<string> {
  const r = await u.api.post(`/channels/${channel}/messages`, { content });
  if (r.status !== 200) throw new Error(`send ${r.status} ${r.text}`);
  return r.body._id as string;
}

t.test('reports, the moderation queue and the audit log', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [mod, admin, alice, bob, outsider] = await Promise.all([signup(s), signup(s), signup(s), signup(s), signup(s)]);
  const srv = await createServer(alice);
  await join(alice, srv.general, bob);
  const msg = await sendMessage(bob, srv.general, 'buy cheap pills');

  t.test('the operator command grants and lists roles', async (t) => {
    // The real command, as a separate process on the same SQLite file: the running service projects it.
    const env = { DATA_DIR: s.dataDir, REDIS_URL: s.config.redisUrl, REDIS_PREFIX: s.prefix };
    const r = await runCli(env, ['admin', 'grant', `${mod.username}#${(await mod.api.get('/users/@me')).body.discriminator}`], { script: 'src/cli/accounts.ts' });
    t.equal(r.code, 0, r.err);
    t.match(r.out, `granted moderator to ${mod.userId}`);
    await until('moderator projected', async () => (await s.readModels.hgetJson<string>('instance:staff', mod.userId)) === 'moderator');
    await grant(s, admin, 'admin');
    const list = await runCli(env, ['admin', 'list'], { script: 'src/cli/accounts.ts' });
    t.equal(list.code, 0);
    t.same(list.out.trim().split('\n').sort(), [`${admin.userId}\tadmin`, `${mod.userId}\tmoderator`].sort());
    t.equal((await runCli(env, ['admin', 'grant', newId()], { script: 'src/cli/accounts.ts' })).code, 1, 'unknown user');
    t.equal((await runCli(env, ['admin', 'frobnicate'], { script: 'src/cli/accounts.ts' })).code, 2, 'usage');
    t.equal((await runAdmin(['grant', alice.userId, '--role', 'owner'], { store: s.store, error: () => {} })), 2, 'unknown role');
  });

  t.test('a report reaches the staff, and only the staff', async (t) => {
    const modWs = await connectReady(s, mod.token);
    const aliceWs = await connectReady(s, alice.token);
    t.teardown(() => (modWs.close(), aliceWs.close()));
    const r = await alice.api.post('/safety/report', { content: { type: 'Message', id: msg, report_reason: 'ScamsFraud' }, additional_context: 'spam' });
    t.equal(r.status, 204, r.text);
    const ev = await modWs.waitFor((e) => e.type === 'ReportCreate');
    t.match(ev, { author_id: alice.userId, content: { type: 'Message', id: msg, report_reason: 'ScamsFraud' }, status: 'Created', additional_context: 'spam' });
    t.match(ev.snapshot, { _type: 'Message', content: 'buy cheap pills', author: bob.userId, channel: srv.general });
    await alice.api.patch('/users/@me', { display_name: 'After' });
    await aliceWs.waitFor((e) => e.type === 'UserUpdate');
    t.notOk(aliceWs.events.some((e) => e.type === 'ReportCreate'), 'the reporter (not staff) never sees ReportCreate');
  });

  t.test('report rules', async (t) => {
    const report = (u: TestUser, content: unknown, extra: Record<string, unknown> = {}) => u.api.post('/safety/report', { content, ...extra });
    t.match((await report(bob, { type: 'Message', id: msg, report_reason: 'Malware' })).body, { type: 'CannotReportYourself' });
    t.equal((await report(bob, { type: 'User', id: bob.userId, report_reason: 'SpamAbuse' })).status, 400);
    t.match((await report(alice, { type: 'Server', id: srv.id, report_reason: 'Raid' })).body, { type: 'CannotReportYourself' }, 'the owner reports their server');
    t.equal((await report(bob, { type: 'Server', id: srv.id, report_reason: 'Raid' })).status, 204);
    t.equal((await report(alice, { type: 'User', id: bob.userId, report_reason: 'Impersonation', message_id: msg })).status, 204);
    // Content the reporter cannot see does not exist for them.
    t.match((await report(outsider, { type: 'Message', id: msg, report_reason: 'Malware' })), { status: 404, body: { type: 'NotFound' } });
    t.match((await report(alice, { type: 'Message', id: newId(), report_reason: 'Malware' })), { status: 404, body: { type: 'NotFound' } });
    t.match((await report(alice, { type: 'Message', id: 'not-an-id', report_reason: 'Malware' })), { status: 404, body: { type: 'NotFound' } });
    t.match((await report(alice, { type: 'User', id: newId(), report_reason: 'Underage' })), { status: 404, body: { type: 'NotFound' } });
    t.match((await report(alice, { type: 'Server', id: newId(), report_reason: 'Raid' })), { status: 404, body: { type: 'NotFound' } });
    // Reasons are per kind (Stoat's ContentReportReason / UserReportReason), and the body is strict.
    t.match((await report(alice, { type: 'User', id: bob.userId, report_reason: 'Malware' })).body, { type: 'FailedValidation' });
    t.match((await report(alice, { type: 'Message', id: msg, report_reason: 'Underage' })).body, { type: 'FailedValidation' });
    t.match((await report(alice, { type: 'Channel', id: srv.general, report_reason: 'Raid' })).body, { type: 'FailedValidation' });
    t.match((await report(alice, { type: 'Message', id: msg, report_reason: 'Raid', extra: 1 })).body, { type: 'FailedValidation' });
    t.equal((await report(alice, { type: 'Message', id: msg, report_reason: 'Raid' }, { additional_context: 'x'.repeat(1000) })).status, 204, '1000 characters');
    t.match((await report(alice, { type: 'Message', id: msg, report_reason: 'Raid' }, { additional_context: 'x'.repeat(1001) })).body, { type: 'FailedValidation' }, '1001');
    t.match(await request(s.apiUrl, 'POST', '/safety/report', { body: { content: { type: 'Server', id: srv.id, report_reason: 'Raid' } } }), { status: 401, body: { type: 'NotAuthenticated' } });
  });

  t.test('the queue: list, fetch, triage, resolve, reject, reopen', async (t) => {
    const list = await mod.api.get('/admin/reports?status=Created');
    t.equal(list.status, 200);
    const first = list.body.find((r: any) => r.content.type === 'Message' && r.additional_context === 'spam');
    t.ok(first, 'the message report is queued');
    t.notOk('revision' in first);
    t.ok(list.body.every((r: any) => r.status === 'Created'));
    const ids = list.body.map((r: any) => r._id);
    t.same(ids, [...ids].sort().reverse(), 'newest first');
    const page = await mod.api.get(`/admin/reports?limit=1&before=${ids[0]}`);
    t.same(page.body.map((r: any) => r._id), [ids[1]], 'paged with before');
    t.match((await mod.api.get(`/admin/reports/${first._id}`)).body, { _id: first._id, status: 'Created', notes: '' });
    t.match(await mod.api.get(`/admin/reports/${newId()}`), { status: 404, body: { type: 'NotFound' } });
    t.match(await mod.api.get('/admin/reports/nope'), { status: 404, body: { type: 'NotFound' } });

    t.match((await mod.api.patch(`/admin/reports/${first._id}`, { notes: 'looking into it' })).body, { notes: 'looking into it', status: 'Created' });
    t.match((await mod.api.patch(`/admin/reports/${first._id}`, { status: 'Rejected' })).body, { type: 'FailedValidation' }, 'rejection needs a reason');
    t.match((await mod.api.patch(`/admin/reports/${first._id}`, { notes: 'x'.repeat(2001) })).body, { type: 'FailedValidation' });
    t.match((await mod.api.patch(`/admin/reports/${first._id}`, { status: 'Rejected', rejection_reason: 'not spam' })).body, { status: 'Rejected', rejection_reason: 'not spam' });
    t.notOk((await mod.api.get('/admin/reports?status=Created')).body.some((r: any) => r._id === first._id), 'left the Created queue');
    t.ok((await mod.api.get('/admin/reports?status=Rejected')).body.some((r: any) => r._id === first._id));
    t.match((await admin.api.patch(`/admin/reports/${first._id}`, { status: 'Created' })).body, { status: 'Created' });
    t.notOk('rejection_reason' in (await mod.api.get(`/admin/reports/${first._id}`)).body);
    const resolved = await mod.api.patch(`/admin/reports/${first._id}`, { status: 'Resolved', reason: 'message deleted' });
    t.match(resolved.body, { status: 'Resolved' });
    t.ok(resolved.body.closed_at);

    const audit = (await admin.api.get('/admin/audit?limit=100')).body as any[];
    const of = (action: string) => audit.filter((e) => e.action === action && e.target.id === first._id);
    t.match(of('ReportReject')[0], { actor: mod.userId, reason: 'not spam', target: { type: 'Report' } });
    t.match(of('ReportReopen')[0], { actor: admin.userId });
    t.match(of('ReportResolve')[0], { actor: mod.userId, reason: 'message deleted' });
    t.match(of('ReportNotesEdit')[0], { actor: mod.userId });
    t.match(audit.find((e) => e.action === 'InstanceRoleGrant' && e.target.id === admin.userId), { actor: null, details: { role: 'admin' } });
    const older = await admin.api.get(`/admin/audit?limit=2&before=${encodeURIComponent(audit[1].cursor)}`);
    t.same(older.body.map((e: any) => e.id), audit.slice(2, 4).map((e) => e.id), 'paged by cursor');
  });

  t.test('suspension ends sessions and sockets, refuses logins; bans are for admins; lifting lets them back', async (t) => {
    const victim = await signup(s);
    const ws = await connectReady(s, victim.token);
    // Targets: not yourself, a moderator never staff, an admin never another admin.
    t.match(await mod.api.post(`/admin/users/${mod.userId}/suspend`, { reason: 'x' }), { status: 400, body: { type: 'InvalidOperation' } });
    t.match(await mod.api.post(`/admin/users/${admin.userId}/suspend`, { reason: 'x' }), { status: 403, body: { type: 'NotPrivileged' } });
    t.match(await mod.api.post(`/admin/users/${victim.userId}/suspend`, {}), { status: 400, body: { type: 'FailedValidation' } }, 'a reason is required');
    t.match(await mod.api.post(`/admin/users/${victim.userId}/suspend`, { reason: '   ' }), { status: 400, body: { type: 'FailedValidation' } });
    t.match(await mod.api.post(`/admin/users/${victim.userId}/suspend`, { reason: 'r'.repeat(513) }), { status: 400, body: { type: 'FailedValidation' } });
    t.match(await mod.api.post(`/admin/users/${newId()}/suspend`, { reason: 'x' }), { status: 404, body: { type: 'NotFound' } });

    const r = await mod.api.post(`/admin/users/${victim.userId}/suspend`, { reason: 'spamming' });
    t.match(r, { status: 200, body: { user_id: victim.userId, kind: 'suspended', until: null, reason: 'spamming', actor: mod.userId } });
    const closed = await ws.closed;
    t.ok(ws.events.some((e) => e.type === 'Logout') || closed.code !== 1006, 'the socket was logged out');
    t.match(await victim.api.get('/users/@me'), { status: 401, body: { type: 'InvalidSession' } });
    const login = (password = victim.password) => client(s).post('/auth/session/login', { email: victim.email, password });
    t.match(await login(), { status: 403, body: { type: 'LockedOut' } });
    t.match(await login('wrong password!'), { status: 401, body: { type: 'InvalidCredentials' } }, 'nothing revealed without the password');
    const gw = await connectReady(s, victim.token).catch((err: Error) => err);
    t.ok(gw instanceof Error, 'the gateway refuses the old token');

    t.match(await mod.api.post(`/admin/users/${victim.userId}/ban`, { reason: 'x' }), { status: 403, body: { type: 'NotPrivileged' } });
    t.match(await mod.api.post(`/admin/users/${victim.userId}/lift`, { reason: 'x' }), { status: 403, body: { type: 'NotPrivileged' } });
    t.match((await admin.api.post(`/admin/users/${victim.userId}/ban`, { reason: 'repeat offender' })).body, { kind: 'banned', reason: 'repeat offender' });
    t.match(await admin.api.post(`/admin/users/${victim.userId}/ban`, { reason: 'again' }), { status: 400, body: { type: 'NoEffect' } });
    t.match(await mod.api.post(`/admin/users/${victim.userId}/suspend`, { reason: 'x' }), { status: 400, body: { type: 'NoEffect' } }, 'a ban stands');
    t.match((await mod.api.get(`/admin/users/${victim.userId}`)).body, { kind: 'banned', role: null });
    t.match(await admin.api.post(`/admin/users/${admin.userId}/ban`, { reason: 'x' }), { status: 400, body: { type: 'InvalidOperation' } });
    t.match(await admin.api.post(`/admin/users/${mod.userId}/lift`, { reason: 'x' }), { status: 400, body: { type: 'NoEffect' } });

    t.match((await admin.api.post(`/admin/users/${victim.userId}/lift`, { reason: 'appeal granted' })).body, { kind: 'none' });
    t.equal((await login()).status, 200, 'back in');
    const audit = (await admin.api.get('/admin/audit?limit=100')).body as any[];
    const mine = audit.filter((e) => e.target.id === victim.userId).map((e) => [e.action, e.actor, e.reason]);
    t.same(mine, [
      ['AccountSanctionLift', admin.userId, 'appeal granted'],
      ['AccountBan', admin.userId, 'repeat offender'],
      ['AccountSuspend', mod.userId, 'spamming'],
    ]);
  });

  t.test('a timed suspension', async (t) => {
    const victim = await signup(s);
    const r = await mod.api.post(`/admin/users/${victim.userId}/suspend`, { reason: 'cool off', duration_days: 1 });
    t.match(r.body, { kind: 'suspended', reason: 'cool off' });
    const until = Date.parse(r.body.until);
    t.ok(until > Date.now() + 86_000_000 && until < Date.now() + 87_000_000, 'one day');
    t.match(await mod.api.post(`/admin/users/${victim.userId}/suspend`, { reason: 'x', duration_days: 0 }), { status: 400, body: { type: 'FailedValidation' } });
    t.match(await mod.api.post(`/admin/users/${victim.userId}/suspend`, { reason: 'x', duration_days: 3651 }), { status: 400, body: { type: 'FailedValidation' } });
  });

  t.test('moderators delete content with a reason', async (t) => {
    const m = await sendMessage(bob, srv.general, 'delete me');
    const aliceWs = await connectReady(s, alice.token);
    t.teardown(() => aliceWs.close());
    t.match(await mod.api.del(`/admin/messages/${m}`, {}), { status: 400, body: { type: 'FailedValidation' } });
    t.match(await alice.api.del(`/admin/messages/${m}`, { reason: 'x' }), { status: 403, body: { type: 'NotPrivileged' } });
    t.match(await mod.api.del(`/admin/messages/${newId()}`, { reason: 'x' }), { status: 404, body: { type: 'NotFound' } });
    t.match(await mod.api.del('/admin/messages/zzz', { reason: 'x' }), { status: 404, body: { type: 'NotFound' } });
    t.equal((await mod.api.del(`/admin/messages/${m}`, { reason: 'illegal goods' })).status, 204);
    t.match(await aliceWs.waitFor((e) => e.type === 'MessageDelete' && e.id === m), { channel: srv.general });
    t.match(await alice.api.get(`/channels/${srv.general}/messages/${m}`), { status: 404 });
    t.match(await mod.api.del(`/admin/messages/${m}`, { reason: 'x' }), { status: 404, body: { type: 'NotFound' } }, 'already gone');
    const audit = (await mod.api.get('/admin/audit')).body as any[];
    t.match(audit.find((e) => e.action === 'MessageDelete' && e.target.id === m), { actor: mod.userId, reason: 'illegal goods', details: { channel: srv.general, server: srv.id, author: bob.userId } });
  });

  t.test('moderators delete DM and group messages too', async (t) => {
    await alice.api.put(`/users/${bob.userId}/friend`);
    await bob.api.put(`/users/${alice.userId}/friend`);
    const dm = (await alice.api.get(`/users/${bob.userId}/dm`)).body._id as string;
    const group = (await alice.api.post('/channels/create', { name: 'g', users: [bob.userId] })).body._id as string;
    const bobWs = await connectReady(s, bob.token);
    t.teardown(() => bobWs.close());
    for (const channel of [dm, group]) {
      const m = await sendMessage(alice, channel, 'private abuse');
      t.match(await alice.api.del(`/admin/messages/${m}`, { reason: 'x' }), { status: 403, body: { type: 'NotPrivileged' } });
      t.equal((await mod.api.del(`/admin/messages/${m}`, { reason: 'abuse in private' })).status, 204);
      t.match(await bobWs.waitFor((e) => e.type === 'MessageDelete' && e.id === m), { channel });
      t.match(await bob.api.get(`/channels/${channel}/messages/${m}`), { status: 404 });
      t.match(await mod.api.del(`/admin/messages/${m}`, { reason: 'x' }), { status: 404, body: { type: 'NotFound' } }, 'already gone');
      const audit = (await mod.api.get('/admin/audit')).body as any[];
      t.match(audit.find((e) => e.action === 'MessageDelete' && e.target.id === m), { actor: mod.userId, reason: 'abuse in private', details: { channel, server: null, author: alice.userId } });
    }
    // Saved Notes are a private channel too.
    const notes = (await bob.api.get(`/users/${bob.userId}/dm`)).body._id as string;
    const n = await sendMessage(bob, notes, 'note');
    t.equal((await mod.api.del(`/admin/messages/${n}`, { reason: 'illegal note' })).status, 204);
    t.match(await bob.api.get(`/channels/${notes}/messages/${n}`), { status: 404 });
  });

  t.test('moderators delete a whole server with a reason', async (t) => {
    const doomed = await createServer(alice, 'Scam hub');
    await join(alice, doomed.general, bob);
    await sendMessage(bob, doomed.general, 'scam');
    const bobWs = await connectReady(s, bob.token);
    t.teardown(() => bobWs.close());
    t.match(await mod.api.del(`/admin/servers/${doomed.id}`, {}), { status: 400, body: { type: 'FailedValidation' } });
    t.match(await mod.api.del(`/admin/servers/${doomed.id}`, { reason: '' }), { status: 400, body: { type: 'FailedValidation' } });
    t.match(await mod.api.del(`/admin/servers/${doomed.id}`, { reason: 'x'.repeat(513) }), { status: 400, body: { type: 'FailedValidation' } });
    t.match(await alice.api.del(`/admin/servers/${doomed.id}`, { reason: 'x' }), { status: 403, body: { type: 'NotPrivileged' } }, 'even its owner needs a role here');
    t.match(await mod.api.del(`/admin/servers/${newId()}`, { reason: 'x' }), { status: 404, body: { type: 'NotFound' } });
    t.match(await mod.api.del('/admin/servers/zzz', { reason: 'x' }), { status: 404, body: { type: 'NotFound' } });
    t.equal((await mod.api.get(`/servers/${doomed.id}`)).status, 404, 'staff are not members');
    t.equal((await mod.api.del(`/admin/servers/${doomed.id}`, { reason: 'scam ring' })).status, 204);
    t.match(await bobWs.waitFor((e) => e.type === 'ServerDelete' && e.id === doomed.id), { id: doomed.id });
    t.match(await bob.api.get(`/servers/${doomed.id}`), { status: 404 });
    t.match(await alice.api.get(`/servers/${doomed.id}`), { status: 404 });
    t.match(await bob.api.get(`/channels/${doomed.general}`), { status: 404 });
    t.notOk(((await alice.api.get('/users/@me')).status !== 200), 'the owner keeps the account');
    t.match(await mod.api.del(`/admin/servers/${doomed.id}`, { reason: 'x' }), { status: 404, body: { type: 'NotFound' } }, 'already gone');
    const audit = (await mod.api.get('/admin/audit')).body as any[];
    t.match(audit.find((e) => e.action === 'ServerDelete' && e.target.id === doomed.id), { actor: mod.userId, reason: 'scam ring', target: { type: 'Server' }, details: { name: 'Scam hub', owner: alice.userId } });
  });

  t.test('a revoked moderator loses access', async (t) => {
    const temp = await signup(s);
    await grant(s, temp);
    t.equal((await temp.api.get('/admin/reports')).status, 200);
    t.equal(await runAdmin(['revoke', temp.userId], { store: s.store, print: () => {} }), 0);
    await until('revoked', async () => (await s.readModels.hgetJson('instance:staff', temp.userId)) === null);
    t.match(await temp.api.get('/admin/reports'), { status: 403, body: { type: 'NotPrivileged' } });
  });

  t.test('every /admin route: anonymous 401, a user without a role 403, before any lookup', async (t) => {
    const id = newId();
    const routes: Array<[string, string, unknown?]> = [
      ['GET', '/admin/reports'],
      ['GET', `/admin/reports/${id}`],
      ['PATCH', `/admin/reports/${id}`, { notes: 'x' }],
      ['GET', `/admin/users/${id}`],
      ['POST', `/admin/users/${id}/suspend`, { reason: 'x' }],
      ['POST', `/admin/users/${id}/ban`, { reason: 'x' }],
      ['POST', `/admin/users/${id}/lift`, { reason: 'x' }],
      ['DELETE', `/admin/messages/${id}`, { reason: 'x' }],
      ['GET', '/admin/audit'],
      ['DELETE', `/admin/servers/${id}`, { reason: 'x' }],
      ['GET', '/admin/export'],
      ['GET', '/admin/export?from=nope&format=xml'],
    ];
    for (const [method, path, body] of routes) {
      t.match(await request(s.apiUrl, method, path, body === undefined ? {} : { body }), { status: 401, body: { type: 'NotAuthenticated' } }, `${method} ${path} anonymous`);
      t.match(await request(s.apiUrl, method, path, { token: alice.token, ...(body === undefined ? {} : { body }) }), { status: 403, body: { type: 'NotPrivileged' } }, `${method} ${path} no role`);
      t.match(await request(s.apiUrl, method, path.replace(id, 'bad'), { token: outsider.token, ...(body === undefined ? {} : { body }) }), path.includes(id) ? { status: 404, body: { type: 'NotFound' } } : { status: 403, body: { type: 'NotPrivileged' } }, `${method} ${path} no role, bad id (path ids are validated first, like an unknown path)`);
    }
  });

  t.test('rebuild equals live', async (t) => {
    const live = await dumpCurrent(s.redis, s.prefix);
    const rebuilt = await dumpRebuild(t, s.redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions });
    t.same(rebuilt, live);
    t.ok(Object.keys(live).some((k) => k.startsWith('report:')), 'reports are in the read models');
  });
});

t.test('a login that races a suspension is ended by the projection', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', PROJECTOR_PARTITIONS: '3' });
  const victim = await signup(s);
  // Append the suspension straight to the log, then a session created after it (as a login decided just
  // before the suspension would be): the projection drops that session.
  const { toNewEvent } = await import('../src/domain/events.ts');
  const at = new Date().toISOString();
  await s.store.append(`sanction-${victim.userId}`, [toNewEvent({ type: 'AccountSuspended', data: { userId: victim.userId, until: null, reason: 'race' } }, { actor: null, requestId: 'r', at, scope: victim.userId })], 'no_stream');
  const rev = await s.store.streamRevision(`account-${victim.userId}`);
  const { hashToken } = await import('../src/domain/account/secrets.ts');
  await s.store.append(`account-${victim.userId}`, [toNewEvent({ type: 'SessionCreated', data: { sessionId: newId(), tokenHash: hashToken('late-token-'.padEnd(40, 'x')), name: 'late' } }, { actor: victim.userId, requestId: 'r', at, scope: victim.userId })], rev);
  await until('projected', async () => (await request(s.apiUrl, 'GET', '/users/@me', { token: victim.token })).status === 401);
  t.match(await request(s.apiUrl, 'GET', '/users/@me', { token: 'late-token-'.padEnd(40, 'x') }), { status: 401, body: { type: 'InvalidSession' } });
});
