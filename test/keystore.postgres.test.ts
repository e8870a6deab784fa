// PostgresKeyStore: the key store contract on PostgreSQL (the raw check reads the table's pages with pageinspect),
// and where the service puts its key store: beside a Postgres event store, or where KEYSTORE_URL says.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { ConfigError, loadConfig } from '../src/config.ts';
import { keyStoreTarget } from '../src/personal/keyStore.ts';
import { PostgresKeyStore } from '../src/personal/keyStorePostgres.ts';
import { startService } from '../src/service.ts';
import { keyStoreContract } from './keystore.contract.ts';
import { testDatabase } from './helpers/postgres.ts';
import { until } from './helpers/wait.ts';
import { startTestService, tempDir, testConfig } from './helpers/service.ts';
import { client, signup } from './helpers/http.ts';
import { startKurrentDouble } from './helpers/kurrentDouble.ts';

/** True while any page of `schema.subject_keys` contains `bytes` (a 32-byte key is stored inline, never in TOAST). */
async function pagesHold(url: string, schema: string, bytes: Buffer): Promise<boolean> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('CREATE EXTENSION IF NOT EXISTS pageinspect');
    const r = await c.query<{ found: boolean }>(
      `SELECT bool_or(position($1::bytea in get_raw_page(rel::text, 'main', blk::int)) > 0) AS found
         FROM (SELECT $2::regclass AS rel) r,
              generate_series(0, pg_relation_size($2::regclass) / current_setting('block_size')::int - 1) AS blk`,
      [bytes, `${schema}.subject_keys`],
    );
    return r.rows[0]?.found ?? false;
  } finally {
    await c.end();
  }
}

t.test('contract', async (t) => {
  const url = await testDatabase(t, 'keys_contract');
  let n = 0;
  await keyStoreContract(t, 'postgres', async () => {
    // A fresh schema per subtest.
    const schema = `k${n++}`;
    return {
      open: () => PostgresKeyStore.open(`${url}?schema=${schema}`),
      holds: (bytes) => pagesHold(url, schema, bytes),
      cleanup: async () => {},
    };
  });
});

t.test('a schema name that is not a plain identifier is refused', async (t) => {
  const url = await testDatabase(t, 'keys_schema');
  await t.rejects(PostgresKeyStore.open(`${url}?schema=a;drop`), /schema/);
});

/** The rows of the key store tables in the database at `url` (public schema). */
async function keyRows(url: string): Promise<{ subjects: Array<{ subject: string; key: Buffer | null; destroyed: boolean }>; secrets: string[] }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const subjects = await c.query<{ subject: string; key: Buffer | null; destroyed: boolean }>(
      'SELECT subject, key, destroyed_at IS NOT NULL AS destroyed FROM subject_keys ORDER BY subject',
    );
    const secrets = await c.query<{ name: string }>('SELECT name FROM service_secrets ORDER BY name');
    return { subjects: subjects.rows, secrets: secrets.rows.map((r) => r.name) };
  } finally {
    await c.end();
  }
}

