/**
 * The API's fact cache (src/readmodel/factCache.ts, issue 18): sessions, servers, channels and members are
 * served from memory, and a write acknowledged by one API process is seen by the next request to another,
 * under load. The second API process applies its invalidations 300 ms late (an injected fault), so only its
 * fence — catching the cache up with the checkpoints before a request reads anything — keeps it correct.
 * Also the cache's own rules: a gap in the stream empties it, a fetch overtaken by an invalidation is not
 * stored, a whole hash's deletion drops its fields, a new generation starts empty, absent sessions are
 * never cached.
 */
import t from 'tap';
import { FactCache, fieldKey, isCacheableHash, isCacheableKey, pageKeyOf } from '../src/readmodel/factCache.ts';
import { Permission } from '../src/permissions/bits.ts';
import { client, signup, type TestUser } from './helpers/http.ts';
import { createServer, join } from './helpers/servers.ts';
import { startTestService, waitServing } from './helpers/service.ts';

t.test('which keys are cached', async (t) => {
  t.ok(isCacheableKey('session:abc'));
  t.ok(isCacheableKey('server:01ABC'));
  t.ok(isCacheableKey('channel:01ABC'));
  t.ok(isCacheableKey('user:01ABC'));
  t.notOk(isCacheableKey('channel:01ABC:history'), 'message pages are not facts');
  t.notOk(isCacheableKey('user:01ABC:servers'), 'sets are not cached');
  t.ok(isCacheableHash('server:01ABC:members'));
  t.equal(pageKeyOf('channel:01ABC:history'), 'page:01ABC', 'a write to a channel’s messages drops its pages');
  t.equal(pageKeyOf('channel:01ABC:messages'), undefined, 'not the keys of the layout before');
  t.equal(pageKeyOf('channel:01ABC'), undefined);
  t.notOk(isCacheableHash('server:01ABC:bans'));
});

t.test('the cache rules', async (t) => {
  const cache = new FactCache({ maxEntries: 100, staleMs: 50 });
  cache.useGeneration(1);
  t.notOk(cache.ready(1), 'not ready before a fence');
  await cache.reach(0, 10n);
  t.ok(cache.ready(1), 'ready once every partition has a position');

  const store = (key: string, raw: string | null) => cache.finish(key, cache.begin(key), raw);
  store('server:a', '{"v":1}');
  t.equal(cache.get('server:a'), '{"v":1}', 'a stored fact is served');

  cache.apply(0, { g: 1, p: '20', q: '10', k: ['server:a'] });
  t.equal(cache.get('server:a'), undefined, 'an invalidation drops it');
  t.equal(cache.position(0), 20n, 'and moves the position');

  store('server:a', '{"v":2}');
  cache.apply(0, { g: 1, p: '15', q: '5', k: ['server:a'] });
  t.equal(cache.get('server:a'), '{"v":2}', 'an entry at or below the position changes nothing');

  const overtaken = cache.begin('channel:c');
  cache.apply(0, { g: 1, p: '30', q: '20', k: ['channel:c'] });
  cache.finish('channel:c', overtaken, '{"old":true}');
  t.equal(cache.get('channel:c'), undefined, 'a fetch an invalidation overtook is not stored');

  store(fieldKey('server:a:members', 'u1'), '{"m":1}');
  store(fieldKey('server:a:members', 'u2'), '{"m":2}');
  store('server:b', '{"v":1}');
  cache.apply(0, { g: 1, p: '40', q: '30', k: ['server:a:members'] });
  t.equal(cache.get(fieldKey('server:a:members', 'u1')), undefined, 'a whole hash written drops its fields');
  t.equal(cache.get(fieldKey('server:a:members', 'u2')), undefined);
  t.equal(cache.get('server:b'), '{"v":1}', 'other entries stay');

  cache.apply(0, { g: 1, p: '60', q: '50', k: [] });
  t.equal(cache.get('server:b'), undefined, 'a gap (entries 40 → 50 missed) empties the cache');
  t.equal(cache.position(0), 60n);

  store('server:b', '{"v":1}');
  cache.apply(0, { g: 2, p: '70', q: '60', k: ['server:b'] });
  t.equal(cache.get('server:b'), '{"v":1}', 'entries of another generation are not this cache’s');
  cache.useGeneration(2);
  t.equal(cache.get('server:b'), undefined, 'a new generation starts empty');
  t.notOk(cache.ready(1), 'and needs a fence again');

  await cache.reach(0, 100n);
  store('server:c', '{"v":1}');
  const waited = cache.reach(0, 120n);
  cache.apply(0, { g: 2, p: '120', q: '100', k: [] });
  await waited;
  t.equal(cache.get('server:c'), '{"v":1}', 'a wait ends when the stream brings the position');
  await cache.reach(0, 130n);
  t.equal(cache.get('server:c'), undefined, 'a position the stream does not bring in time empties the cache');
  t.equal(cache.position(0), 130n);
});

