// Login's lockout covers every check of a password or second factor with a session (issue 35 #5): wrong
// answers on PUT /auth/mfa/ticket (password and TOTP), PATCH /auth/account/change/password,
// PATCH /auth/account/change/email and PATCH /users/@me/username are counted with login's failures (3rd →
// 1 min, 4th → 5 min, then 1 h); while locked each of them, and login, answers 403 LockedOut even to the right
// answer (the username route, whose Stoat errors have no LockedOut, 401 InvalidCredentials), and nothing changes; after the lockout the right answer works again.
import t from 'tap';
import { totp } from './helpers/totp.ts';

const tap = t;
import { client, signup, type TestUser } from './helpers/http.ts';
import { startTestService } from './helpers/service.ts';

t.test('lockout of password and second-factor checks with a session', async (t) => {
  let offset = 0;
  const now = () => Date.now() + offset;
  const s = await startTestService(t, { RATE_LIMITS: 'off' }, { now });
  const anon = client(s);
  const answer = (r: { status: number; body: any }) => [r.status, r.body?.type];
  const login = (u: TestUser, password = u.password) => anon.post('/auth/session/login', { email: u.email, password });

  /** Three wrong answers, then the right one: [401 ×3, 403 LockedOut], and login is locked too. */
  async function locksOut(t: Pick<typeof tap, 'same'>, u: TestUser, wrong: () => Promise<{ status: number; body: any }>, right: () => Promise<{ status: number; body: any }>, wrongType = 'InvalidCredentials', locked: unknown[] = [403, 'LockedOut']) {
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(answer(await wrong()));
    t.same(answers, [[401, wrongType], [401, wrongType], [401, wrongType]], 'three wrong answers are refused (the third locks)');
    t.same(answer(await right()), locked, 'while locked, the right answer is refused');
    t.same(answer(await login(u)), [403, 'LockedOut'], 'and so is login');
  }

  t.test('PUT /auth/mfa/ticket with a password', async (t) => {
    const u = await signup(s);
    await locksOut(t, u, () => u.api.put('/auth/mfa/ticket', { password: 'not my password' }), () => u.api.put('/auth/mfa/ticket', { password: u.password }));
    offset += 61_000;
    t.equal((await u.api.put('/auth/mfa/ticket', { password: u.password })).status, 200, 'after the lockout');
  });

  t.test('PUT /auth/mfa/ticket with a TOTP code', async (t) => {
    const u = await signup(s);
    const ticket = await u.api.put('/auth/mfa/ticket', { password: u.password });
    const gen = await u.api.post('/auth/mfa/totp', undefined, { headers: { 'X-MFA-Ticket': ticket.body.token } });
    const secret = gen.body.secret as string;
    t.equal((await u.api.put('/auth/mfa/totp', { totp_code: totp(secret, now()) })).status, 204, 'TOTP on');
    offset += 30_000;
    const wrongCode = () => totp(secret, now() + 10 * 60_000);
    await locksOut(t, u, () => u.api.put('/auth/mfa/ticket', { totp_code: wrongCode() }), () => u.api.put('/auth/mfa/ticket', { totp_code: totp(secret, now()) }), 'InvalidToken');
    offset += 61_000;
    t.equal((await u.api.put('/auth/mfa/ticket', { totp_code: totp(secret, now()) })).status, 200, 'after the lockout');
  });

  t.test('PATCH /auth/account/change/password', async (t) => {
    const u = await signup(s);
    const change = (current: string) => u.api.patch('/auth/account/change/password', { password: 'a brand new password', current_password: current });
    await locksOut(t, u, () => change('not my password'), () => change(u.password));
    offset += 61_000;
    t.same(answer(await login(u, 'a brand new password')), [401, 'InvalidCredentials'], 'the locked-out change did not happen');
    // That failed login is the 4th in a row: 5 minutes more.
    t.same(answer(await change(u.password)), [403, 'LockedOut'], 'a 4th failure locks for longer');
    offset += 5 * 60_000 + 1000;
    t.equal((await change(u.password)).status, 204, 'after the lockout');
  });

  t.test('PATCH /auth/account/change/email', async (t) => {
    const u = await signup(s);
    const change = (current: string) => u.api.patch('/auth/account/change/email', { email: `moved.${u.userId.toLowerCase()}@example.test`, current_password: current });
    await locksOut(t, u, () => change('not my password'), () => change(u.password));
    offset += 61_000;
    t.equal((await change(u.password)).status, 204, 'after the lockout');
  });

  t.test('PATCH /users/@me/username', async (t) => {
    const u = await signup(s);
    const change = (password: string) => u.api.patch('/users/@me/username', { username: `${u.username}x`, password });
    // Stoat's errors for this route have no LockedOut: the right password is refused as a wrong one.
    await locksOut(t, u, () => change('not my password'), () => change(u.password), 'InvalidCredentials', [401, 'InvalidCredentials']);
    t.equal((await u.api.get('/users/@me')).body.username, u.username, 'the name did not change');
    offset += 61_000;
    t.equal((await change(u.password)).status, 200, 'after the lockout');
  });

  t.test('failures count together with login', async (t) => {
    const u = await signup(s);
    t.same(answer(await login(u, 'wrong one')), [401, 'InvalidCredentials']);
    t.same(answer(await u.api.put('/auth/mfa/ticket', { password: 'wrong two' })), [401, 'InvalidCredentials']);
    t.same(answer(await u.api.patch('/auth/account/change/password', { password: 'a brand new password', current_password: 'wrong three' })), [401, 'InvalidCredentials']);
    t.same(answer(await login(u)), [403, 'LockedOut'], 'the third failure, on any of them, locks');
    offset += 61_000;
    t.equal((await login(u)).status, 200);
  });
});
