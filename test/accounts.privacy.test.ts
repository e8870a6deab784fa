/**
 * Personal data in an immutable log, and what login reveals:
 * - login does not tell whether an account exists (same answers, same lockout, the hash runs either way);
 * - personal fields are sealed in the log, readable through the boundary, and erased by deleting the account:
 *   a rebuild and an export after the deletion show none of them (crypto-shredding);
 * - events written in plain text before sealing still read; `migrate` copies sealed fields as they are;
 * - invite-only sign-up (ACCOUNT_INVITES and `npm run accounts -- invite create`), the per-user server limit.
 */
import t from 'tap';
import path from 'node:path';
import { startTestService, tempDir } from './helpers/service.ts';
import { client, signup } from './helpers/http.ts';
import { dumpCurrent, dumpRebuild } from './helpers/servers.ts';
import { runCli } from './helpers/cli.ts';
import { emailDigest, hashPassword, passwordChecks } from '../src/domain/account/secrets.ts';
import { toNewEvent } from '../src/domain/events.ts';
import { newId } from '../src/ids.ts';
import { migrate } from '../src/cli/eventsLib.ts';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import { PersonalDataStore } from '../src/personal/store.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';

async function rawLog(store: { readAll(): AsyncIterable<RecordedEvent> }): Promise<string> {
  const out: string[] = [];
  for await (const e of store.readAll()) out.push(JSON.stringify(e.data));
  return out.join('\n');
}

t.test('login does not reveal whether an account exists', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const anon = client(s);
  const known = await signup(s);
  const unknown = `nobody.${Date.now()}@example.test`;
  const attempt = async (email: string) => {
    const before = passwordChecks.count;
    const r = await anon.post('/auth/session/login', { email, password: 'wrong password here' });
    return { status: r.status, body: r.body, hashed: passwordChecks.count - before };
  };
  const k: unknown[] = [];
  const u: unknown[] = [];
  for (let i = 0; i < 5; i++) {
    k.push(await attempt(known.email));
    u.push(await attempt(unknown));
  }
  t.same(u, k, 'the same statuses and bodies, attempt by attempt, lockout included');
  t.same((k as Array<{ status: number }>).map((x) => x.status), [401, 401, 401, 403, 403], 'the third failure locks (Revolt steps)');
  t.ok((u as Array<{ hashed: number }>).every((x) => x.hashed === 1), 'an unknown email runs the password hash once, like a known one');
  const malformed = await attempt('not-an-email');
  t.same([malformed.status, malformed.body.type, malformed.hashed], [401, 'InvalidCredentials', 1]);
  // Another unknown address is not locked by the first one's failures.
  const fresh = await attempt(`other.${Date.now()}@example.test`);
  t.same([fresh.status, fresh.body.type], [401, 'InvalidCredentials']);
});