t.test('with a Postgres event store the key store lives in the same database: no keys.sqlite, secrets shared by every machine', async (t) => {
  const url = await testDatabase(t, 'keys_service');
  const s = await startTestService(t, { RATE_LIMITS: 'off', EVENTSTORE_URL: url });
  const a = await signup(s);
  const b = await signup(s);
  t.notOk(fs.existsSync(path.join(s.dataDir, 'keys.sqlite')), 'no keys.sqlite under DATA_DIR');
  let rows = await keyRows(url);
  t.same(rows.secrets, ['master', 'vapid-private-key'], 'the master secret and the VAPID key are in the database');
  const subjectA = rows.subjects.find((r) => r.subject === a.userId);
  t.ok(subjectA?.key?.length === 32 && !subjectA.destroyed, 'the account has its key in subject_keys');

  // Another machine: its own DATA_DIR, the same database. It signs pushes with the same VAPID key and opens
  // the first machine's sealed fields (the email login needs the same SECRETS-derived digest and the same key).
  const other = await startTestService(t, { RATE_LIMITS: 'off', EVENTSTORE_URL: url, ROLES: 'api', REDIS_PREFIX: s.prefix });
  t.not(other.dataDir, s.dataDir);
  const [root1, root2] = await Promise.all([client(s).get('/'), client(other).get('/')]);
  t.equal(root2.body.vapid, root1.body.vapid, 'one VAPID public key for both');
  const login = await client(other).post('/auth/session/login', { email: a.email, password: a.password });
  t.equal(login.status, 200, 'the other machine logs the account in (digest and sealed password hash readable there)');
  t.notOk(fs.existsSync(path.join(other.dataDir, 'keys.sqlite')), 'no keys.sqlite there either');

  // Deleting the account NULLs its key in the table.
  const ticket = await a.api.put('/auth/mfa/ticket', { password: a.password });
  t.equal((await a.api.post('/auth/account/delete', undefined, { headers: { 'X-MFA-Ticket': ticket.body.token } })).status, 204);
  rows = await keyRows(url);
  const after = rows.subjects.find((r) => r.subject === a.userId);
  t.same([after?.key, after?.destroyed], [null, true], 'the deleted account: key NULL, destroyed');
  t.ok(rows.subjects.find((r) => r.subject === b.userId)?.key, 'the other account keeps its key');
  // The VACUUM right after the update cannot prune a row version a running statement's snapshot still sees (the
  // service's own polls share the database); the follow-up VACUUMs 1 s and 10 s later do.
  await until('the key bytes gone from the table pages (VACUUM)', async () => !(await pagesHold(url, 'public', subjectA!.key!)), 30_000, 250);
  t.pass('the key bytes are gone from the table pages (VACUUM)');
});

t.test('KEYSTORE_URL chooses the key store: another Postgres database, or a SQLite file', async (t) => {
  const keysUrl = await testDatabase(t, 'keys_elsewhere');
  const s = await startTestService(t, { RATE_LIMITS: 'off', KEYSTORE_URL: keysUrl });
  const a = await signup(s);
  t.notOk(fs.existsSync(path.join(s.dataDir, 'keys.sqlite')), 'SQLite event store, Postgres key store: no keys.sqlite');
  t.ok((await keyRows(keysUrl)).subjects.some((r) => r.subject === a.userId && r.key?.length === 32), "the account's key is in that database");

  const file = path.join(tempDir(t, 'stoat-keyfile'), 'nested', 'keys.sqlite');
  const f = await startTestService(t, { RATE_LIMITS: 'off', KEYSTORE_URL: file });
  await signup(f);
  t.ok(fs.existsSync(file), 'the named SQLite file is created');
  t.notOk(fs.existsSync(path.join(f.dataDir, 'keys.sqlite')), 'and none under DATA_DIR');
});

t.test('KEYSTORE_URL is a postgres:// URL or a file path', async (t) => {
  t.throws(() => loadConfig({ KEYSTORE_URL: 'mysql://h/db' }), ConfigError);
  t.throws(() => loadConfig({ KEYSTORE_URL: 'redis://127.0.0.1:6379' }), ConfigError);
  t.equal(loadConfig({ KEYSTORE_URL: 'postgresql://u@h/db' }).keyStoreUrl, 'postgresql://u@h/db');
  t.equal(loadConfig({ KEYSTORE_URL: 'keys/k.sqlite' }).keyStoreUrl, path.resolve('keys/k.sqlite'), 'a relative path is resolved');
  const at = (env: Record<string, string>) => keyStoreTarget(loadConfig({ DATA_DIR: '/d', ...env }));
  t.same(at({}), { kind: 'sqlite', file: '/d/keys.sqlite' }, 'SQLite event store: beside it');
  t.same(at({ EVENTSTORE_URL: 'postgres://h/db?schema=s' }), { kind: 'postgres', url: 'postgres://h/db?schema=s' }, 'Postgres: the same database and schema');
  t.same(at({ EVENTSTORE_URL: 'postgres://h/db', KEYSTORE_URL: '/k/keys.sqlite' }), { kind: 'sqlite', file: '/k/keys.sqlite' }, 'KEYSTORE_URL wins');
  t.throws(() => at({ EVENTSTORE_URL: 'kurrentdb://h:2113?tls=false' }), { name: 'ConfigError', message: /KEYSTORE_URL/ }, 'KurrentDB alone: refused');
  t.same(at({ EVENTSTORE_URL: 'kurrentdb://h:2113?tls=false', KEYSTORE_URL: 'postgres://h/keys' }), { kind: 'postgres', url: 'postgres://h/keys' });
});

