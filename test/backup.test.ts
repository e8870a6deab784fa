/**
 * Backups and restores as commands (issue 36 §2): `takeBackup` while the service runs and sends, `restoreBackup`
 * into a fresh or the same data directory; refusal while a service holds it; deleted accounts stay deleted.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import Database from 'better-sqlite3';
import { createLogger } from '../src/log.ts';
import { loadConfig } from '../src/config.ts';
import { startService, type Service } from '../src/service.ts';
import { checkBackup, restoreBackup, takeBackup } from '../src/backup/backup.ts';
import { readErasures } from '../src/backup/erasures.ts';
import { SqliteKeyStore } from '../src/personal/keyStore.ts';
import { deletePrefix, TEST_REDIS_URL, tempDir, uniquePrefix, waitServing } from './helpers/service.ts';
import { client, request, signup } from './helpers/http.ts';
import { createServer } from './helpers/servers.ts';

const log = createLogger('silent');

function envFor(dir: string, prefix: string): Record<string, string> {
  return { API_PORT: '0', MEDIA_PORT: '0', HOST: '127.0.0.1', DATA_DIR: dir, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix, RATE_LIMITS: 'off', LOG_LEVEL: 'silent', ROLES: 'api,media,projector' };
}

async function start(env: Record<string, string>): Promise<Service> {
  const s = await startService(loadConfig(env), { log });
  await waitServing(s, 60_000);
  return s;
}

t.test('deleted accounts stay deleted across a restore of an older backup', async (t) => {
  const dir = tempDir(t, 'bk-del');
  const bdir = path.join(tempDir(t, 'bk-del-to'), 'b1');
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const env = envFor(dir, prefix);
  const config = loadConfig(env);
  let s = await start(env);
  let stopped = false;
  t.teardown(() => (stopped ? undefined : s.stop()));
  const alice = await signup(s);
  const bob = await signup(s);
  await alice.api.put(`/users/${bob.userId}/friend`);
  t.equal((await bob.api.put(`/users/${alice.userId}/friend`)).body.relationship, 'Friend');
  t.equal((await alice.api.patch('/users/@me', { display_name: 'Alice Person', profile: { content: 'about alice' } })).status, 200);
  const bot = await alice.api.post('/bots/create', { name: `alicebot${process.pid}` });
  t.equal(bot.status, 200);
  const botToken = bot.body.token as string;

  const { manifest } = await takeBackup(config, bdir);
  t.equal(manifest.engine, 'sqlite');
  t.ok(manifest.events > 0 && manifest.head !== null, 'the manifest records the head and the count');
  t.same(checkBackup(bdir), manifest, 'the manifest matches the backup');

  const ticket = await client(s, alice.token).put('/auth/mfa/ticket', { password: alice.password });
  t.equal((await client(s, alice.token).post('/auth/account/delete', undefined, { headers: { 'X-MFA-Ticket': ticket.body.token } })).status, 204);
  t.same(readErasures(config.erasureLog).map((e) => e.subject), [alice.userId], 'the deletion is in the erasure record');

  // What a deleted account looks like, before the restore.
  const observe = async (s: Service) => {
    const asBob = client(s, bob.token);
    const user = await asBob.get(`/users/${alice.userId}`);
    const profile = await asBob.get(`/users/${alice.userId}/profile`);
    const session = await client(s, alice.token).get('/users/@me');
    const botMe = await request(s.apiUrl, 'GET', '/users/@me', { headers: { 'X-Bot-Token': botToken }, skipOpenApi: true });
    const login = await client(s).post('/auth/session/login', { email: alice.email, password: alice.password, friendly_name: 'again' });
    return {
      user: [user.status, user.body],
      profile: [profile.status, profile.body],
      session: [session.status, session.body?.type],
      bot: [botMe.status, botMe.body?.type ?? botMe.body?._id],
      login: [login.status, login.body?.type],
    };
  };
  const before = await observe(s);
  t.equal((before.user[1] as { username: string }).username, 'Deleted User');
  t.not(before.session[0], 200, 'the session no longer works');
  t.not(before.login[0], 200, 'no login');
  t.equal(before.bot[0], 401, 'the bot of the deleted account no longer works');

  await t.rejects(restoreBackup(config, bdir), /holds/, 'refused while a service process holds the data directory');
  await s.stop();
  stopped = true;
  const r = await restoreBackup(config, bdir);
  t.same(r.reapplied, [alice.userId], 'the deletion made after the backup is re-applied');
  const keys = new SqliteKeyStore(path.join(dir, 'keys.sqlite'));
  t.ok(await keys.destroyed(alice.userId), "alice's key is destroyed again");
  t.notOk(await keys.destroyed(bob.userId));
  await keys.close();

  s = await start(env);
  stopped = false;
  const after = await observe(s);
  t.same(after, before, 'the account reads exactly as before the restore');
  const raw = JSON.stringify(await (async () => {
    const db = new Database(path.join(dir, 'events.sqlite'), { readonly: true });
    const rows = db.prepare(`SELECT data FROM events WHERE stream = ?`).all(`account-${alice.userId}`);
    db.close();
    return rows;
  })());
  t.notMatch(raw, alice.email, 'no plain email of the account in the log');
  t.notMatch(raw, 'Alice Person');
});

t.test('a backup during sends restores into a fresh directory with exactly the messages up to its head', async (t) => {
  const dir = tempDir(t, 'bk-send');
  const fresh = path.join(tempDir(t, 'bk-fresh'), 'data');
  const bdir = path.join(tempDir(t, 'bk-send-to'), 'b');
  const prefix = uniquePrefix();
  const prefix2 = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix2));
  const env = envFor(dir, prefix);
  const s = await start(env);
  t.teardown(() => s.stop());
  const owner = await signup(s);
  const { general } = await createServer(owner);
  const acked: Array<{ id: string; phase: 'before' | 'during' | 'after' }> = [];
  let phase: 'before' | 'during' | 'after' = 'before';
  let stop = false;
  const senders = [0, 1, 2].map(async (k) => {
    for (let n = 0; !stop; n++) {
      const at = phase;
      const r = await client(s, owner.token).post(`/channels/${general}/messages`, { content: `m ${k} ${n}` });
      if (r.status !== 200) throw new Error(`send ${r.status} ${r.text}`);
      // A send acknowledged entirely before the backup started, or entirely after it ended, or in between.
      acked.push({ id: r.body._id as string, phase: at === 'before' && phase === 'before' ? 'before' : at === 'after' ? 'after' : 'during' });
    }
  });
  while (acked.length < 15) await new Promise((r) => setTimeout(r, 10));
  phase = 'during';
  const { manifest } = await takeBackup(loadConfig(env), bdir);
  phase = 'after';
  const n = acked.length;
  while (acked.length < n + 15) await new Promise((r) => setTimeout(r, 10));
  stop = true;
  await Promise.all(senders);

  const db = new Database(path.join(dir, 'events.sqlite'), { readonly: true });
  const positionOf = (id: string) => (db.prepare(`SELECT position FROM events WHERE stream = ? AND revision = 0`).get(`message-${id}`) as { position: number }).position;
  const expected = acked.filter((m) => positionOf(m.id) <= Number(manifest.head)).map((m) => m.id).sort();
  db.close();
  t.ok(acked.filter((m) => m.phase === 'before').every((m) => expected.includes(m.id)), 'every send acknowledged before the backup is within its head');
  t.ok(acked.filter((m) => m.phase === 'after').every((m) => !expected.includes(m.id)), 'no send acknowledged after it is');

  const env2 = envFor(fresh, prefix2);
  const r = await restoreBackup(loadConfig(env2), bdir);
  t.equal(r.manifest.head, manifest.head);
  const s2 = await start(env2);
  t.teardown(() => s2.stop());
  const got: string[] = [];
  let before: string | undefined;
  for (;;) {
    const page = await client(s2, owner.token).get(`/channels/${general}/messages?limit=100${before ? `&before=${before}` : ''}`);
    t.equal(page.status, 200);
    const ms = page.body as Array<{ _id: string; author: string }>;
    for (const m of ms) if (m.author === owner.userId) got.push(m._id);
    if (ms.length < 100) break;
    before = ms[ms.length - 1]!._id;
  }
  t.same(got.sort(), expected, 'exactly the messages up to the backup head');
  t.ok(fs.existsSync(path.join(bdir, 'manifest.json')));
});
