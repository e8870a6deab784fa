/**
 * Legal holds across a restore (issue 39 part 2 with issue 36's restores): an account deleted under a hold after
 * the backup is deleted again by the restore — it never comes back — and its personal-data key stays (the
 * erasure record says `held`); lifting the hold afterwards destroys the key and records it. An account whose
 * hold was lifted after its deletion is erased by the restore as any deleted account.
 */
import path from 'node:path';
import t from 'tap';
import { createLogger } from '../src/log.ts';
import { loadConfig } from '../src/config.ts';
import { startService, type Service } from '../src/service.ts';
import { restoreBackup, takeBackup } from '../src/backup/backup.ts';
import { readErasures } from '../src/backup/erasures.ts';
import { runAdmin } from '../src/cli/accountsAdmin.ts';
import { SqliteKeyStore } from '../src/personal/keyStore.ts';
import type { PersonalDataStore } from '../src/personal/store.ts';
import { deletePrefix, TEST_REDIS_URL, tempDir, uniquePrefix, waitServing } from './helpers/service.ts';
import { client, signup, type TestUser } from './helpers/http.ts';
import { until } from './helpers/wait.ts';
import { testDatabase } from './helpers/postgres.ts';
import { PostgresKeyStore } from '../src/personal/keyStorePostgres.ts';
import type { KeyStore } from '../src/personal/keyStore.ts';

const log = createLogger('silent');

t.test('a deletion under a hold survives a restore of an older backup with its key kept', async (t) => {
  const dir = tempDir(t, 'holds-restore');
  const bdir = path.join(tempDir(t, 'holds-restore-to'), 'b1');
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const env = { API_PORT: '0', MEDIA_PORT: '0', HOST: '127.0.0.1', DATA_DIR: dir, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix, RATE_LIMITS: 'off', LOG_LEVEL: 'silent', ROLES: 'api,media,projector' };
  const config = loadConfig(env);
  const start = async () => {
    const s = await startService(loadConfig(env), { log });
    await waitServing(s, 60_000);
    return s;
  };
  let s: Service = await start();
  let running = true;
  t.teardown(() => (running ? s.stop() : undefined));
  const [admin, alice, bob] = await Promise.all([signup(s), signup(s), signup(s)]);
  await runAdmin(['grant', admin.userId, '--role', 'admin'], { store: s.store, print: () => {} });
  await until('admin granted', async () => (await s.readModels.hgetJson('instance:staff', admin.userId)) === 'admin');
  const hold = async (u: TestUser) => (await admin.api.post('/admin/holds', { name: 'matter', reason: 'r', target: { type: 'user', id: u.userId } })).body._id as string;
  const aliceHold = await hold(alice);
  const bobHold = await hold(bob);
  const remove = async (u: TestUser) => {
    const ticket = await u.api.put('/auth/mfa/ticket', { password: u.password });
    t.equal((await u.api.post('/auth/account/delete', undefined, { headers: { 'X-MFA-Ticket': ticket.body.token } })).status, 204);
  };
  await takeBackup(config, bdir);

  // After the backup: both deleted under their holds; bob's hold is then lifted (his key goes).
  await remove(alice);
  await remove(bob);
  t.equal((await admin.api.post(`/admin/holds/${bobHold}/lift`, {})).status, 200);
  const record = readErasures(config.erasureLog);
  t.same(record.filter((e) => e.subject === alice.userId).map((e) => e.held ?? false), [true], "alice's deletion is recorded as held, once");
  t.same(record.filter((e) => e.subject === bob.userId).map((e) => e.held ?? false).sort(), [false, true], "bob's: held, then destroyed");

  await s.stop();
  running = false;
  const r = await restoreBackup(config, bdir);
  t.same([...r.reapplied].sort(), [alice.userId, bob.userId].sort(), 'both deletions are re-applied');
  const keys = new SqliteKeyStore(path.join(dir, 'keys.sqlite'));
  t.equal(await keys.destroyed(alice.userId), false, "alice's key is kept: her hold stands in the restored log");
  t.equal(await keys.destroyed(bob.userId), true, "bob's key is destroyed again: his hold was lifted");
  await keys.close();

  s = await start();
  running = true;
  const store = s.store as PersonalDataStore;
  const email = async (userId: string) => ((await store.readStream(`account-${userId}`)).find((e) => e.type === 'AccountCreated')!.data as { email?: string }).email;
  t.equal((await client(s).post('/auth/session/login', { email: alice.email, password: alice.password })).status, 401, 'alice stays deleted: no login');
  t.match((await client(s, admin.token).get(`/users/${alice.userId}`)).body, { username: 'Deleted User' });
  t.equal(await email(alice.userId), alice.email, 'her personal fields still open');
  t.equal(await email(bob.userId), undefined, "bob's do not");
  t.equal(await store.keys.destroyed(alice.userId), false, 'the projector, replaying the re-applied deletion, keeps the held key');

  t.equal((await client(s, admin.token).post(`/admin/holds/${aliceHold}/lift`, {})).status, 200, "lifting alice's hold");
  t.equal(await email(alice.userId), undefined, 'now her fields are erased');
  t.ok(readErasures(config.erasureLog).some((e) => e.subject === alice.userId && !e.held), 'and the destruction recorded');
});

t.test('KeyStore.keep records a held deletion once, on both adapters, and keeps the key', async (t) => {
  const dir = tempDir(t, 'holds-keep');
  const adapters: Array<[string, (log: string) => Promise<KeyStore>]> = [
    ['sqlite', async (log) => new SqliteKeyStore(path.join(dir, 'keys.sqlite'), log)],
    ['postgres', async (log) => PostgresKeyStore.open(await testDatabase(t, 'holdskeep'), { erasureLog: log })],
  ];
  for (const [name, open] of adapters) {
    const log = path.join(dir, `${name}-erasures.jsonl`);
    const keys = await open(log);
    t.teardown(() => keys.close());
    const key = await keys.keyFor('held-subject');
    await keys.keep('held-subject');
    await keys.keep('held-subject');
    t.same(readErasures(log).map((e) => [e.subject, e.held]), [['held-subject', true]], `${name}: one held line`);
    t.same(await keys.lookup('held-subject'), key, `${name}: the key stays`);
    await keys.destroy('held-subject');
    t.same(readErasures(log).map((e) => [e.subject, e.held ?? false]), [['held-subject', true], ['held-subject', false]], `${name}: a destruction is its own line`);
  }
});
