// Message search and the pinned list (POST /channels/:id/search): Stoat's validation, authorization, full-text
// search across scripts (Cyrillic, CJK, Thai, Hangul, accents), phrases and exclusions, edits / deletions /
// pins showing at once (read-your-writes), sorting and paging, the history route's message shape, and the
// index as a projection: exactly once, a lease per file, rebuild from zero equal to live, no scan of a channel.
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import t from 'tap';
import { nodeArgs } from '../src/built.ts';
import { signup } from './helpers/http.ts';
import { createServer, join, roleWith } from './helpers/servers.ts';
import { startTestService, tempDir } from './helpers/service.ts';
import { Permission as P } from '../src/permissions/bits.ts';
import { PER_MS, SearchCheckpointMoved, SearchIndex } from '../src/search/index.ts';
import { rebuildSearchIndex, SearchIndexer } from '../src/search/indexer.ts';
import { SearchIndexerThread } from '../src/search/indexerThread.ts';
import { matchExpression } from '../src/search/text.ts';
import { upcast } from '../src/domain/events.ts';
import { createLogger } from '../src/log.ts';
import { newId } from '../src/ids.ts';
import { ulid } from 'ulid';
import type { RecordedEvent } from '../src/eventstore/port.ts';

/** A log event for the index's unit tests. */
function ev(position: bigint, type: string, stream: string, data: unknown): RecordedEvent {
  return { id: newId(), stream, revision: 0, position, type, data, metadata: { actor: null, requestId: 'r', at: new Date(0).toISOString(), scope: 's' } };
}
const sent = (position: bigint, id: string, channel: string, content: string) =>
  ev(position, 'MessageSent', `message-${id}`, { message: { _id: id, channel, author: 'u', content } });

/** The next ULID of the same millisecond (as a monotonic factory makes it: the random part plus one). */
function nextInMs(id: string): string {
  const chars = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  const a = id.split('');
  for (let i = a.length - 1; i >= 10; i--) {
    const v = chars.indexOf(a[i]!);
    if (v < 31) {
      a[i] = chars[v + 1]!;
      break;
    }
    a[i] = '0';
  }
  return a.join('');
}

t.test('query syntax (Stoat / MongoDB $text): words are alternatives, "phrases" required, -words excluded', async (t) => {
  t.equal(matchExpression('!!! ?', 'C'), null, 'nothing to find');
  t.equal(matchExpression('-only -exclusions', 'C'), null, 'exclusions alone find nothing (as MongoDB)');
  t.equal(matchExpression('a', 'C'), 'channel : "C" AND body : (("a"))');
  t.equal(matchExpression('a b "c d" -e', 'C'), 'channel : "C" AND body : (((("a" OR "b") AND "c d") NOT "e"))'.replace('((((', '(((').replace('"e"))', '"e")'));
  t.match(matchExpression('say "hi""', 'C'), /"say"/, 'a stray quote is not an injection');
  t.match(matchExpression('東京', 'C')!, /" 東  京 "/, 'CJK: one token per character');
});