t.test('cached pages go with any write to their channel’s messages', async (t) => {
  const cache = new FactCache({ maxEntries: 100, maxBytes: 1_000_000, staleMs: 50 });
  cache.useGeneration(1);
  await cache.reach(0, 1n);
  const page = { json: Buffer.from('[]'), authors: [] };
  cache.finishPage('c1', 50, cache.beginPage('c1', 50), page);
  cache.finishPage('c1', 100, cache.beginPage('c1', 100), page);
  cache.finishPage('c2', 50, cache.beginPage('c2', 50), page);
  t.equal(cache.getPage('c1', 50), page);
  cache.apply(0, { g: 1, p: '2', q: '1', k: ['page:c1'] });
  t.equal(cache.getPage('c1', 50), undefined, 'every page size of the channel goes');
  t.equal(cache.getPage('c1', 100), undefined);
  t.equal(cache.getPage('c2', 50), page, 'other channels stay');
  const overtaken = cache.beginPage('c2', 10);
  cache.apply(0, { g: 1, p: '3', q: '2', k: ['page:c2'] });
  cache.finishPage('c2', 10, overtaken, page);
  t.equal(cache.getPage('c2', 10), undefined, 'a page fetch an invalidation overtook is not stored');
});

t.test('the cache is bounded in entries and in bytes', async (t) => {
  const byCount = new FactCache({ maxEntries: 10, staleMs: 50 });
  byCount.useGeneration(1);
  await byCount.reach(0, 1n);
  for (let i = 0; i < 10; i++) byCount.finish(`server:${i}`, byCount.begin(`server:${i}`), '{}');
  t.equal(byCount.size, 10, '10 entries are kept');
  byCount.finish('server:10', byCount.begin('server:10'), '{}');
  t.ok(byCount.size <= 10, 'the 11th evicts the oldest');
  t.equal(byCount.get('server:0'), undefined, 'the oldest went first');
  t.equal(byCount.get('server:10'), '{}');

  const big = 'x'.repeat(10_000);
  const byBytes = new FactCache({ maxEntries: 1_000_000, maxBytes: 100_000, staleMs: 50 });
  byBytes.useGeneration(1);
  await byBytes.reach(0, 1n);
  for (let i = 0; i < 4; i++) byBytes.finish(`channel:${i}`, byBytes.begin(`channel:${i}`), big);
  t.equal(byBytes.size, 4, 'four 20 kB entries fit in 100 kB');
  for (let i = 4; i < 20; i++) byBytes.finish(`channel:${i}`, byBytes.begin(`channel:${i}`), big);
  t.ok(byBytes.heldBytes <= 100_000, `the bytes held stay under the bound (${byBytes.heldBytes})`);
  t.ok(byBytes.size < 5, 'entries past the bound were evicted');
  t.equal(byBytes.get('channel:19'), big, 'the newest stays');
  byBytes.apply(0, { g: 1, p: '5', q: '1', k: ['channel:19'] });
  t.ok(byBytes.heldBytes < 100_000 - 20_000 + 1, 'an invalidation gives its bytes back');
});

