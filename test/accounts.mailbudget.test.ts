// Mail flooding and account enumeration (issue 35 #6), against a real SMTP conversation: an address is sent
// at most MAIL_PER_ADDRESS_PER_HOUR mails (sign-up verification, reverify and reset together; the next is not
// sent and mints no new token); POST /auth/account/reset_password and /reverify answer before looking the
// address up, with the same answer and the same work (one task queued, nothing read or written) whether or
// not it has an account.
import t from 'tap';
import { afterAnswer } from '../src/http/routes/auth/accountTools.ts';
import { client } from './helpers/http.ts';
import { startTestService } from './helpers/service.ts';
import { linkToken, startSmtp } from './helpers/smtp.ts';
import { tokenUserId } from '../src/domain/account/secrets.ts';
import { until } from './helpers/wait.ts';

t.test('mail budget and answers that do not depend on the address', async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const s = await startTestService(t, { RATE_LIMITS: 'off', SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, MAIL_PER_ADDRESS_PER_HOUR: '3', MAIL_RETRY_DELAY_MS: '100' });
  const anon = client(s);
  const password = 'correct horse battery';
  const stamp = `${process.pid}.${Date.now()}`;
  const victim = `victim.${stamp}@example.test`;
  const control = `control.${stamp}@example.test`;
  const mailsTo = (to: string) => smtp.mails.filter((m) => m.to.includes(to)).length;
  const resetsOf = async (userId: string) => (await s.store.readStream(`account-${userId}`)).filter((e) => e.type === 'PasswordResetRequested').length;

  t.equal((await anon.post('/auth/account/create', { email: victim, password })).status, 204);
  t.equal((await anon.post('/auth/account/create', { email: control, password })).status, 204);
  const victimId = tokenUserId(linkToken(await smtp.waitFor(victim), '/login/verify/'));
  await smtp.waitFor(control);
  t.ok(victimId);

  t.test('N mails to an address in an hour, the next one is not sent', async (t) => {
    // The sign-up verification was the first of 3.
    t.equal((await anon.post('/auth/account/reset_password', { email: victim })).status, 204);
    t.equal((await anon.post('/auth/account/reverify', { email: victim })).status, 204);
    await until('three mails to the victim', () => mailsTo(victim) === 3);
    t.equal((await anon.post('/auth/account/reset_password', { email: victim })).status, 204, 'the 4th request is answered as ever');
    t.equal((await anon.post('/auth/account/reverify', { email: victim })).status, 204);
    // The after-answer queue runs in order: once a later request's mail has arrived, the victim's are done.
    const before = mailsTo(control);
    t.equal((await anon.post('/auth/account/reset_password', { email: control })).status, 204);
    await until('the control mail', () => mailsTo(control) === before + 1);
    t.equal(await resetsOf(victimId!), 1, 'the refused reset minted no token (the mailed link still works)');
    t.equal(mailsTo(victim), 3, 'no 4th or 5th mail to the victim');
  });

  t.test('the answer and the work before it do not depend on whether the address has an account', async (t) => {
    afterAnswer.pause();
    t.teardown(() => afterAnswer.resume());
    const head = await s.store.headPosition();
    const pending = afterAnswer.pending();
    const known = await fetch(`${s.apiUrl}/auth/account/reset_password`, { method: 'POST', body: JSON.stringify({ email: control }), headers: { 'content-type': 'application/json' } });
    const unknown = await fetch(`${s.apiUrl}/auth/account/reset_password`, { method: 'POST', body: JSON.stringify({ email: `nobody.${stamp}@example.test` }), headers: { 'content-type': 'application/json' } });
    const headersOf = (r: Response) => [...r.headers.keys()].filter((k) => !['date', 'x-request-id', 'x-ratelimit-reset-after', 'x-ratelimit-remaining'].includes(k)).sort();
    t.same([known.status, await known.text()], [204, '']);
    t.same([unknown.status, await unknown.text()], [204, ''], 'the same status and body');
    t.same(headersOf(known), headersOf(unknown), 'the same headers');
    t.equal(afterAnswer.pending(), pending + 2, 'each queued exactly one task, after answering');
    t.equal(await s.store.headPosition(), head, 'nothing was written before the answers');
    const from = smtp.mails.length;
    afterAnswer.resume();
    const mail = await smtp.waitFor(control, from);
    t.equal(mail.subject, 'Reset your password', 'the known address gets its mail afterwards');
    const rv1 = await anon.post('/auth/account/reverify', { email: control });
    const rv2 = await anon.post('/auth/account/reverify', { email: `nobody2.${stamp}@example.test` });
    t.same([rv1.status, rv1.text, rv2.status, rv2.text], [204, '', 204, ''], 'reverify: the same');
  });
});
