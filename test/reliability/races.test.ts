/**
 * Races at the limits end exact. Every race is split across TWO API processes on one event store and one
 * set of read models (the second one without a projector), so the per-process mutex of the command executor
 * cannot serialise the racers: only the expected revision of the stream that holds the limit can.
 *
 * - 50 parallel channel creates on a server with 199 channels → exactly 200 (`server-<id>`).
 * - 50 parallel role creates on a server with 199 roles → exactly 200 (`server-<id>`).
 * - 30 parallel emoji creates on a server with 99 emoji → exactly 100 (`server-<id>`; uploads made first).
 * - 30 parallel reactions with new emoji on a message with 19 → exactly 20 distinct (`message-<id>`).
 * - 100 parallel sends with one Idempotency-Key → exactly one message per API process. The spec keeps the key
 *   store "in memory and local to the server process", so two processes are two stores (README, Scaling out):
 *   all 100 through one process make one message; split across two, one message in each.
 *
 * Each race checks the HTTP answers (the winners' 2xx, every loser's exact error), what the read models
 * show, and the event log itself (nothing extra appended); at the end the read models equal a rebuild from
 * zero. RATE_LIMITS=off so the limiter never answers first.
 */
import t from 'tap';
import { generationPrefix } from '../../src/readmodel/keys.ts';
import { client, signup, type Res, type TestUser } from '../helpers/http.ts';
import { uploadImage } from '../helpers/messages.ts';
import { createServer, dumpGeneration, dumpRebuild, join } from '../helpers/servers.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

/** Runs `n` calls `size` at a time (set-up traffic, not a race); throws on the first non-2xx. */
async function inBatches(n: number, size: number, call: (i: number) => Promise<Res>): Promise<Res[]> {
  const out: Res[] = [];
  for (let i = 0; i < n; i += size) {
    const batch = await Promise.all(Array.from({ length: Math.min(size, n - i) }, (_, k) => call(i + k)));
    const failed = batch.find((r) => r.status >= 300);
    if (failed) throw new Error(`set-up call ${failed.status} ${failed.text}`);
    out.push(...batch);
  }
  return out;
}

/** Events of one type on one stream, read from the log itself. */
async function eventsOf(s: TestService, stream: string, type: string): Promise<number> {
  let n = 0;
  for (const e of await s.store.readStream(stream)) if (e.type === type) n++;
  return n;
}