t.test('a write through one API process is seen by the next request to another, under load', async (t) => {
  const a = await startTestService(t, { RATE_LIMITS: 'off' });
  // B applies invalidations 300 ms late; it may wait 5 s for them before emptying its cache instead.
  const b = await startTestService(
    t,
    { ROLES: 'api', DATA_DIR: a.dataDir, REDIS_PREFIX: a.prefix, RATE_LIMITS: 'off', FACT_CACHE_STALE_MS: '5000' },
    { factCacheApplyDelayMs: 300 },
  );
  await waitServing(b);
  const owner = await signup(a);
  const member = await signup(a);
  const others: TestUser[] = [];
  for (let i = 0; i < 4; i++) others.push(await signup(a));
  const server = await createServer(owner);
  await join(owner, server.general, member, ...others);
  const viaB = (u: TestUser) => client(b, u.token);
  const memberB = viaB(member);

  // Background load: the others send through both processes for the whole test.
  let loading = true;
  let loadSends = 0;
  const load = Promise.all(
    others.map(async (u, i) => {
      const api = i % 2 === 0 ? u.api : viaB(u);
      while (loading) {
        const r = await api.post(`/channels/${server.general}/messages`, { content: `load ${i}` });
        if (r.status === 200) loadSends++;
      }
    }),
  );
  t.teardown(() => void (loading = false));

  // Warm B's cache with the member's facts, and check they are served from it.
  for (let i = 0; i < 3; i++) t.equal((await memberB.get(`/channels/${server.general}`)).status, 200);
  const cache = b.readModels.factCache!;
  t.ok(cache, 'the API process has a fact cache');
  const hits = cache.stats.hits;
  t.equal((await memberB.get(`/channels/${server.general}`)).status, 200);
  t.ok(cache.stats.hits > hits, 'B answers from its cache');

  for (let round = 0; round < 4; round++) {
    // The channel's default permissions (a `channel:` fact) changed through A …
    const deny = await owner.api.put(`/channels/${server.general}/permissions/default`, {
      permissions: { allow: 0, deny: Number(Permission.SendMessage) },
    });
    t.equal(deny.status, 200, `round ${round}: SendMessage denied through A`);
    // … hold for the very next request to B.
    const refused = await memberB.post(`/channels/${server.general}/messages`, { content: 'denied?' });
    t.equal(refused.status, 403, `round ${round}: B refuses at once`);
    t.equal(refused.body?.type, 'MissingPermission');
    const allow = await owner.api.put(`/channels/${server.general}/permissions/default`, { permissions: { allow: 0, deny: 0 } });
    t.equal(allow.status, 200);
    t.equal((await memberB.post(`/channels/${server.general}/messages`, { content: 'allowed' })).status, 200, `round ${round}: B allows at once`);
  }

  // The server's default permissions (a `server:` fact).
  const serverDefault = (await owner.api.get(`/servers/${server.id}`)).body.default_permissions as number;
  const without = BigInt(serverDefault) & ~Permission.SendMessage;
  t.equal((await owner.api.put(`/servers/${server.id}/permissions/default`, { permissions: Number(without) })).status, 200);
  t.equal((await memberB.post(`/channels/${server.general}/messages`, { content: 'x' })).status, 403, 'a server default changed through A holds on B');
  t.equal((await owner.api.put(`/servers/${server.id}/permissions/default`, { permissions: serverDefault })).status, 200);
  t.equal((await memberB.post(`/channels/${server.general}/messages`, { content: 'x' })).status, 200);

  // A session ended through A (a `session:` fact) is gone on B.
  const login = await client(a).post('/auth/session/login', { email: member.email, password: member.password, friendly_name: 'second' });
  t.equal(login.status, 200);
  const second = client(b, login.body.token);
  t.equal((await second.get('/users/@me')).status, 200, 'the new session works on B (and is cached there)');
  t.equal((await client(a, login.body.token).post('/auth/session/logout')).status, 204);
  const after = await second.get('/users/@me');
  t.equal(after.status, 401, 'B refuses the ended session at once');
  t.equal(after.body?.type, 'InvalidSession');

  // A member kicked through A (a members-hash field) is no member on B.
  const kicked = others[3]!;
  t.equal((await viaB(kicked).get(`/channels/${server.general}`)).status, 200);
  loading = false;
  await load;
  t.equal((await owner.api.del(`/servers/${server.id}/members/${kicked.userId}`)).status, 204);
  t.equal((await viaB(kicked).get(`/channels/${server.general}`)).status, 404, 'B no longer knows the kicked member');

  // The newest history page (cached on B) follows writes made through A: a send, an edit, a deletion.
  const newest = async () => (await memberB.get(`/channels/${server.general}/messages?limit=10`)).body as Array<{ _id: string; content?: string }>;
  await newest();
  const pageHits = cache.stats.hits;
  await newest();
  t.ok(cache.stats.hits > pageHits, 'the newest page is served from the cache');
  const fresh = await owner.api.post(`/channels/${server.general}/messages`, { content: 'fresh through A' });
  t.equal((await newest())[0]!._id, fresh.body._id, 'a message sent through A is on B’s newest page at once');
  t.equal((await owner.api.patch(`/channels/${server.general}/messages/${fresh.body._id}`, { content: 'edited through A' })).status, 200);
  t.equal((await newest())[0]!.content, 'edited through A', 'an edit too');
  t.equal((await owner.api.del(`/channels/${server.general}/messages/${fresh.body._id}`)).status, 204);
  t.not((await newest())[0]!._id, fresh.body._id, 'a deletion too');
  const withUsers = await memberB.get(`/channels/${server.general}/messages?limit=10&include_users=true`);
  t.equal(withUsers.status, 200);
  t.ok(withUsers.body.users.length > 0, 'include_users from a cached page lists the authors');

  // Read-your-writes inside B: its own write waits for its cache as well.
  const renamed = await memberB.patch('/users/@me', { status: { text: 'cached?' } });
  t.equal(renamed.status, 200);
  t.equal((await memberB.get('/users/@me')).body.status?.text, 'cached?', 'B reads its own write');
  t.ok(loadSends > 0, `the load ran (${loadSends} sends)`);
});
