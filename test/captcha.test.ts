/**
 * Captcha (issue 38, Stoat's authifier hCaptcha): with CAPTCHA_SECRET and CAPTCHA_SITEKEY, `GET /` advertises
 * `features.captcha`, and account creation, password reset and verification resend verify `captcha` against a
 * loopback siteverify stand-in (form-encoded POST of secret and response → `{success}`, as hCaptcha's): missing,
 * wrong, or unverifiable → 400 CaptchaFailed, nothing created; solved → the route goes on. Without them, off.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { ConfigError, loadConfig } from '../src/config.ts';
import { client } from './helpers/http.ts';
import { startTestService } from './helpers/service.ts';

const SECRET = '0x' + 'ab'.repeat(20);
const GOOD = 'P1_solved-captcha-token';

async function startSiteverify(t: { teardown(f: () => unknown): void }) {
  const seen: Array<Record<string, string>> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString()));
      seen.push(form);
      const formEncoded = req.method === 'POST' && String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded');
      const success = formEncoded && form.secret === SECRET && form.response === GOOD;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(success ? { success: true, hostname: 'localhost' } : { success: false, 'error-codes': [form.secret === SECRET ? 'invalid-input-response' : 'invalid-input-secret'] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/siteverify`, seen };
}

t.test('configuration: secret and site key together', async (t) => {
  t.throws(() => loadConfig({ DATA_DIR: '/tmp/x', CAPTCHA_SECRET: SECRET }), ConfigError);
  t.throws(() => loadConfig({ DATA_DIR: '/tmp/x', CAPTCHA_SITEKEY: 'k' }), ConfigError);
  t.equal(loadConfig({ DATA_DIR: '/tmp/x' }).captcha, undefined);
});

t.test('captcha on: advertised, and verified on create, reset and resend', async (t) => {
  const verify = await startSiteverify(t);
  const s = await startTestService(t, { RATE_LIMITS: 'off', CAPTCHA_SECRET: SECRET, CAPTCHA_SITEKEY: 'site-key-1', CAPTCHA_VERIFY_URL: verify.url });
  const anon = client(s);
  t.same((await anon.get('/')).body.features.captcha, { enabled: true, key: 'site-key-1' });
  const email = `cap.${Date.now()}@example.test`;
  const password = 'correct horse battery';
  for (const captcha of [undefined, '', 'wrong-answer']) {
    const r = await anon.post('/auth/account/create', { email, password, ...(captcha !== undefined ? { captcha } : {}) });
    t.same([r.status, r.body.type], [400, 'CaptchaFailed'], `create with captcha ${JSON.stringify(captcha)}`);
  }
  t.equal((await anon.post('/auth/session/login', { email, password })).status, 401, 'no account was created');
  t.equal((await anon.post('/auth/account/create', { email, password, captcha: GOOD })).status, 204, 'solved: created');
  t.equal((await anon.post('/auth/session/login', { email, password })).status, 200);
  t.same(verify.seen.at(-1), { secret: SECRET, response: GOOD, sitekey: 'site-key-1' }, 'the secret and the answer were posted');

  for (const path of ['/auth/account/reset_password', '/auth/account/reverify']) {
    const bad = await anon.post(path, { email, captcha: 'wrong-answer' });
    t.same([bad.status, bad.body.type], [400, 'CaptchaFailed'], `${path}: wrong answer`);
    const none = await anon.post(path, { email });
    t.same([none.status, none.body.type], [400, 'CaptchaFailed'], `${path}: no answer`);
    // Solved: past the captcha, the route answers as it does without one (mail is off here: OperationFailed).
    const ok = await anon.post(path, { email, captcha: GOOD });
    t.not(ok.body.type, 'CaptchaFailed', `${path}: solved`);
  }
});

t.test('an unreachable verification service fails closed', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', CAPTCHA_SECRET: SECRET, CAPTCHA_SITEKEY: 'k', CAPTCHA_VERIFY_URL: 'http://127.0.0.1:1/siteverify' });
  const r = await client(s).post('/auth/account/create', { email: `u.${Date.now()}@example.test`, password: 'correct horse battery', captcha: GOOD });
  t.same([r.status, r.body.type], [400, 'CaptchaFailed']);
});

t.test('captcha off: not advertised, `captcha` ignored', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  t.same((await client(s).get('/')).body.features.captcha, { enabled: false, key: '' });
  t.equal((await client(s).post('/auth/account/create', { email: `off.${Date.now()}@example.test`, password: 'correct horse battery', captcha: 'anything' })).status, 204);
});