t.test('personal data: sealed in the log, erased by deletion', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const env = { DATA_DIR: s.dataDir, REDIS_URL: s.config.redisUrl, REDIS_PREFIX: s.prefix, LOG_LEVEL: 'silent' };
  const inner = (s.store as PersonalDataStore).inner;
  const a = await signup(s, `shred${process.pid}`);
  const b = await signup(s);
  const displayName = `Zelda Quux ${process.pid}`;
  t.equal((await a.api.patch('/users/@me', { display_name: displayName })).status, 200);
  const server = await b.api.post('/servers/create', { name: 'privacy' });
  const channel = server.body.channels[0]._id as string;
  const invite = await b.api.post(`/channels/${channel}/invites`);
  await a.api.post(`/invites/${invite.body._id}`);
  const message = await a.api.post(`/channels/${channel}/messages`, { content: 'a message that stays' });
  const c = await signup(s);

  const before = await rawLog(inner);
  t.notOk(before.includes(a.email), 'the email is not in the log in plain text');
  t.notOk(before.includes(displayName), 'nor the display name');
  t.notOk(before.includes('scrypt$'), 'nor a password hash');
  const exported = await runCli(env, ['export']);
  t.equal(exported.code, 0, exported.err);
  t.ok(exported.out.includes(a.email) && exported.out.includes(displayName), 'the export opens them (through the key store)');

  // Deleting (no SMTP: at once, with a ticket).
  const ticket = await a.api.put('/auth/mfa/ticket', { password: a.password });
  t.equal((await a.api.post('/auth/account/delete', undefined, { headers: { 'X-MFA-Ticket': ticket.body.token } })).status, 204);
  t.equal((await a.api.get('/users/@me')).status, 401, 'sessions are gone');
  const seen = await b.api.get(`/users/${a.userId}`);
  t.match(seen.body, { _id: a.userId, username: 'Deleted User', flags: 2 });
  t.notOk('display_name' in seen.body, 'no display name');
  const msg = await b.api.get(`/channels/${channel}/messages/${message.body._id}`);
  t.same([msg.status, msg.body.content, msg.body.author], [200, 'a message that stays', a.userId], 'messages stay, as in Stoat');
  const login = await client(s).post('/auth/session/login', { email: a.email, password: a.password });
  t.same([login.status, login.body.type], [401, 'InvalidCredentials']);

  const live = await dumpCurrent(s.redis, s.prefix);
  const rebuilt = await dumpRebuild(t, s.redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: 1 });
  t.same(rebuilt, live, 'rebuild equals live after a deletion');
  for (const [what, text] of [['live read models', JSON.stringify(live)], ['rebuilt read models', JSON.stringify(rebuilt)]] as const) {
    t.notOk(text.includes(a.email), `no email in the ${what}`);
    t.notOk(text.includes(displayName), `no display name in the ${what}`);
  }
  t.ok(JSON.stringify(rebuilt).includes(c.email), 'other accounts are untouched (the test can see an email when there is one)');
  const after = await runCli(env, ['export']);
  t.equal(after.code, 0, after.err);
  t.notOk(after.out.includes(a.email), 'no email in the export');
  t.notOk(after.out.includes(displayName), 'no display name in the export');
  t.ok(after.out.includes(c.email), 'the export still opens the others');

  // The email may be registered again.
  t.equal((await client(s).post('/auth/account/create', { email: a.email, password: 'a new life here' })).status, 204);
  t.equal((await client(s).post('/auth/session/login', { email: a.email, password: 'a new life here' })).status, 200);

  t.test('migrate copies sealed fields as they are', async (t) => {
    const dir = tempDir(t);
    const target = new SqliteEventStore(path.join(dir, 'copy.sqlite'));
    t.teardown(() => target.close());
    await migrate(inner, target, { checkpointDir: dir, targetId: 'copy' });
    t.notOk((await rawLog(target)).includes(c.email), 'ciphertext stays ciphertext');
    const opened = await rawLog(new PersonalDataStore(target, s.deps.keys));
    t.ok(opened.includes(c.email), 'and opens with the same key store');
    t.notOk(opened.includes(displayName), 'a deleted account stays erased in the copy');
  });

  t.test('events written in plain text before sealing still read, and are hidden once deleted', async (t) => {
    const userId = newId();
    const email = `legacy.${Date.now()}@example.test`;
    const meta = { actor: userId, requestId: 'legacy', at: new Date().toISOString(), scope: userId };
    await inner.append(`email-${emailDigest(email)}`, [toNewEvent({ type: 'EmailClaimed', data: { userId } }, meta)], 'no_stream');
    const r = await inner.append(`account-${userId}`, [toNewEvent({ type: 'AccountCreated', data: { userId, email, passwordHash: await hashPassword('legacy password') } }, meta)], 'no_stream');
    await s.readModels.waitFor(userId, r.position);
    t.ok((await rawLog(inner)).includes(email), 'written in plain text (as before this change)');
    const login = await client(s).post('/auth/session/login', { email, password: 'legacy password' });
    t.same([login.status, login.body.result], [200, 'Success'], 'a legacy account logs in (plain SHA-256 email digest)');
    const again = await client(s).post('/auth/account/create', { email, password: 'someone else' });
    t.equal(again.status, 204);
    t.equal((await client(s).post('/auth/session/login', { email, password: 'someone else' })).status, 401, 'its email is still taken');
    const me = client(s, login.body.token);
    const tk = await me.put('/auth/mfa/ticket', { password: 'legacy password' });
    t.equal((await me.post('/auth/account/delete', undefined, { headers: { 'X-MFA-Ticket': tk.body.token } })).status, 204);
    const rebuilt2 = JSON.stringify(await dumpRebuild(t, s.redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: 1 }));
    t.notOk(rebuilt2.includes(email), 'a deleted legacy account shows no email after a rebuild');
  });
});

