/**
 * A log that goes back in time (issue 36 §1): the event log is brought back to an earlier head while Redis keeps
 * the read models of the newer one (a SQLite file restored from a backup; a PostgreSQL standby promoted without
 * the last commits). The next start must notice that the checkpoints point at events the log no longer holds,
 * rebuild the read models from the log as it is, and serve exactly the restored events plus the new ones.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createLogger } from '../../src/log.ts';
import { loadConfig } from '../../src/config.ts';
import { startService, type Service } from '../../src/service.ts';
import { deletePrefix, TEST_REDIS_URL, tempDir, uniquePrefix, waitServing } from '../helpers/service.ts';
import { client, type TestUser, signup } from '../helpers/http.ts';
import { createServer } from '../helpers/servers.ts';
import { testDatabase } from '../helpers/postgres.ts';
import { until, WAIT_MS } from '../helpers/wait.ts';

const log = createLogger('silent');

async function send(s: Service, u: TestUser, channel: string, content: string): Promise<string> {
  const r = await client(s, u.token).post(`/channels/${channel}/messages`, { content });
  if (r.status !== 200) throw new Error(`send ${r.status} ${r.text}`);
  return r.body._id as string;
}

async function history(s: Service, token: string, channel: string): Promise<string[]> {
  const r = await client(s, token).get(`/channels/${channel}/messages?sort=Oldest&limit=100`);
  if (r.status !== 200) throw new Error(`history ${r.status} ${r.text}`);
  return (r.body as Array<{ content: string }>).map((m) => m.content);
}

for (const engine of ['sqlite', 'postgres'] as const) {
  t.test(`${engine}: an older log under newer read models is rebuilt, never served as a mixture`, async (t) => {
    const dir = tempDir(t, 'rewind');
    const prefix = uniquePrefix();
    t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
    const env: Record<string, string> = {
      API_PORT: '0',
      MEDIA_PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dir,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: prefix,
      RATE_LIMITS: 'off',
      LOG_LEVEL: 'silent',
      ROLES: 'api,projector',
    };
    const dbUrl = engine === 'postgres' ? await testDatabase(t, 'rewind') : undefined;
    if (dbUrl) env.EVENTSTORE_URL = dbUrl;
    const start = async () => {
      const s = await startService(loadConfig(env), { log });
      await waitServing(s, 60_000);
      return s;
    };

    let s = await start();
    const owner = await signup(s);
    const { general } = await createServer(owner);
    for (const c of ['kept 1', 'kept 2', 'kept 3']) await send(s, owner, general, c);

    // The backup: the log as it is now.
    const file = path.join(dir, 'events.sqlite');
    const backup = path.join(dir, 'backup.sqlite');
    let head: string | undefined;
    if (engine === 'sqlite') {
      const db = new Database(file, { readonly: true });
      await db.backup(backup);
      db.close();
    } else {
      const c = new pg.Client({ connectionString: dbUrl });
      await c.connect();
      head = (await c.query<{ p: string }>('SELECT max(position)::text AS p FROM events')).rows[0]!.p;
      await c.end();
    }
    // Events the rewind loses: their effects are in Redis.
    for (const c of ['lost 1', 'lost 2', 'lost 3']) await send(s, owner, general, c);
    t.same(await history(s, owner.token, general), ['kept 1', 'kept 2', 'kept 3', 'lost 1', 'lost 2', 'lost 3']);
    await s.stop();

    // The rewind: the backup restored, or the standby that lacked the last commits promoted.
    if (engine === 'sqlite') {
      for (const f of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(f, { force: true });
      fs.copyFileSync(backup, file);
    } else {
      const c = new pg.Client({ connectionString: dbUrl });
      await c.connect();
      await c.query('DELETE FROM events WHERE position > $1', [head]);
      await c.end();
    }

    s = await start();
    t.teardown(() => s.stop());
    // The new events reuse the lost ones' positions: each must be projected.
    for (const c of ['new 1', 'new 2', 'new 3', 'new 4', 'new 5']) await send(s, owner, general, c);
    await until('the new events projected', async () => (await history(s, owner.token, general).catch(() => [])).length >= 8, WAIT_MS).catch(() => undefined);
    t.same(await history(s, owner.token, general), ['kept 1', 'kept 2', 'kept 3', 'new 1', 'new 2', 'new 3', 'new 4', 'new 5'], 'history = the restored events + the new ones');
    // The search index follows the log on its own checkpoint: it rebuilds too, so the new messages are found.
    const found = async (q: string) => {
      const r = await client(s, owner.token).post(`/channels/${general}/search`, { query: q, sort: 'Oldest' });
      return r.status === 200 ? (r.body as Array<{ content: string }>).map((m) => m.content) : [];
    };
    await until('the new messages searchable', async () => (await found('new')).length === 5, WAIT_MS).catch(() => undefined);
    t.same(await found('new'), ['new 1', 'new 2', 'new 3', 'new 4', 'new 5'], 'the search index holds the new messages');
    t.same(await found('kept'), ['kept 1', 'kept 2', 'kept 3']);
  });
}

t.test('postgres: a standby promoted under a running service (lost commits) is noticed while running', async (t) => {
  const dir = tempDir(t, 'rewind-live');
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const dbUrl = await testDatabase(t, 'rwlive');
  const env: Record<string, string> = {
    API_PORT: '0',
    MEDIA_PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dir,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: prefix,
    RATE_LIMITS: 'off',
    LOG_LEVEL: 'silent',
    ROLES: 'api,projector',
    EVENTSTORE_URL: dbUrl,
  };
  const s = await startService(loadConfig(env), { log });
  t.teardown(() => s.stop());
  await waitServing(s, 60_000);
  const owner = await signup(s);
  const { general } = await createServer(owner);
  await send(s, owner, general, 'kept 1');
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  t.teardown(() => c.end());
  const head = (await c.query<{ p: string }>('SELECT max(position)::text AS p FROM events')).rows[0]!.p;
  for (const m of ['lost 1', 'lost 2', 'lost 3']) await send(s, owner, general, m);
  await c.query('DELETE FROM events WHERE position > $1', [head]);
  // The projector's health check (every second) notices and rebuilds; until then and during it, never a mixture.
  const seen: string[][] = [];
  await until('the lost messages gone', async () => {
    const h = await history(s, owner.token, general).catch(() => undefined);
    if (h) seen.push(h);
    return h && h.length === 1;
  }, WAIT_MS).catch(() => undefined);
  t.same(await history(s, owner.token, general), ['kept 1'], 'the lost messages are gone from the read models');
  for (const m of ['new 1', 'new 2', 'new 3']) await send(s, owner, general, m);
  await until('the new messages projected', async () => (await history(s, owner.token, general).catch(() => [])).length === 4, WAIT_MS).catch(() => undefined);
  t.same(await history(s, owner.token, general), ['kept 1', 'new 1', 'new 2', 'new 3']);
});
