/**
 * Email flows against a real SMTP conversation (smtp-server on loopback, credentials in SMTP_URL): sign-up
 * verification (login refused until verified), reverify, password reset, email change, the deletion mail,
 * single-use and expiring tokens, plain-text + HTML bodies, links under APP_URL, and a mail sent while the
 * SMTP server is down arriving once it is back (BullMQ retries with backoff).
 */
import t from 'tap';
import net from 'node:net';
import { startTestService } from './helpers/service.ts';
import { client } from './helpers/http.ts';
import { linkToken, startSmtp, type TestSmtp } from './helpers/smtp.ts';
import { until } from './helpers/wait.ts';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

t.test('email', async (t) => {
  let smtp: TestSmtp = await startSmtp({ user: 'mailer', pass: 's3cret' });
  t.teardown(() => smtp.close());
  let offset = 0;
  const s = await startTestService(
    t,
    { RATE_LIMITS: 'off', SMTP_URL: `smtp://mailer:s3cret@127.0.0.1:${smtp.port}`, EMAIL_FROM: 'Stoatish <noreply@stoat.test>', APP_URL: 'https://app.stoat.test', MAIL_RETRY_DELAY_MS: '100' },
    { now: () => Date.now() + offset },
  );
  const anon = client(s);
  const password = 'correct horse battery';

  t.test('root advertises email', async (t) => {
    t.equal((await anon.get('/')).body.features.email, true);
  });

  const email = `verify.${Date.now()}@example.test`;
  let token = '';
  t.test('sign-up sends a verification mail; login waits for it', async (t) => {
    const from = smtp.mails.length;
    t.equal((await anon.post('/auth/account/create', { email, password })).status, 204);
    const mail = await smtp.waitFor(email, from);
    t.equal(mail.subject, 'Verify your email');
    t.match(mail.raw, /Content-Type: text\/plain/, 'plain-text body');
    t.match(mail.raw, /Content-Type: text\/html/, 'HTML body');
    t.match(mail.raw, /From: Stoatish <noreply@stoat\.test>/);
    t.match(mail.body, /https:\/\/app\.stoat\.test\/login\/verify\//, 'the link is under APP_URL');
    const unverified = await anon.post('/auth/session/login', { email, password });
    t.same([unverified.status, unverified.body.type], [403, 'UnverifiedAccount']);
    // A wrong password is still a wrong password (no hint that the account exists and is unverified).
    const wrong = await anon.post('/auth/session/login', { email, password: 'not the password' });
    t.same([wrong.status, wrong.body.type], [401, 'InvalidCredentials']);

    // Reverify: a new mail; the first token no longer works.
    const first = linkToken(mail, '/login/verify/');
    t.equal((await anon.post('/auth/account/reverify', { email })).status, 204);
    const again = await smtp.waitFor(email, from + 1);
    token = linkToken(again, '/login/verify/');
    t.not(token, first);
    const old = await anon.post(`/auth/account/verify/${encodeURIComponent(first)}`);
    t.same([old.status, old.body.type], [401, 'InvalidToken']);

    const ok = await anon.post(`/auth/account/verify/${encodeURIComponent(token)}`);
    t.equal(ok.status, 200);
    t.match(ok.body.ticket, { _id: String, account_id: String, token: String, authorised: true });
    // The ticket logs in (as Stoat's web app does right after verifying).
    const viaTicket = await anon.post('/auth/session/login', { mfa_ticket: ok.body.ticket.token, friendly_name: 'verify' });
    t.same([viaTicket.status, viaTicket.body.result], [200, 'Success']);
    const reused = await anon.post(`/auth/account/verify/${encodeURIComponent(token)}`);
    t.same([reused.status, reused.body.type], [401, 'InvalidToken'], 'a token is single-use');
    const login = await anon.post('/auth/session/login', { email, password });
    t.same([login.status, login.body.result], [200, 'Success']);
  });

  t.test('password reset', async (t) => {
    const login = await anon.post('/auth/session/login', { email, password });
    const me = client(s, login.body.token);
    const from = smtp.mails.length;
    // An unknown address answers the same and mails nothing; the known one gets the next mail.
    t.equal((await anon.post('/auth/account/reset_password', { email: `nobody.${Date.now()}@example.test` })).status, 204);
    t.equal((await anon.post('/auth/account/reset_password', { email })).status, 204);
    const mail = await smtp.waitFor(email, from);
    t.equal(smtp.mails.length - from, 1, 'only one mail went out');
    t.equal(mail.subject, 'Reset your password');
    const reset = linkToken(mail, '/login/reset/');
    const short = await anon.patch('/auth/account/reset_password', { token: reset, password: 'short' });
    t.same([short.status, short.body.type], [400, 'ShortPassword']);
    const bad = await anon.patch('/auth/account/reset_password', { token: reset.slice(0, -2) + 'xx', password: 'a brand new password' });
    t.same([bad.status, bad.body.type], [401, 'InvalidToken']);
    t.equal((await anon.patch('/auth/account/reset_password', { token: reset, password: 'a brand new password', remove_sessions: true })).status, 204);
    t.equal((await me.get('/auth/session/all')).status, 401, 'remove_sessions revoked the sessions');
    const reused = await anon.patch('/auth/account/reset_password', { token: reset, password: 'yet another password' });
    t.same([reused.status, reused.body.type], [401, 'InvalidToken'], 'single-use');
    t.equal((await anon.post('/auth/session/login', { email, password })).status, 401);
    t.equal((await anon.post('/auth/session/login', { email, password: 'a brand new password' })).status, 200);

    // Expiry (EMAIL_TOKEN_TTL_SECONDS, default a day), with the injected clock.
    const from2 = smtp.mails.length;
    await anon.post('/auth/account/reset_password', { email });
    const late = linkToken(await smtp.waitFor(email, from2), '/login/reset/');
    offset += 86_400_000 + 1000;
    const expired = await anon.patch('/auth/account/reset_password', { token: late, password: 'too late password' });
    t.same([expired.status, expired.body.type], [401, 'InvalidToken'], 'an expired token is refused');
    offset = 0;
  });

  t.test('email change is confirmed from the new address', async (t) => {
    const login = await anon.post('/auth/session/login', { email, password: 'a brand new password' });
    const me = client(s, login.body.token);
    const newEmail = `moved.${Date.now()}@example.test`;
    const wrong = await me.patch('/auth/account/change/email', { email: newEmail, current_password: 'nope nope nope' });
    t.same([wrong.status, wrong.body.type], [401, 'InvalidCredentials']);
    const from = smtp.mails.length;
    t.equal((await me.patch('/auth/account/change/email', { email: newEmail, current_password: 'a brand new password' })).status, 204);
    const mail = await smtp.waitFor(newEmail, from);
    t.equal((await me.get('/auth/account/')).body.email, email, 'not moved before confirming');
    const code = linkToken(mail, '/login/verify/');
    const done = await anon.post(`/auth/account/verify/${encodeURIComponent(code)}`, undefined, { skipOpenApi: true });
    t.equal(done.status, 204);
    t.equal((await me.get('/auth/account/')).body.email, newEmail);
    t.equal((await anon.post('/auth/session/login', { email: newEmail, password: 'a brand new password' })).status, 200);
    const oldLogin = await anon.post('/auth/session/login', { email, password: 'a brand new password' });
    t.same([oldLogin.status, oldLogin.body.type], [401, 'InvalidCredentials']);
  });

  t.test('deletion is confirmed by mail', async (t) => {
    const addr = `bye.${Date.now()}@example.test`;
    const from = smtp.mails.length;
    await anon.post('/auth/account/create', { email: addr, password });
    const v = await anon.post(`/auth/account/verify/${encodeURIComponent(linkToken(await smtp.waitFor(addr, from), '/login/verify/'))}`);
    const login = await anon.post('/auth/session/login', { mfa_ticket: v.body.ticket.token });
    const me = client(s, login.body.token);
    await me.post('/onboard/complete', { username: `bye${process.pid}` });
    const noTicket = await me.post('/auth/account/delete');
    t.same([noTicket.status, noTicket.body.type], [401, 'InvalidToken'], 'a ticket is required');
    const ticket = await me.put('/auth/mfa/ticket', { password });
    const from2 = smtp.mails.length;
    t.equal((await me.post('/auth/account/delete', undefined, { headers: { 'X-MFA-Ticket': ticket.body.token } })).status, 204);
    const mail = await smtp.waitFor(addr, from2);
    t.equal(mail.subject, 'Confirm account deletion');
    t.equal((await me.get('/users/@me')).status, 200, 'nothing happens before confirming');
    const bad = await anon.put('/auth/account/delete', { token: 'x' });
    t.same([bad.status, bad.body.type], [401, 'InvalidToken']);
    t.equal((await anon.put('/auth/account/delete', { token: linkToken(mail, '/delete/') })).status, 204);
    t.equal((await me.get('/users/@me')).status, 401, 'sessions are gone');
    const after = await anon.post('/auth/session/login', { email: addr, password });
    t.same([after.status, after.body.type], [401, 'InvalidCredentials']);
  });

  t.test('a mail sent while SMTP is down arrives when it is back', async (t) => {
    const port = smtp.port;
    await smtp.close();
    const from = 0;
    const addr = `down.${Date.now()}@example.test`;
    t.equal((await anon.post('/auth/account/create', { email: addr, password })).status, 204, 'the request does not wait for SMTP');
    // At least one attempt fails against the closed port before the server comes back on it.
    const attempts = await until('a failed mail attempt', async () => {
      for (const key of await s.redis.keys(`${s.prefix}bull:mail:*`)) {
        if (!/:\d+$/.test(key)) continue;
        const atm = Number(await s.redis.hget(key, 'atm'));
        if (atm >= 1) return atm;
      }
      return 0;
    });
    t.ok(attempts >= 1, 'the send was attempted and failed while SMTP was down');
    smtp = await startSmtp({ port, user: 'mailer', pass: 's3cret' });
    const mail = await smtp.waitFor(addr, from, 30_000);
    t.equal(mail.subject, 'Verify your email');
  });
});