t.test('invite-only sign-up and the per-user server limit', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', INVITE_ONLY: 'true', ACCOUNT_INVITES: 'fixed-code-1,fixed-code-2', USER_SERVER_LIMIT: '2' });
  const env = { DATA_DIR: s.dataDir, REDIS_URL: s.config.redisUrl, REDIS_PREFIX: s.prefix, LOG_LEVEL: 'silent' };
  const anon = client(s);
  t.equal((await anon.get('/')).body.features.invite_only, true);
  const mail = (n: string) => `${n}.${Date.now()}@example.test`;
  const missing = await anon.post('/auth/account/create', { email: mail('a'), password: 'password123' });
  t.same([missing.status, missing.body.type], [400, 'MissingInvite']);
  const invalid = await anon.post('/auth/account/create', { email: mail('a'), password: 'password123', invite: 'not-a-code' });
  t.same([invalid.status, invalid.body.type], [400, 'InvalidInvite']);
  const first = mail('first');
  t.equal((await anon.post('/auth/account/create', { email: first, password: 'password123', invite: 'fixed-code-1' })).status, 204);
  t.equal((await anon.post('/auth/session/login', { email: first, password: 'password123' })).status, 200);
  const used = await anon.post('/auth/account/create', { email: mail('b'), password: 'password123', invite: 'fixed-code-1' });
  t.same([used.status, used.body.type], [400, 'InvalidInvite'], 'an invite is used once');

  const created = await runCli(env, ['invite', 'create'], { script: 'src/cli/accounts.ts' });
  t.equal(created.code, 0, created.err);
  const code = created.out.trim();
  t.match(code, /^[A-Za-z0-9_-]{20}$/);
  t.notOk((await rawLog(s.store)).includes(code), 'the code is not in the log in plain text');
  const second = mail('second');
  t.equal((await anon.post('/auth/account/create', { email: second, password: 'password123', invite: code })).status, 204);
  const list = await runCli(env, ['invite', 'list'], { script: 'src/cli/accounts.ts' });
  t.equal(list.code, 0, list.err);
  const login = await anon.post('/auth/session/login', { email: second, password: 'password123' });
  t.match(list.out, new RegExp(`^${code}\\t\\S+\\tused by ${login.body.user_id}$`, 'm'));
  const bad = await runCli(env, ['invite', 'nope'], { script: 'src/cli/accounts.ts' });
  t.equal(bad.code, 2);

  // Stoat's per-user server limit: 2 here.
  const u = client(s, login.body.token);
  await u.post('/onboard/complete', { username: `limit${process.pid}` });
  t.equal((await u.post('/servers/create', { name: 'one' })).status, 200);
  t.equal((await u.post('/servers/create', { name: 'two' })).status, 200);
  const third = await u.post('/servers/create', { name: 'three' });
  t.same([third.status, third.body], [400, { type: 'TooManyServers', max: 2, location: third.body.location }]);
  const ownerLogin = await anon.post('/auth/session/login', { email: first, password: 'password123' });
  const owner = client(s, ownerLogin.body.token);
  await owner.post('/onboard/complete', { username: `owner${process.pid}` });
  const srv = await owner.post('/servers/create', { name: 'elsewhere' });
  const inv = await owner.post(`/channels/${srv.body.channels[0]._id}/invites`);
  const join = await u.post(`/invites/${inv.body._id}`);
  t.same([join.status, join.body.type], [400, 'TooManyServers'], 'joining counts too');
});
