/**
 * History pages in wire form (issue 18): the stored message is its wire form plus `,"revision":N}` with the
 * author at a fixed offset, and a page is written out from those bytes. The answer equals the messages as
 * fetched one by one, with and without `include_users`; a value stored in another layout (an older
 * projection, revision first) is still answered correctly, by the slow path.
 */
import t from 'tap';
import { rm } from '../src/readmodel/keys.ts';
import { recordRange } from '../src/readmodel/records.ts';
import { signup } from './helpers/http.ts';
import { createServer, join } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';

t.test('a history page is the stored wire forms', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const owner = await signup(s);
  const other = await signup(s);
  const server = await createServer(owner);
  await join(owner, server.general, other);
  const sent: string[] = [];
  for (let i = 0; i < 6; i++) {
    const who = i % 2 === 0 ? owner : other;
    const r = await who.api.post(`/channels/${server.general}/messages`, {
      content: `message ${i} with "quotes", \\ backslashes, 東京 and a revision-looking ,"revision":1} text`,
      ...(i === 4 ? { masquerade: { name: 'Masked' } } : {}),
    });
    t.equal(r.status, 200);
    sent.push(r.body._id);
  }
  // An edit and a reaction give messages revisions above 0.
  t.equal((await owner.api.patch(`/channels/${server.general}/messages/${sent[0]}`, { content: 'edited' })).status, 200);
  t.equal((await other.api.put(`/channels/${server.general}/messages/${sent[0]}/reactions/${encodeURIComponent('👍')}`)).status, 204);

  const one = async (id: string) => (await owner.api.get(`/channels/${server.general}/messages/${id}`)).body;
  const page = await owner.api.get(`/channels/${server.general}/messages?limit=100`);
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /^application\/json/);
  const expected = await Promise.all([...sent].reverse().map(one));
  t.same(page.body, expected, 'the page equals the messages fetched one by one, newest first');
  t.notOk(page.text.includes('"revision"'), 'no revision leaks out');
  t.equal(page.body[5].content, 'edited');
  t.same(page.body[5].reactions, { '👍': [other.userId] });

  const withUsers = await owner.api.get(`/channels/${server.general}/messages?limit=100&include_users=true&sort=Oldest`);
  t.equal(withUsers.status, 200);
  t.same(withUsers.body.messages, [...expected].reverse());
  t.same(withUsers.body.users.map((u: { _id: string }) => u._id).sort(), [owner.userId, other.userId].sort(), 'the authors are listed');
  t.same(withUsers.body.members.map((m: { _id: { user: string } }) => m._id.user).sort(), [owner.userId, other.userId].sort());

  // A value in another layout (the revision right after the id, as an older projection could store it) takes the
  // slow path.
  const key = s.readModels.key(rm.channelHistory(server.general));
  const range = recordRange(sent[2]!);
  const [stored] = await s.redis.zrangebylex(key, ...range, 'LIMIT', 0, 1);
  const { _id, revision, ...rest } = JSON.parse(stored!) as Record<string, unknown>;
  await s.redis.zremrangebylex(key, ...range);
  await s.redis.zadd(key, 0, JSON.stringify({ _id, revision, ...rest }));
  const again = await owner.api.get(`/channels/${server.general}/messages?limit=100&include_users=true`);
  t.same(again.body.messages, expected, 'an older layout answers the same');
  t.same(again.body.users.length, 2);
  const nearby = await owner.api.get(`/channels/${server.general}/messages?nearby=${sent[2]}&limit=4`);
  t.same(nearby.body.map((m: { _id: string }) => m._id), [sent[2], sent[3], sent[4], sent[1], sent[0]], 'nearby pages too');
});
