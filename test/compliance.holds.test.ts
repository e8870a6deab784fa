/**
 * Legal holds (issue 39 part 2): instance admins place holds on a server, a channel or a user (`/admin/holds`,
 * `npm run accounts -- hold …`), each an event of the revision-checked `holds` stream, projected and audited;
 * `activeHoldTargets`/`holdCovers` answer what standing holds cover (the retention sweep's question); and a held
 * account's personal data outlives the account's deletion until the last hold on it is lifted — from the log
 * itself, across the projector's replays, and after a crash between the lift's append and the key's destruction.
 */
import fs from 'node:fs';
import t from 'tap';
import { activeHoldTargets, holdCovers } from '../src/compliance/holds.ts';
import { runAdmin } from '../src/cli/accountsAdmin.ts';
import { runHold } from '../src/cli/accountsHolds.ts';
import { readErasures } from '../src/backup/erasures.ts';
import { toNewEvent } from '../src/domain/events.ts';
import { HOLDS_STREAM } from '../src/domain/hold/events.ts';
import { newId } from '../src/ids.ts';
import type { PersonalDataStore } from '../src/personal/store.ts';
import { client, signup, type Res, type TestUser } from './helpers/http.ts';
import { createServer, dumpCurrent, dumpRebuild } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';
import { until } from './helpers/wait.ts';
import { runCli } from './helpers/cli.ts';

t.test('holdCovers: a message is held by its server, its channel or its author', async (t) => {
  const none = { servers: new Set<string>(), channels: new Set<string>(), users: new Set<string>() };
  const m = { server: 'S', channel: 'C', author: 'U' };
  t.equal(holdCovers(none, m), false, 'no hold');
  t.equal(holdCovers({ ...none, servers: new Set(['S']) }, m), true, 'its server');
  t.equal(holdCovers({ ...none, servers: new Set(['S']) }, { ...m, server: null }), false, 'a DM is in no server');
  t.equal(holdCovers({ ...none, servers: new Set(['other']) }, m), false, 'another server');
  t.equal(holdCovers({ ...none, channels: new Set(['C']) }, m), true, 'its channel');
  t.equal(holdCovers({ ...none, channels: new Set(['C']) }, { ...m, channel: 'D' }), false, 'another channel');
  t.equal(holdCovers({ ...none, users: new Set(['U']) }, m), true, 'its author');
  t.equal(holdCovers({ ...none, users: new Set(['U']) }, { ...m, author: 'V' }), false, 'another author');
});