t.test('the index (no HTTP)', async (t) => {
  const C = newId();
  const D = newId();
  const ix = new SearchIndex(':memory:');
  const texts = [
    'Café au lait', 'ПРИВЕТ мир', '東京タワーに行った', 'ฉันรักเมืองไทย', '서울에서 만나요', 'hello world foo-bar', 'naïve résumé', 'Ελληνικά γράμματα', 'مرحبا بالعالم',
  ];
  const ids = texts.map(() => newId());
  ix.applyBatch([...texts.map((c, i) => sent(BigInt(i + 1), ids[i]!, C, c)), sent(100n, newId(), D, 'cafe other channel')], undefined, upcast);
  const find = (q: string) => ix.search(C, q, { sort: 'Relevance', limit: 10 });
  const cases: Array<[string, number]> = [
    ['cafe', 0], ['CAFÉ', 0], ['привет', 1], ['МИР', 1], ['東京', 2], ['京', 2], ['タワー', 2], ['行った', 2], ['ไทย', 3], ['รัก', 3],
    ['서울', 4], ['만나요', 4], ['foo', 5], ['"foo bar"', 5], ['naive resume', 6], ['ελληνικα', 7], ['مرحبا', 8],
  ];
  for (const [q, i] of cases) t.same(find(q), [ids[i]], `${q} → ${texts[i]}`);
  t.same(find('resume -naive'), [], 'excluded');
  t.same(find('"lait cafe"'), [], 'a phrase in another order');
  t.same(find('nothing'), []);
  t.same(find('other'), [], 'another channel is not searched');
  t.same(new Set(find('cafe привет 東京')), new Set([ids[0], ids[1], ids[2]]), 'any of the words');
  t.equal(ix.checkpoint(), 100n);

  t.test('a batch is applied with its checkpoint or not at all', async (t) => {
    const before = ix.dump();
    t.throws(() => ix.applyBatch([sent(101n, newId(), C, 'moved')], 99n, upcast), SearchCheckpointMoved, 'another writer moved the checkpoint');
    const boom = (e: RecordedEvent) => {
      if (e.position === 103n) throw new Error('crash mid-batch');
      return upcast(e);
    };
    t.throws(() => ix.applyBatch([sent(101n, newId(), C, 'first'), sent(102n, newId(), C, 'second'), sent(103n, newId(), C, 'third')], 100n, boom), /crash mid-batch/);
    t.same(ix.dump(), before, 'nothing of either batch was written');
    t.same(find('first'), []);
  });

  t.test('edits, deletions, pins, channel deletion', async (t) => {
    const m = newId();
    ix.applyBatch([sent(200n, m, C, 'original words')], 100n, upcast);
    ix.applyBatch([ev(201n, 'MessageEdited', `message-${m}`, { channel: C, data: { content: 'replacement text' }, edited: '2020-01-01T00:00:00Z' })], 200n, upcast);
    t.same(find('original'), [], 'the old text is gone');
    t.same(find('replacement'), [m]);
    ix.applyBatch([ev(202n, 'MessageEdited', `message-${m}`, { channel: C, data: { embeds: [] }, edited: '2020-01-01T00:00:00Z' })], 201n, upcast);
    t.same(find('replacement'), [m], 'an edit of the embeds only keeps the text');
    ix.applyBatch([ev(203n, 'MessagePinned', `message-${m}`, { channel: C, by: 'u' })], 202n, upcast);
    t.same(ix.pinned(C, { sort: 'Latest', limit: 10 }), [m]);
    ix.applyBatch([ev(204n, 'MessageUnpinned', `message-${m}`, { channel: C, by: 'u' })], 203n, upcast);
    t.same(ix.pinned(C, { sort: 'Latest', limit: 10 }), []);
    ix.applyBatch([ev(205n, 'MessageDeleted', `message-${m}`, { channel: C })], 204n, upcast);
    t.same(find('replacement'), []);
    ix.applyBatch([ev(206n, 'ChannelDeleted', `server-x`, { channelId: C }), sent(207n, newId(), C, 'cafe late arrival')], 205n, upcast);
    t.same(find('cafe'), [], 'a deleted channel has nothing, even a message appended after the deletion');
    t.same(ix.dump().docs.filter((d) => (d as { channel: string }).channel === C), []);
  });

  t.test('Relevance finds a rare word however old; cursors are exact within one millisecond', async (t) => {
    const R = newId();
    const t0 = 1_700_000_000_000;
    const old = ulid(t0);
    const batch = [sent(300n, old, R, 'invoice 4711 common')];
    const recent: string[] = [];
    for (let i = 0; i < 1500; i++) {
      const id = ulid(t0 + 1000 + i);
      recent.push(id);
      batch.push(sent(301n + BigInt(i), id, R, `common filler ${i}`));
    }
    ix.applyBatch(batch, ix.checkpoint(), upcast);
    const rel = ix.search(R, 'common 4711', { sort: 'Relevance', limit: 5 });
    t.equal(rel[0], old, 'the message with both words first, though 1,500 newer ones have one of them');
    t.same(rel.slice(1), recent.slice(-4).reverse(), 'then the newest with one word');
    t.same(ix.search(R, 'common', { sort: 'Relevance', limit: 3 }), recent.slice(-3).reverse(), 'one word: newest first');
    // Three messages in one millisecond, arriving out of id order (as from two processes).
    const ms = t0 + 5000;
    const [a, b, c] = [ulid(ms), ulid(ms), ulid(ms)].sort();
    ix.applyBatch([sent(2000n, c!, R, 'samems'), sent(2001n, a!, R, 'samems'), sent(2002n, b!, R, 'samems')], ix.checkpoint(), upcast);
    t.same(ix.search(R, 'samems', { sort: 'Oldest', limit: 10, before: c }).sort(), [a, b], 'before: exactly the smaller ids of the same millisecond');
    t.same(ix.search(R, 'samems', { sort: 'Oldest', limit: 10, after: a }).sort(), [b, c], 'after: exactly the greater ids');
    t.same(ix.search(R, 'common', { sort: 'Latest', limit: 2, before: recent[100] }), [recent[99], recent[98]], 'before deep in the channel');
    t.same(ix.search(R, 'common', { sort: 'Oldest', limit: 2, after: recent[100] }), [recent[101], recent[102]], 'after');
    t.same(ix.search(R, 'common', { sort: 'Latest', limit: 2, before: recent[100]!.toLowerCase() }).length, 2, 'a lower-case cursor compares as a string (no time bound)');
  });

  t.test('many ids in one millisecond (a monotonic factory in a bulk import) never stop the index', async (t) => {
    const X = newId();
    const ms = 1_650_000_000_000;
    const first = ulid(ms);
    // Monotonic ids of one millisecond: what `newId(pastTime)` gives after a later id was made.
    const ids = [first];
    for (let i = 1; i < 3000; i++) ids.push(nextInMs(ids[i - 1]!));
    let pos = 10_000n;
    for (let i = 0; i < ids.length; i += 1000) ix.applyBatch(ids.slice(i, i + 1000).map((id) => sent(pos++, id, X, 'bulk')), ix.checkpoint(), upcast);
    t.equal(ix.search(X, 'bulk', { sort: 'Latest', limit: 5000 }).length, 3000);
    t.same(ix.search(X, 'bulk', { sort: 'Oldest', limit: 3, after: ids[1000] }), ids.slice(1001, 1004));
  });

  t.test('a full millisecond spills forward: past PER_MS ids the rows take the next free rowids after it', async (t) => {
    const X = newId();
    const ms = 1_700_000_000_000;
    const base = BigInt(ms) * PER_MS;
    // Filling 2^20 rows takes a minute; what the writer looks at is the millisecond's highest rowid, so its
    // last slot (and, in the second case, the next millisecond's last slot too) is taken as a bulk import
    // would have taken it.
    const fill = (index: SearchIndex, rowid: bigint, id: string) => {
      index.db.prepare('INSERT INTO doc (rowid, message_id, channel, pinned) VALUES (?, ?, ?, 0)').run(rowid, id, X);
      index.db.prepare('INSERT INTO fts (rowid, channel, body) VALUES (?, ?, ?)').run(rowid, X, 'spill');
    };
    const rowids = (index: SearchIndex, ids: string[]) => ids.map((id) => (index.db.prepare('SELECT rowid FROM doc WHERE message_id = ?').get(id) as { rowid: bigint }).rowid);
    const fresh = () => new SearchIndex(':memory:');

    // 1. Millisecond `ms` full, `ms + 1` holds a message of its own: the overflow goes after that message.
    const ix1 = fresh();
    const filler = ulid(ms);
    fill(ix1, base + PER_MS - 1n, filler);
    const own = ulid(ms + 1);
    const spilled = [nextInMs(filler)];
    for (let i = 1; i < 3; i++) spilled.push(nextInMs(spilled[i - 1]!));
    let pos = 1n;
    const events = [sent(pos++, own, X, 'spill'), ...spilled.map((id) => sent(pos++, id, X, 'spill'))];
    ix1.applyBatch(events, undefined, upcast);
    t.same(rowids(ix1, [filler, own, ...spilled]), [base + PER_MS - 1n, base + PER_MS, base + PER_MS + 1n, base + PER_MS + 2n, base + PER_MS + 3n], 'no rowid reused');
    t.equal(ix1.search(X, 'spill', { sort: 'Latest', limit: 10 }).length, 5, 'every message indexed');
    t.same(ix1.search(X, 'spill', { sort: 'Oldest', limit: 10 }), [filler, own, ...spilled], 'in rowid order');

    // Deterministic: the same log on the same state gives the same rows (rebuild equals live).
    const ix2 = fresh();
    fill(ix2, base + PER_MS - 1n, filler);
    ix2.applyBatch(events.slice(0, 2), undefined, upcast);
    ix2.applyBatch(events.slice(2), 2n, upcast);
    t.same(ix2.dump(), ix1.dump(), 'the same rows in two batches');

    // 2. Two full milliseconds in a row: the overflow goes on to the third.
    const ix3 = fresh();
    fill(ix3, base + PER_MS - 1n, filler);
    fill(ix3, base + 2n * PER_MS - 1n, ulid(ms + 1));
    ix3.applyBatch(spilled.map((id, i) => sent(BigInt(i + 1), id, X, 'spill')), undefined, upcast);
    t.same(rowids(ix3, spilled), [2n * PER_MS, 2n * PER_MS + 1n, 2n * PER_MS + 2n].map((r) => base + r));
    t.equal(ix3.search(X, 'spill', { sort: 'Latest', limit: 10 }).length, 5);
    for (const i of [ix1, ix2, ix3]) i.close();
  });

  t.test('no scan of the channel: the plans use the FTS index and the pinned index', async (t) => {
    const plan = (sql: string, ...args: unknown[]) => (ix.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((r) => r.detail).join(' | ');
    const search = plan('SELECT doc.message_id FROM fts JOIN doc ON doc.rowid = fts.rowid WHERE fts MATCH ? ORDER BY fts.rowid DESC LIMIT 50', matchExpression('x', D));
    t.match(search, /VIRTUAL TABLE INDEX/, search);
    t.match(search, /SEARCH doc USING INTEGER PRIMARY KEY/, 'each hit is looked up by rowid');
    t.notMatch(search, /SCAN doc/);
    const pinned = plan('SELECT message_id FROM doc WHERE channel = ? AND pinned = 1 ORDER BY message_id DESC LIMIT 50', D);
    t.match(pinned, /doc_pinned/, pinned);
    t.notMatch(pinned, /SCAN doc/);
  });
});

t.test('one indexer per file (lease); a rebuild from zero equals the live index', async (t) => {
  const dir = tempDir(t);
  const s = await startTestService(t, { RATE_LIMITS: 'off', DATA_DIR: dir });
  const [owner] = await Promise.all([signup(s)]);
  const srv = await createServer(owner, 'Lease');
  const M = `/channels/${srv.general}/messages`;
  for (const c of ['alpha beta', 'gamma', 'δέλτα', '中文字']) await owner.api.post(M, { content: c });
  const file = path.join(dir, 'search.sqlite');
  t.ok(s.searchIndexer?.active, 'the service indexer holds the lease');
  const second = new SearchIndexer({ store: s.store, file, log: createLogger('silent'), leaseMs: 60_000 });
  second.start();
  t.teardown(() => second.stop());
  t.equal(second.active, false, 'a second indexer on the same file waits');
  const live = new SearchIndex(file);
  t.teardown(() => live.close());
  await owner.api.post('/channels/' + srv.general + '/search', { query: 'gamma' }); // waits for the head
  const rebuilt = await rebuildSearchIndex(s.store, path.join(tempDir(t), 'rebuilt.sqlite'));
  t.teardown(() => rebuilt.close());
  t.same(rebuilt.dump(), live.dump(), 'rebuilt = live (rows, every token of every message, checkpoint)');
  t.ok(live.dump().terms.length > 8);

  // `npm run rebuild:search` while the service runs: it empties the index; the service's indexer replays the log.
  // The command reads only the data directory and the event store (no Redis: the service's `redis-cluster://`
  // URL under `npm run test:cluster` is not a REDIS_URL).
  const { execFile } = await import('node:child_process');
  const out = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, nodeArgs('src/cli/rebuildSearch.ts'), { env: { ...process.env, DATA_DIR: dir } }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    ),
  );
  t.match(out, /emptied .*search\.sqlite; the running search indexer replays the log from zero/);
  const found = await owner.api.post(`/channels/${srv.general}/search`, { query: 'δελτα' });
  t.same([found.status, found.body.length], [200, 1], 'searches wait for the replay and find the message again');
  t.same(live.dump(), rebuilt.dump(), 'the replayed index equals the rebuild from zero');
});

