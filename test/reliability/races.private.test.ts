/**
 * Races of relationships, DMs and groups end exact, split across TWO API processes on one event store and one
 * set of read models (the second without a projector), so only the expected revisions decide:
 *
 * - 12 pairs of users send each other a friend request at the same moment, through different processes →
 *   every pair ends as friends (never Outgoing/Outgoing), with exactly two events on each user's stream.
 * - 10 parallel adds to a group of 4 with GROUP_SIZE_LIMIT=6 → exactly 2 added, 8 × 403 GroupTooLarge {max: 6}.
 * - 16 parallel opens of one DM from both users through both processes → one channel.
 *
 * At the end the read models equal a rebuild from zero. RATE_LIMITS=off so the limiter never answers first.
 */
import t from 'tap';
import { client, signup, type TestUser } from '../helpers/http.ts';
import { dumpCurrent, dumpRebuild } from '../helpers/servers.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

async function eventsOf(s: TestService, stream: string, type: string): Promise<number> {
  let n = 0;
  for (const e of await s.store.readStream(stream)) if (e.type === type) n++;
  return n;
}

t.test('private races across two API processes', async (t) => {
  const env = { RATE_LIMITS: 'off', GROUP_SIZE_LIMIT: '6' };
  const s = await startTestService(t, env);
  const other = await startTestService(t, { ...env, DATA_DIR: s.dataDir, REDIS_PREFIX: s.prefix, ROLES: 'api' });
  const viaB = (u: TestUser) => client(other, u.token);

  t.test('simultaneous mutual friend requests end as friends', async (t) => {
    const pairs: Array<[TestUser, TestUser]> = [];
    for (let i = 0; i < 12; i++) pairs.push([await signup(s), await signup(s)]);
    const results = await Promise.all(
      pairs.flatMap(([a, b]) => [a.api.put(`/users/${b.userId}/friend`), viaB(b).put(`/users/${a.userId}/friend`)]),
    );
    t.same([...new Set(results.map((r) => r.status))], [200], 'every request answered 200');
    for (const [a, b] of pairs) {
      const [ab, ba] = await Promise.all([a.api.get(`/users/${b.userId}`), viaB(b).get(`/users/${a.userId}`)]);
      t.same([ab.body.relationship, ba.body.relationship], ['Friend', 'Friend'], 'friends both ways');
      for (const u of [a, b]) {
        t.equal(await eventsOf(s, `relations-${u.userId}`, 'RelationshipChanged'), 2, 'request + acceptance on each stream, nothing else');
      }
    }
  });

  t.test('parallel adds at the group limit stop at the limit', async (t) => {
    const owner = await signup(s);
    const friends: TestUser[] = [];
    for (let i = 0; i < 13; i++) {
      const f = await signup(s);
      await owner.api.put(`/users/${f.userId}/friend`);
      await f.api.put(`/users/${owner.userId}/friend`);
      friends.push(f);
    }
    const g = await owner.api.post('/channels/create', { name: 'race', users: friends.slice(0, 3).map((f) => f.userId) });
    t.equal(g.body.recipients.length, 4);
    const id = g.body._id as string;
    const racers = friends.slice(3);
    const results = await Promise.all(racers.map((f, i) => (i % 2 ? viaB(owner) : owner.api).put(`/channels/${id}/recipients/${f.userId}`)));
    t.equal(results.filter((r) => r.status === 204).length, 2, 'exactly two adds win');
    t.same(
      [...new Set(results.filter((r) => r.status !== 204).map((r) => `${r.status} ${r.body?.type} ${r.body?.max}`))],
      ['403 GroupTooLarge 6'],
      'the rest: 403 GroupTooLarge {max: 6}',
    );
    t.equal((await viaB(owner).get(`/channels/${id}`)).body.recipients.length, 6, 'six members');
    t.equal(await eventsOf(s, `channel-${id}`, 'GroupMemberAdded'), 2, 'two GroupMemberAdded in the log');
  });

  t.test('parallel DM opens make one channel', async (t) => {
    const [a, b] = [await signup(s), await signup(s)];
    await a.api.put(`/users/${b.userId}/friend`);
    await b.api.put(`/users/${a.userId}/friend`);
    const opens = await Promise.all(
      Array.from({ length: 16 }, (_, i) => {
        const [u, o] = i % 2 ? [a, b] : [b, a];
        return (i % 4 < 2 ? u.api : viaB(u)).get(`/users/${o.userId}/dm`);
      }),
    );
    t.same([...new Set(opens.map((r) => r.status))], [200]);
    t.equal(new Set(opens.map((r) => r.body._id)).size, 1, 'one DM');
    const [lo, hi] = [a.userId, b.userId].sort();
    t.equal(await eventsOf(s, `dmpair-${lo}-${hi}`, 'DirectMessagePaired'), 1, 'claimed once');
  });

  t.test('rebuild equals live', async (t) => {
    const live = await dumpCurrent(s.redis, s.prefix);
    t.same(await dumpRebuild(t, s.redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions }), live);
  });
});
