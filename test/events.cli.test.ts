import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import { migrate } from '../src/cli/eventsLib.ts';
import { startTestService, tempDir } from './helpers/service.ts';
import { signup } from './helpers/http.ts';
import { runCli } from './helpers/cli.ts';

async function all(store: { readAll(): AsyncIterable<RecordedEvent> }): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  for await (const e of store.readAll()) out.push(e);
  return out;
}

t.test('events tool', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const env = { DATA_DIR: s.dataDir, REDIS_URL: s.config.redisUrl, REDIS_PREFIX: s.prefix, LOG_LEVEL: 'silent' };
  const a = await signup(s);
  const b = await signup(s);
  const mid = (await s.store.headPosition())!;
  await signup(s);
  await a.api.patch('/users/@me', { display_name: 'Later Name' });

  t.test('export: NDJSON of everything, in order, and of one stream', async (t) => {
    const file = path.join(tempDir(t), 'all.ndjson');
    const r = await runCli(env, ['export', '--out', file]);
    t.equal(r.code, 0, r.err);
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { position: string; id: string; type: string; metadata: { scope: string } });
    const events = await all(s.store);
    t.equal(lines.length, events.length);
    t.same(lines.map((l) => l.id), events.map((e) => e.id), 'same events in the same order');
    t.ok(lines.every((l, i) => i === 0 || BigInt(l.position) > BigInt(lines[i - 1]!.position)));
    const one = await runCli(env, ['export', '--stream', `account-${b.userId}`]);
    const types = one.out.trim().split('\n').map((l) => (JSON.parse(l) as { type: string }).type);
    t.same(types, ['AccountCreated', 'SessionCreated', 'UserOnboarded']);
    const later = await runCli(env, ['export', '--after', mid.toString()]);
    t.ok(later.out.trim().split('\n').every((l) => BigInt((JSON.parse(l) as { position: string }).position) > mid), '--after is exclusive');
  });

  t.test('tail follows new events, filtered by type', async (t) => {
    let ready!: () => void;
    const tailing = new Promise<void>((r) => (ready = r));
    const pending = runCli(env, ['tail', '--type', 'UserEdited'], { until: (out) => out.includes('Tail Test'), onStderr: (e) => e.includes('tailing') && ready() });
    await tailing;
    await b.api.patch('/users/@me', { display_name: 'Not This' }); // also UserEdited, but checks the filter below
    await a.api.post('/auth/session/logout'); // a SessionRevoked: filtered out
    await b.api.patch('/users/@me', { display_name: 'Tail Test' });
    const r = await pending;
    const lines = r.out.trim().split('\n').map((l) => JSON.parse(l) as { type: string });
    t.ok(lines.length >= 2);
    t.ok(lines.every((l) => l.type === 'UserEdited'), 'only the asked type');
  });

  t.test('state --at shows the read models as they were', async (t) => {
    const r = await runCli(env, ['state', '--at', mid.toString()]);
    t.equal(r.code, 0, r.err);
    const counts = JSON.parse(r.out.trim().split('\n').pop()!) as { users: number; accounts: number; position: string };
    t.equal(counts.position, mid.toString());
    t.equal(counts.users, 2, 'two users existed at that position');
    const now = await runCli(env, ['state', '--at', new Date(Date.now() + 60_000).toISOString()]);
    t.equal((JSON.parse(now.out.trim().split('\n').pop()!) as { users: number }).users, 3, 'an ISO time after everything sees all users');
  });

  t.test('bad usage is one line and exit 2', async (t) => {
    const r = await runCli(env, ['state']);
    t.equal(r.code, 2);
    t.match(r.err, /--at/);
  });
});

t.test('migrate copies the history in order with ids and metadata, and resumes', async (t) => {
  const dir = tempDir(t);
  const source = new SqliteEventStore(path.join(dir, 'source.sqlite'));
  t.teardown(() => source.close());
  const meta = (i: number) => ({ actor: i % 3 ? `user${i % 5}` : null, requestId: `r${i}`, at: new Date(i * 1000).toISOString(), scope: `s${i % 4}`, ...(i % 7 === 0 ? { reason: `why ${i}` } : {}) });
  for (let i = 0; i < 1200; i++) {
    await source.append(`stream-${i % 13}`, [{ id: crypto.randomUUID(), type: 'Tested', data: { i, nested: { x: [i] } }, metadata: meta(i) }], 'any');
  }
  const target = new SqliteEventStore(path.join(dir, 'target.sqlite'));
  t.teardown(() => target.close());
  let crashAt = 700;
  await t.rejects(
    migrate(source, target, {
      checkpointDir: dir,
      targetId: 'target',
      batch: 100,
      afterBatch: (copied) => {
        if (copied >= crashAt) throw new Error('injected crash');
      },
    }),
  );
  crashAt = Infinity;
  const r = await migrate(source, target, { checkpointDir: dir, targetId: 'target', batch: 100 });
  t.ok(r.copied > 0 && r.copied < 1200, `resumed: copied ${r.copied} more`);
  const src = await all(source);
  const dst = await all(target);
  t.equal(dst.length, src.length, 'no event lost or duplicated');
  t.same(dst.map((e) => [e.id, e.stream, e.revision, e.type]), src.map((e) => [e.id, e.stream, e.revision, e.type]), 'same order, ids, streams, revisions');
  t.same(dst.map((e) => [e.data, e.metadata]), src.map((e) => [e.data, e.metadata]), 'same data and metadata');
  // Running it again copies nothing.
  fs.rmSync(path.join(dir, fs.readdirSync(dir).find((f) => f.startsWith('migrate-'))!));
  const again = await migrate(source, target, { checkpointDir: dir, targetId: 'target' });
  t.equal(again.copied, 0);
  t.equal(again.skipped, 1200, 'without a checkpoint everything is recognised as copied');
});

t.test('migrate to KurrentDB (the gRPC double) and back', async (t) => {
  const { startKurrentDouble } = await import('./helpers/kurrentDouble.ts');
  const { openKurrentEventStore } = await import('../src/eventstore/kurrent.ts');
  const double = await startKurrentDouble();
  t.teardown(() => double.stop());
  const dir = tempDir(t);
  const source = new SqliteEventStore(path.join(dir, 'source.sqlite'));
  t.teardown(() => source.close());
  for (let i = 0; i < 300; i++) {
    await source.append(`stream-${i % 7}`, [{ id: crypto.randomUUID(), type: 'Tested', data: { i }, metadata: { actor: i % 2 ? 'u' : null, requestId: `r${i}`, at: new Date(i).toISOString(), scope: 's', ...(i % 5 ? {} : { reason: 'because' }) } }], 'any');
  }
  const kurrent = await openKurrentEventStore(double.url);
  t.teardown(() => kurrent.close());
  t.equal((await migrate(source, kurrent, { checkpointDir: dir, targetId: double.url, batch: 64 })).copied, 300);
  const back = new SqliteEventStore(path.join(dir, 'back.sqlite'));
  t.teardown(() => back.close());
  t.equal((await migrate(kurrent, back, { checkpointDir: dir, targetId: 'back', batch: 64 })).copied, 300);
  const a = await all(source);
  const b = await all(back);
  t.same(b.map((e) => [e.id, e.stream, e.revision, e.type, e.data, e.metadata]), a.map((e) => [e.id, e.stream, e.revision, e.type, e.data, e.metadata]), 'round trip keeps order, ids, data and metadata');
});