t.test('search over HTTP', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [owner, member, reader, outsider] = await Promise.all([signup(s), signup(s), signup(s), signup(s)]);
  const srv = await createServer(owner, 'Search');
  await join(owner, srv.general, member, reader);
  const C = srv.general;
  const S = `/channels/${C}/search`;
  const M = `/channels/${C}/messages`;
  const send = async (content: string, u = member) => {
    const r = await u.api.post(M, { content });
    if (r.status !== 200) throw new Error(`send ${r.status} ${r.text}`);
    return r.body._id as string;
  };
  const ids = (r: { body: Array<{ _id: string }> }) => r.body.map((m) => m._id);

  t.test('validation: Stoat errors', async (t) => {
    const bad: Array<[string, unknown, string]> = [
      ['query and pinned', { query: 'x', pinned: true }, 'InvalidOperation'],
      ['query and pinned false', { query: 'x', pinned: false }, 'InvalidOperation'],
      ['empty query', { query: '' }, 'FailedValidation'],
      ['query of 65', { query: 'q'.repeat(65) }, 'FailedValidation'],
      ['limit 0', { query: 'x', limit: 0 }, 'FailedValidation'],
      ['limit 101', { query: 'x', limit: 101 }, 'FailedValidation'],
      ['limit 1.5', { query: 'x', limit: 1.5 }, 'FailedValidation'],
      ['before of 25', { query: 'x', before: 'A'.repeat(25) }, 'FailedValidation'],
      ['after of 27', { query: 'x', after: 'A'.repeat(27) }, 'FailedValidation'],
      ['sort', { query: 'x', sort: 'Newest' }, 'FailedValidation'],
      ['pinned string', { pinned: 'yes' }, 'FailedValidation'],
      ['unknown field', { query: 'x', nearby: newId() }, 'FailedValidation'],
    ];
    for (const [what, body, type] of bad) {
      const r = await member.api.post(S, body);
      t.same([r.status, r.body.type], [400, type], what);
    }
    for (const [what, body] of [['query of 64', { query: 'q'.repeat(64) }], ['limit 100', { query: 'x', limit: 100 }], ['limit 1', { pinned: true, limit: 1 }], ['nulls', { query: null, pinned: null, limit: null, sort: null }]] as const) {
      t.equal((await member.api.post(S, body)).status, 200, what);
    }
  });

  t.test('authorization: non-member 404, ViewChannel / ReadMessageHistory 403', async (t) => {
    const r = await outsider.api.post(S, { query: 'x' });
    t.same([r.status, r.body.type], [404, 'NotFound']);
    t.same([(await outsider.api.post(`/channels/${newId()}/search`, { query: 'x' })).status], [404], 'unknown channel');
    t.same([(await outsider.api.post(`/channels/nope/search`, { query: 'x' })).status], [404], 'malformed channel id');
    const hidden = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'hidden' })).body._id as string;
    await owner.api.put(`/channels/${hidden}/permissions/default`, { permissions: { allow: 0, deny: Number(P.ReadMessageHistory) } });
    const noHistory = await member.api.post(`/channels/${hidden}/search`, { pinned: true });
    t.same([noHistory.status, noHistory.body.type, noHistory.body.permission], [403, 'MissingPermission', 'ReadMessageHistory']);
    await roleWith(owner, srv.id, P.ReadMessageHistory, [reader], 'reader');
    t.equal((await reader.api.post(`/channels/${hidden}/search`, { pinned: true })).status, 200, 'a role grants it back');
    await owner.api.put(`/channels/${hidden}/permissions/default`, { permissions: { allow: 0, deny: Number(P.ViewChannel) } });
    const noView = await member.api.post(`/channels/${hidden}/search`, { query: 'x' });
    t.same([noView.status, noView.body.permission], [403, 'ViewChannel']);
  });

  t.test('read-your-writes: sends, edits, deletions and pins show in the very next search', async (t) => {
    const a = await send('the quick brown fox');
    t.same(ids(await member.api.post(S, { query: 'quick' })), [a], 'found right after the send');
    await member.api.patch(`${M}/${a}`, { content: 'the slow green turtle' });
    t.same(ids(await member.api.post(S, { query: 'quick' })), [], 'the old words are gone after the edit');
    const edited = await member.api.post(S, { query: 'turtle' });
    t.same(ids(edited), [a]);
    t.equal(edited.body[0].content, 'the slow green turtle');
    t.ok(edited.body[0].edited, 'presented with its edit time');
    await owner.api.post(`${M}/${a}/pin`);
    const pins = await member.api.post(S, { pinned: true });
    t.same(ids(pins), [a], 'pinned');
    t.equal(pins.body[0].pinned, true);
    t.same(pins.body[0], (await member.api.get(`${M}/${a}`)).body, 'exactly as the message route presents it');
    await owner.api.del(`${M}/${a}/pin`);
    t.same(ids(await member.api.post(S, { pinned: true })), [], 'unpinned');
    await member.api.del(`${M}/${a}`);
    t.same(ids(await member.api.post(S, { query: 'turtle' })), [], 'deleted');
  });

  t.test('scripts, sort, paging, include_users', async (t) => {
    const made: string[] = [];
    for (let i = 0; i < 6; i++) made.push(await send(`paging word${i} common`, i % 2 ? member : owner));
    const jp = await send('今日は東京で会議があります');
    const ru = await send('Встреча в Москве завтра');
    t.same(ids(await member.api.post(S, { query: '東京' })), [jp]);
    t.same(ids(await member.api.post(S, { query: 'москве' })), [ru]);
    t.same(ids(await member.api.post(S, { query: 'common', sort: 'Latest' })), [...made].reverse());
    t.same(ids(await member.api.post(S, { query: 'common', sort: 'Oldest', limit: 2 })), made.slice(0, 2), 'limit 2 → 2');
    t.same(ids(await member.api.post(S, { query: 'common', sort: 'Latest', before: made[3] })), made.slice(0, 3).reverse(), 'before');
    t.same(ids(await member.api.post(S, { query: 'common', sort: 'Oldest', after: made[3] })), made.slice(4), 'after');
    const rel = ids(await member.api.post(S, { query: 'word2 common' }));
    t.equal(rel[0], made[2], 'Relevance (the default): the message with both words first');
    t.equal(rel.length, 6, 'any of the words');
    const withUsers = await member.api.post(S, { query: 'common', include_users: true });
    t.same(Object.keys(withUsers.body).sort(), ['members', 'messages', 'users']);
    t.same(new Set(withUsers.body.users.map((u: { _id: string }) => u._id)), new Set([owner.userId, member.userId]));
    t.same(new Set(withUsers.body.members.map((m: { _id: { user: string } }) => m._id.user)), new Set([owner.userId, member.userId]));
    const history = await member.api.get(`${M}?limit=50&include_users=true`);
    const byId = new Map(history.body.messages.map((m: { _id: string }) => [m._id, m]));
    for (const m of withUsers.body.messages) t.same(m, byId.get(m._id), 'the same shape as history');
    const all = await member.api.post(S, { sort: 'Oldest', limit: 3 });
    t.equal(all.status, 200, 'neither query nor pinned: the channel history');
    t.same(ids(all), ids(await member.api.get(`${M}?sort=Oldest&limit=3`)));
    t.same(ids(await member.api.post(S, { query: '!!!' })), [], 'nothing to search for: nothing');
  });

  t.test('pinned list: many pins, newest first, paging', async (t) => {
    const pinned: string[] = [];
    for (let i = 0; i < 4; i++) {
      const id = await send(`pin me ${i}`);
      t.equal((await owner.api.post(`${M}/${id}/pin`)).status, 204);
      pinned.push(id);
    }
    t.same(ids(await member.api.post(S, { pinned: true })), [...pinned].reverse());
    t.same(ids(await member.api.post(S, { pinned: true, sort: 'Oldest', limit: 3 })), pinned.slice(0, 3));
    t.same(ids(await member.api.post(S, { pinned: true, before: pinned[2] })), pinned.slice(0, 2).reverse());
  });
});

