// Per-server limits under concurrency: SERVER_CHANNEL_LIMIT (also across two API processes, where only the
// expected revision of `server-<id>` can keep the limit) and the 200-role limit.
import t from 'tap';
import { client, signup } from './helpers/http.ts';
import { createServer } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';

t.test('50 parallel channel creates on a server with 199 channels end with exactly 200', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  // A second API process on the same event store and read models, without a projector: its in-process
  // mutex knows nothing of the first one, so only the expected revision decides between them.
  const other = await startTestService(t, { RATE_LIMITS: 'off', DATA_DIR: s.dataDir, REDIS_PREFIX: s.prefix, ROLES: 'api' });
  const owner = await signup(s);
  const srv = await createServer(owner);
  t.equal(s.config.serverChannelLimit, 200, 'the default limit');
  for (let i = 1; i < 199; i += 6) {
    await Promise.all(Array.from({ length: Math.min(6, 199 - i) }, (_, k) => owner.api.post(`/servers/${srv.id}/channels`, { name: `c${i + k}` })));
  }
  t.equal((await owner.api.get(`/servers/${srv.id}`)).body.channels.length, 199);
  const viaOther = client(other, owner.token);
  const results = await Promise.all(
    Array.from({ length: 50 }, (_, i) => (i % 2 ? viaOther : owner.api).post(`/servers/${srv.id}/channels`, { name: `race${i}` })),
  );
  const created = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status === 400);
  t.equal(created.length, 1, 'exactly one more channel');
  t.equal(refused.length, 49);
  t.ok(refused.every((r) => r.body.type === 'TooManyChannels' && r.body.max === 200), 'TooManyChannels {max: 200}');
  const server = (await owner.api.get(`/servers/${srv.id}`)).body;
  t.equal(server.channels.length, 200);
  t.equal(new Set(server.channels).size, 200);
  // Every key of the current generation, in its main slot and in its shards (`{g<N>.<s>.<k>}`: a server channel's
  // read model lives in the shard of its id).
  const stored = (await s.redis.keys(`${s.prefix}{g${s.readModels.generation}[}.]*`)).filter((k) => /\}:channel:[^:]+$/.test(k));
  t.equal(stored.length, 200, 'exactly 200 channel read models');
  const events = [];
  for await (const e of s.store.readAll()) if (e.stream === `server-${srv.id}` && e.type === 'ChannelCreated') events.push(e);
  t.equal(events.length, 199, '199 ChannelCreated events besides "General": nothing extra in the log');
  // Deleting one makes room for one.
  t.equal((await owner.api.del(`/channels/${created[0]!.body._id}`)).status, 204);
  t.equal((await owner.api.post(`/servers/${srv.id}/channels`, { name: 'again' })).status, 200);
  t.equal((await owner.api.post(`/servers/${srv.id}/channels`, { name: 'over' })).body.type, 'TooManyChannels');
});

t.test('SERVER_CHANNEL_LIMIT lets an operator change the limit', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', SERVER_CHANNEL_LIMIT: '3' });
  const owner = await signup(s);
  const srv = await createServer(owner);
  t.equal((await owner.api.post(`/servers/${srv.id}/channels`, { name: 'two' })).status, 200);
  t.equal((await owner.api.post(`/servers/${srv.id}/channels`, { name: 'three' })).status, 200);
  const fourth = await owner.api.post(`/servers/${srv.id}/channels`, { name: 'four' });
  t.equal(fourth.status, 400);
  t.same({ type: fourth.body.type, max: fourth.body.max }, { type: 'TooManyChannels', max: 3 });
});

t.test('200 roles per server: the 200th passes, the 201st is TooManyRoles', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const owner = await signup(s);
  const srv = await createServer(owner);
  for (let i = 0; i < 199; i += 10) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(10, 199 - i) }, (_, k) => owner.api.post(`/servers/${srv.id}/roles`, { name: `r${i + k}` })),
    );
    if (batch.some((r) => r.status !== 200)) t.fail(`role create failed: ${batch.find((r) => r.status !== 200)!.text}`);
  }
  const last = await owner.api.post(`/servers/${srv.id}/roles`, { name: 'r199' });
  t.equal(last.status, 200, 'the 200th role');
  t.equal(last.body.role.rank, 199, 'ranks 0..199, the newest lowest');
  const over = await Promise.all(Array.from({ length: 3 }, () => owner.api.post(`/servers/${srv.id}/roles`, { name: 'over' })));
  t.ok(over.every((r) => r.status === 400 && r.body.type === 'TooManyRoles' && r.body.max === 200), 'the 201st: TooManyRoles {max: 200}');
  const roles = Object.values<{ rank: number }>((await owner.api.get(`/servers/${srv.id}`)).body.roles);
  t.equal(roles.length, 200);
  t.same(roles.map((r) => r.rank).sort((a, b) => a - b), Array.from({ length: 200 }, (_, i) => i), 'distinct ranks 0..199');
});