t.test('a Postgres deployment whose keys are still in DATA_DIR/keys.sqlite is refused, not started on an empty key table', async (t) => {
  const url = await testDatabase(t, 'keys_legacy');
  const dir = tempDir(t, 'stoat-legacy-keys');
  const legacy = path.join(dir, 'keys.sqlite');
  fs.writeFileSync(legacy, '');
  const config = testConfig(t, { DATA_DIR: dir, EVENTSTORE_URL: url });
  t.throws(() => keyStoreTarget(config), { name: 'ConfigError', message: /KEYSTORE_URL=.*keys\.sqlite/ });
  const started = startService(config);
  // Were it to start (the rule broken), it is stopped rather than left running.
  t.teardown(() => started.then((s) => s.stop(), () => {}));
  await t.rejects(started, { name: 'ConfigError' }, 'the start refuses');
  t.same(keyStoreTarget(testConfig(t, { DATA_DIR: dir, EVENTSTORE_URL: url, KEYSTORE_URL: legacy })), { kind: 'sqlite', file: legacy }, 'KEYSTORE_URL naming it starts');
});

t.test('with KurrentDB the start refuses a key store only one machine reaches, unless KEYSTORE_URL is set', async (t) => {
  const double = await startKurrentDouble();
  t.teardown(() => double.stop());
  const config = testConfig(t, { EVENTSTORE_URL: double.url });
  const started = startService(config);
  t.teardown(() => started.then((s) => s.stop(), () => {}));
  await t.rejects(started, { name: 'ConfigError', message: /KEYSTORE_URL/ });
  t.notOk(fs.existsSync(path.join(config.dataDir, 'keys.sqlite')), 'nothing was created');
  const keysUrl = await testDatabase(t, 'keys_kurrent');
  const s = await startTestService(t, { RATE_LIMITS: 'off', EVENTSTORE_URL: double.url, KEYSTORE_URL: keysUrl });
  const a = await signup(s);
  t.ok((await keyRows(keysUrl)).subjects.some((r) => r.subject === a.userId), 'with KEYSTORE_URL it starts and keeps keys there');
});

t.test('a destruction is written to the erasure record too (a restored dump would bring the key back)', async (t) => {
  const url = await testDatabase(t, 'keys_erasures');
  const log = path.join(tempDir(t, 'keys-erasures'), 'erasures.jsonl');
  const keys = await PostgresKeyStore.open(url, { erasureLog: log });
  t.teardown(() => keys.close());
  await keys.keyFor('subject-a');
  await keys.keyFor('subject-b');
  t.notOk(fs.existsSync(log), 'nothing recorded before a destruction');
  await keys.destroy('subject-a');
  await keys.destroy('subject-a');
  const lines = fs.readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { subject: string; at: string });
  t.same(lines.map((l) => l.subject), ['subject-a'], 'one line for the destroyed subject, none for a repeated destroy or a live one');
  t.ok(!Number.isNaN(Date.parse(lines[0]!.at)));
});

t.test('a destroyed key whose first VACUUM an open snapshot blocked is pruned by the follow-up VACUUM', async (t) => {
  const url = await testDatabase(t, 'keys_snapshot');
  const store = await PostgresKeyStore.open(url);
  t.teardown(() => store.close());
  const key = (await store.keyFor('user-a'))!;
  await store.keyFor('user-b');
  // A statement of another connection of the same database holds a snapshot from before the destruction (as the
  // event store's polls and group commits can at any moment): the VACUUM run by destroy() cannot prune the version.
  const other = new pg.Client({ connectionString: url });
  await other.connect();
  t.teardown(() => other.end().catch(() => {}));
  await other.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  await other.query('SELECT count(*) FROM subject_keys');
  await store.destroy('user-a');
  t.equal(await store.lookup('user-a'), null, 'the key is gone for readers at once');
  t.ok(await pagesHold(url, 'public', key), 'while the snapshot is open the old version (with the key) is still in the page');
  await other.query('COMMIT');
  await until('the follow-up VACUUM pruned the key bytes', async () => !(await pagesHold(url, 'public', key)), 30_000, 250);
  t.pass('the key bytes are gone from the table pages once no snapshot sees them');
});