t.test('the indexer runs on a thread of its own; a crashed thread is started again and goes on from its checkpoint', async (t) => {
  const dir = tempDir(t);
  const s = await startTestService(t, { RATE_LIMITS: 'off', DATA_DIR: dir });
  const owner = await signup(s);
  const srv = await createServer(owner, 'Threaded');
  const M = `/channels/${srv.general}/messages`;
  const search = async (query: string) => {
    const r = await owner.api.post(`/channels/${srv.general}/search`, { query });
    t.equal(r.status, 200);
    return (r.body as Array<{ content: string }>).map((m) => m.content);
  };
  const thread = s.searchIndexer;
  if (!(thread instanceof SearchIndexerThread)) throw new Error('the service indexes on the main thread');
  await owner.api.post(M, { content: 'before the crash' });
  t.same(await search('crash'), ['before the crash']);
  t.ok(thread.active, 'the thread holds the lease');
  await thread.kill();
  t.equal(thread.active, false, 'a dead thread does not hold it');
  // Appended while no thread runs: the next one reads them from the index's checkpoint.
  for (const c of ['while down one', 'while down two']) t.equal((await owner.api.post(M, { content: c })).status, 200);
  t.same((await search('while down')).sort(), ['while down one', 'while down two'], 'the restarted thread indexed what came while it was down');
  t.ok(thread.active, 'the restarted thread took the lease again at once (same holder)');
  await owner.api.post(M, { content: 'after the restart' });
  t.same(await search('restart'), ['after the restart'], 'and follows the log live');
  // The index equals one built from zero on the log.
  const rebuilt = await rebuildSearchIndex(s.store, path.join(dir, 'rebuilt.sqlite'));
  t.teardown(() => rebuilt.close());
  const live = new SearchIndex(path.join(dir, 'search.sqlite'));
  t.teardown(() => live.close());
  t.same(live.dump(), rebuilt.dump(), 'nothing indexed twice or skipped across the crash');
});