t.test('legal holds', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const store = s.store as PersonalDataStore;
  const [admin, mod, plain, alice] = await Promise.all([signup(s), signup(s), signup(s), signup(s)]);
  for (const [u, role] of [[admin, 'admin'], [mod, 'moderator']] as const) {
    await runAdmin(['grant', u.userId, '--role', role], { store, print: () => {} });
    await until(`${role} granted`, async () => (await s.readModels.hgetJson('instance:staff', u.userId)) === role);
  }
  const server = await createServer(alice);
  const place = (u: TestUser | null, body: unknown) => (u ? u.api : client(s)).post('/admin/holds', body);
  const lift = (u: TestUser | null, id: string, body: unknown = {}) => (u ? u.api : client(s)).post(`/admin/holds/${id}/lift`, body);
  const list = (u: TestUser | null, q = '') => (u ? u.api : client(s)).get(`/admin/holds${q}`);
  const same = (r: Res, status: number, type: string | undefined, what: string, tt: { same: typeof t.same } = t) => tt.same([r.status, r.body?.type], [status, type], what);

  const held = await place(admin, { name: 'Matter 1', reason: 'litigation', target: { type: 'server', id: server.id } });
  t.equal(held.status, 200, 'an admin places a hold');
  t.match(held.body, { name: 'Matter 1', reason: 'litigation', target: { type: 'server', id: server.id }, placed_by: admin.userId, lifted_at: null, active: true });

  t.test('authorization first, admins only: anonymous 401, a user or a moderator 403 (before the body is read), changing nothing', async (t) => {
    const calls: Array<[string, (u: TestUser | null) => Promise<Res>]> = [
      ['POST /admin/holds', (u) => place(u, { name: 'n', reason: 'r', target: { type: 'user', id: alice.userId } })],
      ['POST /admin/holds (invalid body)', (u) => place(u, { name: '', target: 'x', extra: 1 })],
      ['GET /admin/holds', (u) => list(u)],
      ['GET /admin/holds (invalid query)', (u) => list(u, '?limit=0&active=maybe')],
      ['POST /admin/holds/:id/lift', (u) => lift(u, held.body._id)],
      ['POST /admin/holds/:id/lift (invalid body)', (u) => lift(u, held.body._id, { reason: 7 })],
    ];
    for (const [what, call] of calls) {
      const head = await s.store.headPosition();
      same(await call(null), 401, 'NotAuthenticated', `${what}: anonymous`);
      same(await call(plain), 403, 'NotPrivileged', `${what}: a user`);
      same(await call(mod), 403, 'NotPrivileged', `${what}: a moderator`);
      t.equal(await s.store.headPosition(), head, `${what}: refusals append nothing`);
    }
    same(await list(admin), 200, undefined, 'GET /admin/holds: an admin');
  });

  t.test('bounded, validated input: JSON errors, never a 500', async (t) => {
    const target = { type: 'user', id: alice.userId };
    const head = await s.store.headPosition();
    const rows: Array<[string, unknown, number, string]> = [
      ['a name of 101 characters', { name: 'n'.repeat(101), reason: 'r', target }, 400, 'FailedValidation'],
      ['a blank name', { name: '   ', reason: 'r', target }, 400, 'FailedValidation'],
      ['a name with a control character', { name: 'a\nb', reason: 'r', target }, 400, 'FailedValidation'],
      ['no name', { reason: 'r', target }, 400, 'FailedValidation'],
      ['a reason of 513 characters', { name: 'n', reason: 'r'.repeat(513), target }, 400, 'FailedValidation'],
      ['no reason', { name: 'n', target }, 400, 'FailedValidation'],
      ['an unknown kind of target', { name: 'n', reason: 'r', target: { type: 'message', id: alice.userId } }, 400, 'FailedValidation'],
      ['a target id that is no id', { name: 'n', reason: 'r', target: { type: 'user', id: 'not-an-id' } }, 400, 'FailedValidation'],
      ['an extra field', { name: 'n', reason: 'r', target, until: 1 }, 400, 'FailedValidation'],
      ['a user that never existed', { name: 'n', reason: 'r', target: { type: 'user', id: newId() } }, 404, 'NotFound'],
      ['a server that never existed', { name: 'n', reason: 'r', target: { type: 'server', id: newId() } }, 404, 'NotFound'],
      ['a channel that never existed', { name: 'n', reason: 'r', target: { type: 'channel', id: newId() } }, 404, 'NotFound'],
    ];
    for (const [what, body, status, type] of rows) same(await place(admin, body), status, type, what);
    same(await lift(admin, newId()), 404, 'NotFound', 'lifting a hold that does not exist');
    same(await lift(admin, 'not-an-id'), 404, 'NotFound', 'lifting a malformed hold id');
    same(await lift(admin, held.body._id, { reason: 'r'.repeat(513) }), 400, 'FailedValidation', 'a lift reason of 513 characters');
    same(await list(admin, '?limit=101'), 400, 'FailedValidation', 'a page of 101');
    same(await list(admin, '?active=maybe'), 400, 'FailedValidation', 'active is true or false');
    t.equal(await s.store.headPosition(), head, 'nothing appended');
    // The bounds themselves are accepted.
    const max = await place(admin, { name: 'n'.repeat(100), reason: 'r'.repeat(512), target: { type: 'channel', id: server.general } });
    t.equal(max.status, 200, 'a name of 100 and a reason of 512 characters');
    t.equal((await lift(admin, max.body._id, { reason: 'r'.repeat(512) })).status, 200, 'a lift reason of 512 characters');
  });

  t.test('events with revisions, the read model, the audit log, and activeHoldTargets', async (t) => {
    const channelHold = await place(admin, { name: 'Matter 2', reason: 'inquiry', target: { type: 'channel', id: server.general } });
    const userHold = await place(admin, { name: 'Matter 3', reason: 'subpoena', target: { type: 'user', id: alice.userId } });
    t.equal(channelHold.status, 200);
    t.equal(userHold.status, 200);
    const targets = await activeHoldTargets(s.readModels);
    t.same([[...targets.servers], [...targets.channels], [...targets.users]], [[server.id], [server.general], [alice.userId]], 'what the standing holds cover');
    t.ok(holdCovers(targets, { server: null, channel: 'elsewhere', author: alice.userId }), "alice's DM message is held");

    const events = await s.store.readStream(HOLDS_STREAM);
    t.same(events.map((e) => e.revision), events.map((_, i) => i), 'one stream, revisions 0, 1, 2 …');
    t.same(events.slice(-2).map((e) => [e.type, (e.data as { id: string }).id, e.metadata.actor]), [
      ['HoldPlaced', channelHold.body._id, admin.userId],
      ['HoldPlaced', userHold.body._id, admin.userId],
    ]);

    const lifted = await lift(admin, channelHold.body._id, { reason: 'closed' });
    t.match(lifted.body, { _id: channelHold.body._id, active: false, lifted_by: admin.userId, lift_reason: 'closed' });
    t.ok(lifted.body.lifted_at, 'lifted at');
    same(await lift(admin, channelHold.body._id), 400, 'NoEffect', 'lifting it again');
    const after = await activeHoldTargets(s.readModels);
    t.same([[...after.servers], [...after.channels], [...after.users]], [[server.id], [], [alice.userId]], 'a lifted hold covers nothing');

    const all = await list(admin);
    t.same(all.body.map((h: { _id: string }) => h._id).slice(0, 2), [userHold.body._id, channelHold.body._id], 'newest first');
    const standing = await list(admin, '?active=true');
    t.notOk(standing.body.some((h: { _id: string }) => h._id === channelHold.body._id), 'active=true leaves lifted holds out');
    t.ok(standing.body.some((h: { _id: string }) => h._id === userHold.body._id));
    const page = await list(admin, `?limit=1&before=${userHold.body._id}`);
    t.same(page.body.map((h: { _id: string }) => h._id), [channelHold.body._id], 'paging with before');

    const audit = await admin.api.get('/admin/audit?limit=100');
    const entries = audit.body as Array<{ action: string; actor: string; reason: string; target: { type: string; id: string }; details: Record<string, unknown> }>;
    t.match(entries.find((e) => e.action === 'HoldPlace' && e.target.id === userHold.body._id), {
      actor: admin.userId,
      reason: 'subpoena',
      target: { type: 'Hold' },
      details: { name: 'Matter 3', target: { type: 'user', id: alice.userId } },
    }, 'placing is audited');
    t.match(entries.find((e) => e.action === 'HoldLift' && e.target.id === channelHold.body._id), { actor: admin.userId, reason: 'closed' }, 'lifting is audited');
    t.equal((await lift(admin, userHold.body._id)).status, 200);
  });

  t.test('the command line: hold add prints the id, hold list, hold lift', async (t) => {
    const out: string[] = [];
    const errs: string[] = [];
    const io = { store, print: (l: string) => out.push(l), error: (l: string) => errs.push(l) };
    t.equal(await runHold(['add', '--user', alice.userId, '--name', 'CLI matter', '--reason', 'by the operator'], io), 0);
    const id = out.pop()!;
    t.match(id, /^[0-9A-HJKMNP-TV-Z]{26}$/, 'prints the id');
    const h = await until('projected', () => s.readModels.hgetJson<{ placed_by: string | null; name: string }>('holds', id));
    t.match(h, { placed_by: null, name: 'CLI matter' }, 'the operator placed it (actor null)');
    t.equal(await runHold(['list', '--active'], io), 0);
    t.ok(out.some((l) => l.startsWith(`${id}\tactive\tuser:${alice.userId}\t`)), 'listed as active');
    out.length = 0;
    t.equal(await runHold(['lift', id, '--reason', 'done'], io), 0);
    t.same(out, [`lifted ${id}`]);
    t.equal(await runHold(['lift', id], io), 1, 'lifting again is refused');
    out.length = 0;
    t.equal(await runHold(['list', '--active'], io), 0);
    t.notOk(out.some((l) => l.startsWith(id)), 'no longer active');
    const head = await s.store.headPosition();
    t.equal(await runHold(['add', '--user', newId(), '--name', 'n', '--reason', 'r'], io), 1, 'an unknown user');
    t.equal(await runHold(['add', '--user', alice.userId, '--server', server.id, '--name', 'n', '--reason', 'r'], io), 2, 'two targets');
    t.equal(await runHold(['add', '--user', alice.userId, '--reason', 'r'], io), 2, 'no name');
    t.equal(await runHold(['add', '--user', alice.userId, '--name', 'n'.repeat(101), '--reason', 'r'], io), 2, 'a name of 101 characters');
    t.equal(await runHold(['add', '--user', 'nope', '--name', 'n', '--reason', 'r'], io), 2, 'not an id');
    t.equal(await runHold(['lift', newId()], io), 1, 'an unknown hold');
    t.equal(await runHold(['frobnicate'], io), 2);
    t.equal(await s.store.headPosition(), head, 'refusals append nothing');
  });

  t.test('concurrent placements from the API and the command line all land, revision-checked', async (t) => {
    const before = await s.store.streamRevision(HOLDS_STREAM);
    const printed: string[] = [];
    const io = { store, print: (l: string) => printed.push(l), error: () => {} };
    const results = await Promise.all([
      ...Array.from({ length: 4 }, (_, i) => place(admin, { name: `race ${i}`, reason: 'r', target: { type: 'server', id: server.id } }).then((r) => r.status)),
      ...Array.from({ length: 3 }, (_, i) => runHold(['add', '--server', server.id, '--name', `cli race ${i}`, '--reason', 'r'], io)),
    ]);
    t.same(results, [200, 200, 200, 200, 0, 0, 0], 'every placement succeeded');
    const events = (await s.store.readStream(HOLDS_STREAM)).slice(before + 1);
    t.equal(events.length, 7, 'seven events, one per placement');
    t.same(events.map((e) => e.revision), Array.from({ length: 7 }, (_, i) => before + 1 + i), 'at consecutive revisions');
    t.equal(new Set(events.map((e) => (e.data as { id: string }).id)).size, 7, 'seven distinct holds');
    for (const id of [...events.map((e) => (e.data as { id: string }).id)]) t.equal((await lift(admin, id)).status, 200);
  });

  t.test('the command line as its own process: npm run accounts -- hold add prints the id', async (t) => {
    const env = { DATA_DIR: s.dataDir, REDIS_URL: s.config.redisUrl, REDIS_PREFIX: s.prefix, LOG_LEVEL: 'silent' };
    const opts = { script: 'src/cli/accounts.ts' };
    const added = await runCli(env, ['hold', 'add', '--server', server.id, '--name', 'Process matter', '--reason', 'from a shell'], opts);
    t.equal(added.code, 0, added.err);
    const id = added.out.trim();
    t.match(id, /^[0-9A-HJKMNP-TV-Z]{26}$/, 'stdout is the id alone');
    await until('projected by the running service', () => s.readModels.hgetJson<{ name: string }>('holds', id));
    const listed = await runCli(env, ['hold', 'list', '--active'], opts);
    t.ok(listed.out.split('\n').some((l) => l.startsWith(`${id}\tactive\tserver:${server.id}\t`)), 'hold list shows it');
    const lifted = await runCli(env, ['hold', 'lift', id], opts);
    t.same([lifted.code, lifted.out.trim()], [0, `lifted ${id}`]);
    const usage = await runCli(env, ['hold', 'add', '--server', server.id], opts);
    t.equal(usage.code, 2, 'no name or reason: usage, exit 2');
  });

  t.test("a held account's personal data outlives its deletion until the last hold on it is lifted", async (t) => {
    const email = (await store.readStream(`account-${alice.userId}`)).find((e) => e.type === 'AccountCreated')!.data as { email?: string };
    t.ok(email.email, 'the email opens before anything happens');
    const opens = async (userId: string) => Boolean(((await store.readStream(`account-${userId}`)).find((e) => e.type === 'AccountCreated')!.data as { email?: string }).email);
    const erased = (userId: string) => readErasures(s.config.erasureLog).some((e) => e.subject === userId && !e.held);
    const deleteAccount = async (u: TestUser) => {
      const ticket = await u.api.put('/auth/mfa/ticket', { password: u.password });
      t.equal((await u.api.post('/auth/account/delete', undefined, { headers: { 'X-MFA-Ticket': ticket.body.token } })).status, 204, 'deleted');
    };

    // Two holds on alice; her account is deleted while they stand.
    const h1 = (await place(admin, { name: 'A', reason: 'r', target: { type: 'user', id: alice.userId } })).body._id as string;
    const h2 = (await place(admin, { name: 'B', reason: 'r', target: { type: 'user', id: alice.userId } })).body._id as string;
    await deleteAccount(alice);
    t.equal((await alice.api.get('/users/@me')).status, 401, 'the account is deleted for everything else: its sessions are gone');
    t.same((await client(s).post('/auth/session/login', { email: alice.email, password: alice.password })).status, 401, 'no login');
    t.equal(await store.keys.destroyed(alice.userId), false, 'the key stands');
    t.equal(await opens(alice.userId), true, 'her personal fields still open from the log');
    t.notOk(erased(alice.userId), 'no erasure recorded');
    t.ok(readErasures(s.config.erasureLog).some((e) => e.subject === alice.userId && e.held), 'the deletion is recorded as held (for restores)');

    // The projector repeats every erasing event it sees, replays too: a replay from the start keeps the key.
    const head = (await store.headPosition())!;
    let seen = 0n;
    const sub = store.subscribe({ onEvents: (es) => void (seen = es[es.length - 1]!.position) });
    await until('a replay passed the deletion', async () => seen >= head);
    await sub.close();
    t.equal(await store.keys.destroyed(alice.userId), false, 'a replay keeps the key of a held account');

    t.equal((await lift(admin, h1)).status, 200);
    t.equal(await opens(alice.userId), true, 'another hold still stands: the fields still open');
    t.equal((await lift(admin, h2)).status, 200);
    t.equal(await store.keys.destroyed(alice.userId), true, 'the last lift destroys the key');
    t.equal(await opens(alice.userId), false, 'her personal fields no longer open');
    t.ok(erased(alice.userId), 'the erasure log (read by restores) records it');

    // A hold on an account that is not deleted: lifting it erases nothing.
    const bob = await signup(s);
    const hb = (await place(admin, { name: 'C', reason: 'r', target: { type: 'user', id: bob.userId } })).body._id as string;
    t.equal((await lift(admin, hb)).status, 200);
    t.equal(await opens(bob.userId), true, "lifting a hold on a live account keeps that account's data");
    t.notOk(erased(bob.userId));

    // Without a hold, deleting still erases at once.
    const carol = await signup(s);
    await deleteAccount(carol);
    t.equal(await opens(carol.userId), false, 'an account that is not held is erased on deletion');
  });

  t.test('a crash between the lift and the destruction: the projector destroys the key', async (t) => {
    const dave = await signup(s);
    const id = (await place(admin, { name: 'D', reason: 'r', target: { type: 'user', id: dave.userId } })).body._id as string;
    const ticket = await dave.api.put('/auth/mfa/ticket', { password: dave.password });
    t.equal((await dave.api.post('/auth/account/delete', undefined, { headers: { 'X-MFA-Ticket': ticket.body.token } })).status, 204);
    t.equal(await store.keys.destroyed(dave.userId), false, 'held: the key stands');
    // The lift as a process that died right after its append leaves it: in the log, past the boundary's erase.
    const events = await store.inner.readStream(HOLDS_STREAM);
    const meta = { actor: admin.userId, requestId: `crash-${id}`, at: new Date().toISOString(), scope: 'instance' };
    await store.inner.append(HOLDS_STREAM, [toNewEvent({ type: 'HoldLifted', data: { id, target: { type: 'user', id: dave.userId }, reason: null } }, meta)], events[events.length - 1]!.revision);
    await until('the projector destroyed the key', async () => (await store.keys.destroyed(dave.userId)) || undefined);
    t.ok(readErasures(s.config.erasureLog).some((e) => e.subject === dave.userId && !e.held), 'and recorded the erasure');
    t.ok(fs.existsSync(s.config.erasureLog));
  });

  t.test('a rebuild reproduces the holds and their audit entries, and destroys no held key', async (t) => {
    const erin = await signup(s);
    await place(admin, { name: 'E', reason: 'r', target: { type: 'user', id: erin.userId } });
    const ticket = await erin.api.put('/auth/mfa/ticket', { password: erin.password });
    t.equal((await erin.api.post('/auth/account/delete', undefined, { headers: { 'X-MFA-Ticket': ticket.body.token } })).status, 204);
    const live = await dumpCurrent(s.redis, s.prefix);
    const rebuilt = await dumpRebuild(t, s.redis, { store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: 1 });
    t.same(rebuilt, live, 'rebuild equals live');
    t.ok(Object.keys(live).some((k) => k === 'holds'), 'the holds are in the read models');
    t.equal(await store.keys.destroyed(erin.userId), false, 'the held key outlives the rebuild');
  });
});
