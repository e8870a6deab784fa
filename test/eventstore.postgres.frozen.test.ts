// PostgreSQL store, two real API processes on one database: SIGSTOP one while it holds the append lock inside an
// open transaction (mid-load); the other appends again within 30 s, its refusals meanwhile are 503 JSON, and the
// stopped one, resumed, lives on and appends again (the server ended its session: no crash, a new session).
import os from 'node:os';
import pg from 'pg';
import t from 'tap';
import { client, signup, type Res } from './helpers/http.ts';
import { testDatabase } from './helpers/postgres.ts';
import { startRoleProcess } from './helpers/processes.ts';
import { createServer } from './helpers/servers.ts';
import { deletePrefix, tempDir, TEST_REDIS_URL, uniquePrefix } from './helpers/service.ts';
import { until } from './helpers/wait.ts';

t.test('a writer frozen while it holds the append lock stops the other process only briefly', async (t) => {
  const url = await testDatabase(t, 'frozen');
  const prefix = uniquePrefix();
  t.teardown(() => deletePrefix(TEST_REDIS_URL, prefix));
  const common = {
    HOST: '127.0.0.1',
    API_PORT: '0',
    MEDIA_PORT: '0',
    DATA_DIR: tempDir(t, 'stoat-frozen'),
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: prefix,
    RATE_LIMITS: 'off',
    LOG_LEVEL: 'info',
    EVENTSTORE_URL: url,
  };
  // The default time limits (PG_LOCK_TIMEOUT_MS, PG_STATEMENT_TIMEOUT_MS, PG_IDLE_TX_TIMEOUT_MS) are under test.
  const [a, b] = await Promise.all([startRoleProcess(t, { ...common, ROLES: 'api' }), startRoleProcess(t, { ...common, ROLES: 'api,projector' })]);
  // SIGKILL (the teardown) ends a stopped process too; resume it first anyway so nothing lingers stopped.
  t.teardown(() => void (a.child.exitCode === null && a.child.signalCode === null ? process.kill(a.pid, 'SIGCONT') : undefined));
  const owner = await signup({ apiUrl: b.apiUrl! });
  const { general } = await createServer(owner);

  // Load: each process gets a stream of sends (one at a time each, several senders).
  const acked: Array<{ via: 'a' | 'b'; sent: number; at: number }> = [];
  const refusals: Array<{ via: 'a' | 'b'; res: Res | null }> = [];
  let stop = false;
  const sender = async (via: 'a' | 'b', n: number) => {
    const api = client({ apiUrl: (via === 'a' ? a : b).apiUrl! }, owner.token);
    for (let k = 0; !stop; k++) {
      const sent = Date.now();
      const r = await api.post(`/channels/${general}/messages`, { content: `${via}${n}-${k}` }, { skipOpenApi: true }).catch(() => null);
      if (r?.status === 200) acked.push({ via, sent, at: Date.now() });
      else if (!stop) refusals.push({ via, res: r });
    }
  };
  const senders = [0, 1, 2].flatMap((n) => [sender('a', n), sender('b', n)]);
  t.teardown(async () => {
    stop = true;
    await Promise.race([Promise.allSettled(senders), new Promise((r) => setTimeout(r, 5_000).unref())]);
  });
  await until('both processes appending', () => acked.filter((x) => x.via === 'a').length >= 5 && acked.filter((x) => x.via === 'b').length >= 5, 60_000);

  // Freeze A at a moment it holds the append lock (its session is then inside the append's transaction).
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  t.teardown(() => admin.end());
  const app = `stoatish ${os.hostname().slice(0, 40)} ${a.pid}`;
  const holds = async () =>
    (
      await admin.query(
        `SELECT 1 FROM pg_locks l JOIN pg_stat_activity s ON s.pid = l.pid
          WHERE l.locktype = 'advisory' AND l.granted AND s.datname = current_database() AND s.application_name = $1`,
        [app],
      )
    ).rowCount! > 0;
  let frozen = false;
  for (let attempt = 0; attempt < 500 && !frozen; attempt++) {
    process.kill(a.pid, 'SIGSTOP');
    // Let a COMMIT already on the wire finish: the lock is then either released or held for as long as A is stopped.
    await new Promise((r) => setTimeout(r, 50));
    if (await holds()) frozen = await holds();
    if (!frozen) {
      process.kill(a.pid, 'SIGCONT');
      await new Promise((r) => setTimeout(r, 5 + (attempt % 7) * 3));
    }
  }
  t.ok(frozen, 'API process A is stopped holding the append lock inside its transaction');
  if (!frozen) return;
  const frozenAt = Date.now();
  const refusedBefore = refusals.length;

  // A send B began after A froze: its append had to take the lock A holds.
  const resumed = await until('B to append again', () => acked.find((x) => x.via === 'b' && x.sent > frozenAt), 30_000, 50).catch(() => undefined);
  t.ok(resumed, `B appended again ${resumed ? resumed.at - frozenAt : '—'} ms after A froze (at most 30 s)`);
  const meanwhile = refusals.slice(refusedBefore).filter((r) => r.via === 'b');
  t.ok(
    meanwhile.every((r) => r.res?.status === 503 && typeof (r.res.body as { type?: unknown } | undefined)?.type === 'string'),
    `B's refusals while A held the lock were 503 JSON (${meanwhile.map((r) => r.res?.status ?? 'no answer').join(', ') || 'none'})`,
  );

  // A resumes: the server has ended its session; it must live on and append again on a new one.
  process.kill(a.pid, 'SIGCONT');
  const again = Date.now();
  const aBack = await until('A to append again', () => acked.find((x) => x.via === 'a' && x.sent > again), 30_000, 50).catch(() => undefined);
  t.ok(aBack, 'A, resumed, appends again');
  t.equal(a.child.exitCode, null, 'A is still running');
  t.equal(a.child.signalCode, null, 'A was not killed');
  const bad = a.tail().split('\n').filter((l) => /uncaught|unhandled/i.test(l));
  t.same(bad, [], 'A logged no uncaught or unhandled error');
  stop = true;
});