t.test('races at the limits, across two API processes', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const other = await startTestService(t, { RATE_LIMITS: 'off', DATA_DIR: s.dataDir, REDIS_PREFIX: s.prefix, ROLES: 'api' });
  const owner = await signup(s);
  const viaA = owner.api;
  const viaB = client(other, owner.token);
  /** Alternates the racers between the two processes. */
  const either = (i: number) => (i % 2 ? viaB : viaA);

  t.test('50 channel creates at 199 channels: exactly 200', async (t) => {
    const srv = await createServer(owner, 'channels');
    await inBatches(198, 6, (i) => either(i).post(`/servers/${srv.id}/channels`, { name: `c${i}` }));
    t.equal((await viaA.get(`/servers/${srv.id}`)).body.channels.length, 199, '199 to start with');
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => either(i).post(`/servers/${srv.id}/channels`, { name: `race${i}` })));
    const won = results.filter((r) => r.status === 200);
    const lost = results.filter((r) => r.status !== 200);
    t.equal(won.length, 1, 'one create wins');
    t.same([...new Set(lost.map((r) => `${r.status} ${r.body?.type} ${r.body?.max}`))], ['400 TooManyChannels 200'], 'the other 49: 400 TooManyChannels {max: 200}');
    const server = (await viaB.get(`/servers/${srv.id}`)).body;
    t.equal(server.channels.length, 200, 'the server lists 200 channels');
    t.equal(new Set(server.channels).size, 200);
    t.equal(await eventsOf(s, `server-${srv.id}`, 'ChannelCreated'), 199, '199 ChannelCreated in the log ("General" came with ServerCreated)');
    t.equal((await viaA.post(`/servers/${srv.id}/channels`, { name: 'late' })).body.type, 'TooManyChannels', 'and the limit stays');
  });

  t.test('50 role creates at 199 roles: exactly 200', async (t) => {
    const srv = await createServer(owner, 'roles');
    await inBatches(199, 10, (i) => either(i).post(`/servers/${srv.id}/roles`, { name: `r${i}` }));
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => either(i).post(`/servers/${srv.id}/roles`, { name: `race${i}` })));
    const won = results.filter((r) => r.status === 200);
    t.equal(won.length, 1, 'one create wins');
    t.same(
      [...new Set(results.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.body?.type} ${r.body?.max}`))],
      ['400 TooManyRoles 200'],
      'the other 49: 400 TooManyRoles {max: 200}',
    );
    const roles = Object.values<{ rank: number }>((await viaB.get(`/servers/${srv.id}`)).body.roles);
    t.equal(roles.length, 200, 'the server has 200 roles');
    t.same(roles.map((r) => r.rank).sort((a, b) => a - b), Array.from({ length: 200 }, (_, i) => i), 'distinct ranks 0..199');
    t.equal(await eventsOf(s, `server-${srv.id}`, 'RoleCreated'), 200, '200 RoleCreated in the log');
  });

  t.test('30 emoji creates at 99 emoji: exactly 100', async (t) => {
    const srv = await createServer(owner, 'emoji');
    // Each emoji is made from its own `emojis` upload (the upload id is the emoji id).
    const uploads: string[] = [];
    for (let i = 0; i < 129; i += 16) uploads.push(...(await Promise.all(Array.from({ length: Math.min(16, 129 - i) }, () => uploadImage(s, owner, 'emojis')))));
    await inBatches(99, 10, (i) => either(i).put(`/custom/emoji/${uploads[i]}`, { name: `e${i}`, parent: { type: 'Server', id: srv.id } }));
    const racers = uploads.slice(99);
    const results = await Promise.all(racers.map((id, i) => either(i).put(`/custom/emoji/${id}`, { name: `race${i}`, parent: { type: 'Server', id: srv.id } })));
    const won = results.filter((r) => r.status === 200);
    t.equal(won.length, 1, 'one create wins');
    t.same(
      [...new Set(results.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.body?.type} ${r.body?.max}`))],
      ['400 TooManyEmoji 100'],
      'the other 29: 400 TooManyEmoji {max: 100}',
    );
    t.equal((await viaB.get(`/servers/${srv.id}/emojis`)).body.length, 100, '100 emoji listed');
    t.equal(await eventsOf(s, `server-${srv.id}`, 'EmojiCreated'), 100, '100 EmojiCreated in the log');
    // A refused create used nothing: the losers' uploads are unused and can still be used.
    const loser = racers.find((id) => id !== won[0]!.body._id)!;
    t.equal(await eventsOf(s, `file-${loser}`, 'FileAttached'), 0, "a loser's upload was not used");
    t.equal((await viaA.del(`/custom/emoji/${uploads[0]}`)).status, 204, 'one deleted');
    t.equal((await viaB.put(`/custom/emoji/${loser}`, { name: 'again', parent: { type: 'Server', id: srv.id } })).status, 200, "makes room for a loser's upload");
  });

  t.test('30 reactions with new emoji on a message with 19: exactly 20 distinct', async (t) => {
    const srv = await createServer(owner, 'reactions');
    const M = `/channels/${srv.general}/messages`;
    const m = (await viaA.post(M, { content: 'react here' })).body._id as string;
    const emoji = (i: number) => encodeURIComponent(String.fromCodePoint(0x1f600 + i));
    await inBatches(19, 5, (i) => either(i).put(`${M}/${m}/reactions/${emoji(i)}`));
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => either(i).put(`${M}/${m}/reactions/${emoji(19 + i)}`)));
    t.equal(results.filter((r) => r.status === 204).length, 1, 'one new emoji lands');
    t.same([...new Set(results.filter((r) => r.status !== 204).map((r) => `${r.status} ${r.body?.type}`))], ['400 InvalidOperation'], 'the other 29: 400 InvalidOperation');
    t.equal(Object.keys((await viaB.get(`${M}/${m}`)).body.reactions).length, 20, '20 distinct emoji on the message');
    t.equal(await eventsOf(s, `message-${m}`, 'MessageReacted'), 20, '20 MessageReacted in the log');
  });

  t.test('100 sends with one Idempotency-Key', async (t) => {
    const srv = await createServer(owner, 'idempotency');
    const M = `/channels/${srv.general}/messages`;
    const [racer, splitter] = await Promise.all([signup(s), signup(s)]);
    await join(owner, srv.general, racer, splitter);
    const send = (api: ReturnType<typeof client>, i: number, key: string) => api.post(M, { content: `race ${i}` }, { headers: { 'Idempotency-Key': key } });
    const authored = async (u: TestUser) =>
      (await viaA.get(`${M}?limit=100`)).body.filter((x: { author: string }) => x.author === u.userId) as Array<{ _id: string; nonce: string }>;
    const sentBy = async (u: TestUser) => {
      let n = 0;
      for await (const e of s.store.readAll()) if (e.type === 'MessageSent' && e.metadata.actor === u.userId) n++;
      return n;
    };

    t.test('through one process: exactly one message', async (t) => {
      const results = await Promise.all(Array.from({ length: 100 }, (_, i) => send(racer.api, i, 'one-key')));
      t.equal(results.filter((r) => r.status === 200).length, 1, 'one send creates');
      const dup = results.filter((r) => r.status !== 200);
      t.equal(dup.length, 99);
      t.ok(dup.every((r) => r.status === 409 && r.text === '{"type":"DuplicateNonce"}'), 'the other 99: 409 {"type":"DuplicateNonce"}');
      t.equal((await authored(racer)).length, 1, 'one message in the channel');
      t.equal(await sentBy(racer), 1, 'one MessageSent in the log');
    });

    t.test('split across two processes: one message per process (the key store is process-local)', async (t) => {
      const b = client(other, splitter.token);
      const results = await Promise.all(Array.from({ length: 100 }, (_, i) => send(i % 2 ? b : splitter.api, i, 'split-key')));
      const created = results.filter((r) => r.status === 200);
      t.equal(created.length, 2, 'one send creates in each process');
      t.equal(results.filter((_, i) => i % 2 === 0 && results[i]!.status === 200).length, 1, 'one through process A');
      t.equal(results.filter((_, i) => i % 2 === 1 && results[i]!.status === 200).length, 1, 'one through process B');
      t.ok(results.filter((r) => r.status !== 200).every((r) => r.status === 409 && r.text === '{"type":"DuplicateNonce"}'), 'the other 98: 409 DuplicateNonce');
      const mine = await authored(splitter);
      t.equal(mine.length, 2, 'two messages in the channel');
      t.ok(mine.every((x) => x.nonce === 'split-key'), 'both carry the key as their nonce');
      t.equal(await sentBy(splitter), 2, 'two MessageSent in the log');
      // Each process keeps refusing the key it stored.
      t.equal((await send(splitter.api, 100, 'split-key')).status, 409);
      t.equal((await send(b, 101, 'split-key')).status, 409);
    });
  });

  t.test('after the races the read models equal a rebuild from zero', async (t) => {
    const live = await dumpGeneration(s.redis, generationPrefix(s.prefix, s.readModels.generation!));
    t.ok(Object.keys(live).length > 100, `${Object.keys(live).length} read-model keys`);
    t.same(await dumpRebuild(t, s.redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions }), live, 'rebuilt = live');
  });
});
