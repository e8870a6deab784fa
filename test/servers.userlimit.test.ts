// The per-user server limit (USER_SERVER_LIMIT, Stoat's TooManyServers) under concurrency: creates and joins of one
// user, across two API processes, decided under the revision of the user's `serverslots-<userId>` stream.
import t from 'tap';
import { rm } from '../src/readmodel/keys.ts';
import { client, signup } from './helpers/http.ts';
import { createServer } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';

t.test('USER_SERVER_LIMIT holds under a race: 30 creates and joins at once, across two API processes, end exactly at the limit', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', USER_SERVER_LIMIT: '5' });
  // A second API process: its in-process mutex knows nothing of the first one's, so only the expected revision
  // of the user's slot stream decides between them.
  const other = await startTestService(t, { RATE_LIMITS: 'off', USER_SERVER_LIMIT: '5', DATA_DIR: s.dataDir, REDIS_PREFIX: s.prefix, ROLES: 'api' });
  const [racer, ...hosts] = await Promise.all([signup(s), signup(s), signup(s), signup(s), signup(s), signup(s)]);
  await createServer(racer, 'first');
  await createServer(racer, 'second');
  // 20 servers of others (four each, within their own limit) to join, one invite each: every join is distinct.
  const invites: string[] = [];
  for (const host of hosts) {
    for (let i = 0; i < 4; i++) {
      const srv = await createServer(host, `host ${i}`);
      invites.push((await host.api.post(`/channels/${srv.general}/invites`)).body._id as string);
    }
  }
  const viaOther = client(other, racer.token);
  const results = await Promise.all(
    Array.from({ length: 30 }, (_, i) => {
      const api = i % 2 ? viaOther : racer.api;
      return i < 10 ? api.post('/servers/create', { name: `race ${i}` }) : api.post(`/invites/${invites[i - 10]}`);
    }),
  );
  const ok = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status === 400);
  t.equal(ok.length, 3, 'exactly three more servers: the limit is five');
  t.equal(refused.length, 27);
  t.ok(refused.every((r) => r.body.type === 'TooManyServers' && r.body.max === 5), 'TooManyServers {max: 5}');
  const joined = await s.readModels.smembers(rm.userServers(racer.userId));
  const mine: string[] = [];
  for (const id of joined) if (await s.readModels.hgetJson(rm.serverMembers(id), racer.userId)) mine.push(id);
  t.equal(mine.length, 5, 'a member of exactly five servers');
  const slots = [];
  for await (const e of s.store.readAll()) if (e.stream === `serverslots-${racer.userId}`) slots.push(e);
  t.equal(slots.length, 5, 'one slot event per server entered, and none for a refused one');
  // Leaving one makes room for exactly one.
  t.equal((await racer.api.del(`/servers/${mine[0]}`)).status, 204);
  const again = await Promise.all([racer.api.post('/servers/create', { name: 'again' }), viaOther.post('/servers/create', { name: 'again 2' })]);
  t.same(again.map((r) => r.status).sort(), [200, 400]);
});