t.test('on PostgreSQL and KurrentDB the indexer thread opens the engine itself and indexes live', async (t) => {
  const { testDatabase } = await import('./helpers/postgres.ts');
  const { startKurrentDouble } = await import('./helpers/kurrentDouble.ts');
  const double = await startKurrentDouble();
  t.teardown(() => double.stop());
  for (const [engine, url] of [['postgres', await testDatabase(t, 'search_thread')], ['kurrentdb', double.url]] as const) {
    t.test(engine, async (t) => {
      // KurrentDB holds no keys: the key store is named explicitly (a file here; every machine would need to reach it).
      const keyStore: Record<string, string> = engine === 'kurrentdb' ? { KEYSTORE_URL: `${tempDir(t, 'stoat-keys')}/keys.sqlite` } : {};
      const s = await startTestService(t, { RATE_LIMITS: 'off', EVENTSTORE_URL: url, ...keyStore });
      t.ok(s.searchIndexer instanceof SearchIndexerThread, 'indexed on a thread');
      const owner = await signup(s);
      const srv = await createServer(owner, `On ${engine}`);
      for (const c of [`hello from ${engine}`, 'unrelated words']) t.equal((await owner.api.post(`/channels/${srv.general}/messages`, { content: c })).status, 200);
      const r = await owner.api.post(`/channels/${srv.general}/search`, { query: engine });
      t.equal(r.status, 200);
      t.same((r.body as Array<{ content: string }>).map((m) => m.content), [`hello from ${engine}`], 'the message sent a moment ago is found');
      t.ok((s.searchIndexer as SearchIndexerThread).active, 'the thread holds the lease');
    });
  }
});

t.test('a thread that keeps failing is started again ever less often', async (t) => {
  const dir = tempDir(t);
  const lines: Array<{ msg: string; delayMs?: number }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as { msg: string; delayMs?: number });
      done();
    },
  });
  // An event store that cannot be reached: every thread dies young.
  const thread = new SearchIndexerThread(
    { store: { eventStoreUrl: 'postgres://nobody@127.0.0.1:1/none', dataDir: dir }, file: path.join(dir, 'search.sqlite'), leaseMs: 1000, logLevel: 'silent' },
    pino({ level: 'warn' }, sink),
    { baseMs: 40, maxMs: 320 },
  );
  t.teardown(() => thread.stop());
  thread.start();
  const restarts = () => lines.filter((l) => l.msg.includes('starting it again')).map((l) => l.delayMs);
  const until = Date.now() + 60_000;
  while (restarts().length < 6 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  t.same(restarts().slice(0, 6), [40, 80, 160, 320, 320, 320], 'each restart waits twice as long as the one before, up to the cap');
  t.equal(thread.active, false, 'no thread holds the lease');
});
