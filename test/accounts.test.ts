import t from 'tap';
import { startTestService } from './helpers/service.ts';
import { client, signup } from './helpers/http.ts';

t.test('accounts and sessions', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const anon = client(s);

  t.test('root', async (t) => {
    const r = await anon.get('/');
    t.equal(r.status, 200);
    t.equal(r.body.revolt, '0.15.7');
    t.equal(r.body.features.voice.enabled, false);
    t.equal(r.body.features.autumn.url, s.config.mediaPublicUrl);
    t.equal(r.body.ws, s.config.wsPublicUrl);
  });

  t.test('create, login, onboard, me', async (t) => {
    const email = 'Alice@Example.test';
    const password = 'hunter2hunter2';
    t.equal((await anon.post('/auth/account/create', { email, password })).status, 204);
    // Registering the same email again says nothing (204) and creates nothing.
    t.equal((await anon.post('/auth/account/create', { email: 'alice@example.test', password: 'another password' })).status, 204);
    const bad = await anon.post('/auth/session/login', { email, password: 'wrong password' });
    t.equal(bad.status, 401);
    t.equal(bad.body.type, 'InvalidCredentials');
    const login = await anon.post('/auth/session/login', { email, password, friendly_name: 'laptop' });
    t.equal(login.status, 200);
    t.equal(login.body.result, 'Success');
    t.match(login.body, { _id: String, user_id: String, token: String, name: 'laptop', last_seen: String });
    t.ok(login.body.token.length >= 43, 'token carries at least 32 random bytes');
    const me = client(s, login.body.token);
    t.same((await me.get('/onboard/hello')).body, { onboarding: true });
    t.equal((await me.get('/users/@me')).status, 401, 'a user route needs onboarding');
    const done = await me.post('/onboard/complete', { username: 'alice' });
    t.equal(done.status, 200);
    t.equal(done.body.username, 'alice');
    t.match(done.body.discriminator, /^\d{4}$/);
    t.equal(done.body.relationship, 'User');
    t.same((await me.get('/onboard/hello')).body, { onboarding: false });
    t.equal((await me.post('/onboard/complete', { username: 'alice2' })).body.type, 'AlreadyOnboarded');
    const self = await me.get('/users/@me');
    t.equal(self.body._id, login.body.user_id);
    t.equal((await me.get(`/users/${login.body.user_id}`)).body.username, 'alice');
    t.equal((await me.get('/users/01HZZZZZZZZZZZZZZZZZZZZZZZ')).status, 404);
  });

  t.test('password rules and email validation', async (t) => {
    t.equal((await anon.post('/auth/account/create', { email: 'short@example.test', password: '1234567' })).body.type, 'ShortPassword');
    t.equal((await anon.post('/auth/account/create', { email: 'ok8@example.test', password: '12345678' })).status, 204);
    t.same((await anon.post('/auth/account/create', { email: 'not-an-email', password: '12345678' })).body.type, 'IncorrectData');
    t.equal((await anon.post('/auth/account/create', { email: 'x@example.test', password: '12345678', colour: 1 })).body.type, 'FailedValidation');
  });

  t.test('username rules', async (t) => {
    const u = await signup(s);
    const api = client(s, u.token);
    t.equal((await api.post('/onboard/complete', { username: 'another' })).body.type, 'AlreadyOnboarded');
    const fresh = await (async () => {
      const email = `fresh${Date.now()}@example.test`;
      await anon.post('/auth/account/create', { email, password: 'password123' });
      return client(s, (await anon.post('/auth/session/login', { email, password: 'password123' })).body.token);
    })();
    t.equal((await fresh.post('/onboard/complete', { username: 'a' })).body.type, 'FailedValidation');
    t.equal((await fresh.post('/onboard/complete', { username: 'x'.repeat(33) })).body.type, 'FailedValidation');
    t.equal((await fresh.post('/onboard/complete', { username: 'Admin' })).body.type, 'InvalidUsername');
    t.equal((await fresh.post('/onboard/complete', { username: 'join.discord.gg' })).body.type, 'InvalidUsername');
    t.equal((await fresh.post('/onboard/complete', { username: 'bad name' })).body.type, 'FailedValidation');
    t.equal((await fresh.post('/onboard/complete', { username: 'x'.repeat(32) })).status, 200);
  });

  t.test('same username gets distinct discriminators under concurrency', async (t) => {
    const users = await Promise.all(Array.from({ length: 8 }, () => signup(s, 'samename')));
    const discs = new Set(users.map((u) => u.username));
    t.equal(discs.size, 1);
    const me = await Promise.all(users.map((u) => u.api.get('/users/@me')));
    t.equal(new Set(me.map((r) => r.body.discriminator)).size, 8);
  });

  t.test('sessions: list, rename, revoke, logout', async (t) => {
    const u = await signup(s);
    const second = await anon.post('/auth/session/login', { email: u.email, password: u.password, friendly_name: 'phone' });
    const phone = client(s, second.body.token);
    const list = await u.api.get('/auth/session/all');
    t.equal(list.body.length, 2);
    t.equal((await u.api.patch(`/auth/session/${second.body._id}`, { friendly_name: 'tablet' })).body.name, 'tablet');
    t.ok((await u.api.get('/auth/session/all')).body.some((x: any) => x.name === 'tablet'));
    t.equal((await u.api.del(`/auth/session/${second.body._id}`, {})).status, 204);
    const revoked = await phone.get('/users/@me');
    t.equal(revoked.status, 401);
    t.equal(revoked.body.type, 'InvalidSession');
    t.equal((await u.api.del('/auth/session/01HZZZZZZZZZZZZZZZZZZZZZZZ', {})).status, 404);
    t.equal((await u.api.post('/auth/session/logout')).status, 204);
    t.equal((await u.api.get('/users/@me')).body.type, 'InvalidSession');
    t.equal((await anon.get('/users/@me')).body.type, 'NotAuthenticated');
  });

  t.test('revoke all keeps the caller unless revoke_self', async (t) => {
    const u = await signup(s);
    const other = client(s, (await anon.post('/auth/session/login', { email: u.email, password: u.password })).body.token);
    t.equal((await u.api.del('/auth/session/all?revoke_self=false', {})).status, 204);
    t.equal((await other.get('/users/@me')).status, 401);
    t.equal((await u.api.get('/users/@me')).status, 200);
    t.equal((await u.api.del('/auth/session/all?revoke_self=true', {})).status, 204);
    t.equal((await u.api.get('/users/@me')).status, 401);
  });

  t.test('lockout after repeated failures', async (t) => {
    const u = await signup(s);
    const attempt = (password: string) => anon.post('/auth/session/login', { email: u.email, password });
    t.equal((await attempt('wrong-1')).status, 401);
    t.equal((await attempt('wrong-2')).status, 401);
    t.equal((await attempt('wrong-3')).status, 401, 'third failure still says invalid credentials and starts a lockout');
    const locked = await attempt(u.password);
    t.equal(locked.status, 403);
    t.equal(locked.body.type, 'LockedOut');
  });

  t.test('password change', async (t) => {
    const u = await signup(s);
    t.equal((await u.api.patch('/auth/account/change/password', { password: 'new password 1', current_password: 'nope nope' })).body.type, 'InvalidCredentials');
    t.equal((await u.api.patch('/auth/account/change/password', { password: 'new password 1', current_password: u.password })).status, 204);
    t.equal((await anon.post('/auth/session/login', { email: u.email, password: u.password })).status, 401);
    t.equal((await anon.post('/auth/session/login', { email: u.email, password: 'new password 1' })).status, 200);
    t.same((await u.api.get('/auth/account/')).body, { _id: u.userId, email: u.email.toLowerCase() });
  });

  t.test('profile edit', async (t) => {
    const u = await signup(s);
    const r = await u.api.patch('/users/@me', { display_name: 'Ünïcode', status: { text: 'hi', presence: 'Busy' } });
    t.equal(r.status, 200);
    t.equal(r.body.display_name, 'Ünïcode');
    t.same(r.body.status, { text: 'hi', presence: 'Busy' });
    const cleared = await u.api.patch('/users/@me', { remove: ['StatusText', 'DisplayName'] });
    t.same(cleared.body.status, { presence: 'Busy' });
    t.notOk('display_name' in cleared.body);
    t.equal((await u.api.patch('/users/@me', { display_name: 'x'.repeat(33) })).body.type, 'FailedValidation');
    t.equal((await u.api.patch('/users/@me', { display_name: 'x'.repeat(32) })).status, 200);
    t.equal((await u.api.patch('/users/@me', { color: 'red' })).body.type, 'FailedValidation');
  });

  t.test('secrets never enter the log in plain text', async (t) => {
    const u = await signup(s);
    const all: string[] = [];
    for await (const e of s.store.readAll()) all.push(JSON.stringify(e.data) + JSON.stringify(e.metadata));
    const log = all.join('\n');
    t.notOk(log.includes(u.password), 'no password');
    t.notOk(log.includes(u.token), 'no session token');
  });
});
