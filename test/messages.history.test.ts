// History over HTTP: before / after / nearby / sort / limit paging over 250 messages (exact ids and order),
// include_users, query validation, and read-your-writes of edits, deletes, reactions and pins.
import t from 'tap';
import { signup } from './helpers/http.ts';
import { createServer, join } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';

t.test('history paging over 250 messages', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [owner, member] = await Promise.all([signup(s), signup(s)]);
  const srv = await createServer(owner, 'History');
  await join(owner, srv.general, member);
  const M = `/channels/${srv.general}/messages`;
  const ids: string[] = [];
  for (let i = 0; i < 250; i += 10) {
    const batch = await Promise.all(
      Array.from({ length: 10 }, (_, k) => (k % 2 ? member : owner).api.post(M, { content: `m${i + k}` })),
    );
    for (const r of batch) {
      if (r.status !== 200) throw new Error(`send ${r.status} ${r.text}`);
      ids.push(r.body._id);
    }
  }
  ids.sort();
  t.equal(new Set(ids).size, 250);
  const page = async (query: string) => {
    const r = await member.api.get(`${M}?${query}`);
    if (r.status !== 200) throw new Error(`${query}: ${r.status} ${r.text}`);
    return (r.body as Array<{ _id: string }>).map((m) => m._id);
  };
  const range = (from: number, to: number) => (from <= to ? ids.slice(from, to + 1) : ids.slice(to, from + 1).reverse());

  t.same(await page(''), range(249, 200), 'default: the latest 50, newest first');
  t.same(await page('?'), range(249, 200), 'stoat.js appends "?"');
  t.same(await page('limit=100&sort=Oldest'), range(0, 99), 'Oldest: oldest first');
  t.same(await page('limit=1'), [ids[249]], 'limit 1');
  t.same(await page(`before=${ids[100]}&limit=100`), range(99, 0), 'before: older, newest first');
  t.same(await page(`before=${ids[100]}&limit=5&sort=Oldest`), range(0, 4), 'before with Oldest: the oldest of them');
  t.same(await page(`after=${ids[100]}&limit=10&sort=Oldest`), range(101, 110), 'after with Oldest: the next ones');
  t.same(await page(`after=${ids[100]}&limit=10`), range(249, 240), 'after with Latest: the newest of them');
  t.same(await page(`after=${ids[100]}&before=${ids[120]}&sort=Oldest&limit=100`), range(101, 119), 'between');
  t.same(await page(`after=${ids[249]}`), [], 'nothing after the newest');
  t.same(await page(`nearby=${ids[125]}&limit=10`), [...range(125, 130), ...range(124, 119)], 'nearby: limit/2+1 from it upwards, then as many older, newest first');
  t.same(await page(`nearby=${ids[125]}&limit=10&sort=Oldest&before=${ids[3]}`), [...range(125, 130), ...range(124, 119)], 'nearby ignores sort, before, after');
  t.same(await page(`nearby=${ids[2]}&limit=10`), [...range(2, 7), ...range(1, 0)], 'nearby the start');
  t.same(await page(`nearby=${ids[248]}&limit=10`), [...range(248, 249), ...range(247, 242)], 'nearby the end');
  t.same(await page(`nearby=${ids[125]}&limit=100`), [...range(125, 175), ...range(124, 74)], 'nearby at the largest limit: 51 + 51');
  // Walking the whole channel backwards with `before` cursors.
  const walked: string[] = [];
  let cursor = '';
  for (;;) {
    const p = await page(`limit=100${cursor ? `&before=${cursor}` : ''}`);
    if (p.length === 0) break;
    walked.push(...p);
    cursor = p[p.length - 1]!;
  }
  t.same(walked, range(249, 0), 'three pages of 100, 100 and 50 cover the channel exactly once');

  t.test('include_users', async (t) => {
    const r = await member.api.get(`${M}?limit=4&include_users=true`);
    t.same(r.body.messages.map((m: { _id: string }) => m._id), range(249, 246));
    t.same(r.body.users.map((u: { _id: string }) => u._id).sort(), [owner.userId, member.userId].sort());
    const self = r.body.users.find((u: { _id: string }) => u._id === member.userId);
    t.match(self, { relationship: 'User', online: true });
    t.equal(r.body.users.find((u: { _id: string }) => u._id === owner.userId).relationship, 'None');
    t.same(r.body.members.map((m: { _id: { user: string } }) => m._id.user).sort(), [owner.userId, member.userId].sort());
    t.ok(Array.isArray((await member.api.get(`${M}?limit=4&include_users=false`)).body), 'false: the plain array');
  });

  t.test('query validation', async (t) => {
    for (const q of ['limit=0', 'limit=101', 'limit=abc', 'limit=-1', `before=${ids[0]!.slice(1)}`, 'after=short', `nearby=${ids[0]}x`, 'sort=Newest', 'include_users=maybe']) {
      const r = await member.api.get(`${M}?${q}`);
      t.same([r.status, r.body.type], [400, 'FailedValidation'], q);
    }
    const relevance = await member.api.get(`${M}?sort=Relevance`);
    t.same([relevance.status, relevance.body.type], [400, 'InvalidOperation'], 'Relevance is for search');
    t.equal((await member.api.get(`${M}?limit=100`)).body.length, 100, 'limit 100');
  });

  t.test('edits, deletions, reactions and pins show on the next read', async (t) => {
    const target = ids[249]!;
    const author = (await member.api.get(`${M}/${target}`)).body.author === owner.userId ? owner : member;
    t.equal((await author.api.patch(`${M}/${target}`, { content: 'edited' })).status, 200);
    t.equal((await member.api.get(`${M}?limit=1`)).body[0].content, 'edited');
    await member.api.put(`${M}/${target}/reactions/${encodeURIComponent('🎉')}`);
    t.same((await member.api.get(`${M}?limit=1`)).body[0].reactions, { '🎉': [member.userId] });
    await owner.api.post(`${M}/${target}/pin`);
    t.equal((await member.api.get(`${M}?nearby=${target}&limit=2`)).body.find((m: { _id: string }) => m._id === target).pinned, true);
    await owner.api.del(`${M}/${ids[248]}`);
    t.notOk((await page(`before=${target}&limit=2`)).includes(ids[248]!), 'a deleted message leaves the page');
    t.same(await page(`before=${target}&limit=2`), [ids[247], ids[246]]);
  });
});
