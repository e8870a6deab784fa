/** Configuration of accounts (issue 23): SMTP_URL, SECRETS_KEY, ACCOUNT_INVITES, USER_SERVER_LIMIT, mail retries. */
import t from 'tap';
import { loadConfig } from '../src/config.ts';

t.test('defaults: no mail, generated secrets, no fixed invites, 100 servers', async (t) => {
  const c = loadConfig({});
  t.equal(c.email, undefined);
  t.equal(c.secretsKey, undefined);
  t.same(c.accountInvites, []);
  t.equal(c.userServerLimit, 100);
  t.same(c.mailRetry, { attempts: 12, delayMs: 5000 });
});

t.test('valid values', async (t) => {
  const c = loadConfig({
    SMTP_URL: 'smtps://user:pa%40ss@mail.example:465',
    EMAIL_FROM: 'Chat <no-reply@chat.example>',
    SECRETS_KEY: 'ab'.repeat(32),
    ACCOUNT_INVITES: 'alpha-1,beta_2,alpha-1',
    USER_SERVER_LIMIT: '5',
  });
  t.same(c.email, { smtpUrl: 'smtps://user:pa%40ss@mail.example:465', from: 'Chat <no-reply@chat.example>' });
  t.equal(c.secretsKey?.length, 32);
  t.same(c.accountInvites, ['alpha-1', 'beta_2']);
  t.equal(c.userServerLimit, 5);
  t.equal(loadConfig({ SECRETS_KEY: Buffer.alloc(40, 7).toString('base64') }).secretsKey?.length, 40);
});

t.test('bad values name the variable and never echo a secret', async (t) => {
  for (const [env, name] of [
    [{ SMTP_URL: 'http://mail.example' }, 'SMTP_URL'],
    [{ SECRETS_KEY: 'ab'.repeat(31) }, 'SECRETS_KEY'],
    [{ SECRETS_KEY: 'short' }, 'SECRETS_KEY'],
    [{ ACCOUNT_INVITES: 'ok-code,bad code' }, 'ACCOUNT_INVITES'],
    [{ USER_SERVER_LIMIT: '0' }, 'USER_SERVER_LIMIT'],
    [{ MAIL_ATTEMPTS: '0' }, 'MAIL_ATTEMPTS'],
  ] as const) {
    const err = String(t.throws(() => loadConfig(env as Record<string, string>)));
    t.match(err, new RegExp(name), `${name} named`);
    for (const v of Object.values(env)) if (name !== 'USER_SERVER_LIMIT' && name !== 'MAIL_ATTEMPTS') t.notOk(err.includes(v), `${name}'s value not repeated`);
  }
});
