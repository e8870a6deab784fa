/**
 * A channel's `last_message_id` lives in `lastmsg:<id>`, apart from the channel (READ_MODEL_LAYOUT 3, issue 18):
 * a message sent must leave the channel's record, and the API's cached copy of it, untouched, while every place a
 * client is shown a channel still carries the id of its last message — the channel and DM fetches, the channel
 * PATCH answer, the server fetch with its channels, GET /users/dms, Ready, and the ChannelCreate a socket gets when
 * a channel becomes visible to it. Deleting the channel, the server or the group removes the key.
 */
import t from 'tap';
import { Redis } from 'ioredis';
import { Permission } from '../src/permissions/bits.ts';
import { readModelKey, rm } from '../src/readmodel/keys.ts';
import { client, signup, type TestUser } from './helpers/http.ts';
import { createServer, join, roleWith } from './helpers/servers.ts';
import { startTestService, TEST_REDIS_URL, waitServing } from './helpers/service.ts';
import { connectReady } from './helpers/ws.ts';

t.test('last_message_id apart from the channel', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const whole = t;
  const redis = new Redis(TEST_REDIS_URL);
  t.teardown(() => void redis.disconnect());
  const key = (logical: string) => readModelKey(s.prefix, s.readModels.generation!, logical);
  const [owner, member] = await Promise.all([signup(s), signup(s)]);
  const srv = await createServer(owner, 'Last');
  await join(owner, srv.general, member);
  const send = async (u: TestUser, channel: string, content: string) => {
    const r = await u.api.post(`/channels/${channel}/messages`, { content });
    if (r.status !== 200) throw new Error(`send: ${r.status} ${r.text}`);
    return r.body._id as string;
  };

  t.test('a send leaves the channel record and its cached copy alone', async (t) => {
    await send(member, srv.general, 'first');
    const before = await redis.get(key(rm.channel(srv.general)));
    // Cache the channel fact (a fetch reads it through the cache).
    t.equal((await member.api.get(`/channels/${srv.general}`)).status, 200);
    const cache = s.readModels.factCache!;
    t.not(cache.get(rm.channel(srv.general)), undefined, 'the channel is cached');
    const id = await send(member, srv.general, 'second');
    t.equal(await redis.get(key(rm.channel(srv.general))), before, 'the channel record is not rewritten by a send');
    t.not(cache.get(rm.channel(srv.general)), undefined, 'and stays cached');
    t.equal(await redis.get(key(rm.lastMessage(srv.general))), JSON.stringify(id), 'lastmsg:<id> holds the new id');
    t.notOk((JSON.parse(before!) as Record<string, unknown>).last_message_id, 'the channel record has no last_message_id of its own');
    t.equal((await member.api.get(`/channels/${srv.general}`)).body.last_message_id, id, 'the fetch shows the new id at once');
  });

  t.test('every place a server channel is shown carries it', async (t) => {
    const id = await send(owner, srv.general, 'shown');
    t.equal((await owner.api.get(`/channels/${srv.general}`)).body.last_message_id, id, 'GET /channels/:id');
    // The OpenAPI document describes this answer with channel ids (Stoat's serde flatten): not checked against it.
    const withChannels = await owner.api.get(`/servers/${srv.id}?include_channels=true`, { skipOpenApi: true });
    t.equal(withChannels.body.channels.find((c: { _id: string }) => c._id === srv.general)?.last_message_id, id, 'GET /servers/:id?include_channels=true');
    const edited = await owner.api.patch(`/channels/${srv.general}`, { description: 'edited' });
    t.same([edited.status, edited.body.last_message_id, edited.body.description], [200, id, 'edited'], 'the PATCH answer');
    const ws = await connectReady(s, member.token);
    t.teardown(() => ws.close());
    const ready = ws.events.find((e) => e.type === 'Ready')!;
    t.equal(ready.channels.find((c: { _id: string }) => c._id === srv.general)?.last_message_id, id, 'Ready');
    const empty = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'empty' })).body._id as string;
    t.notOk('last_message_id' in (await owner.api.get(`/channels/${empty}`)).body, 'a channel without messages has none');
  });

  t.test('a channel that becomes visible arrives with it', async (t) => {
    const hidden = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'hidden' })).body._id as string;
    const id = await send(owner, hidden, 'behind the curtain');
    const everyone = await owner.api.put(`/channels/${hidden}/permissions/default`, { permissions: { allow: 0, deny: Number(Permission.ViewChannel) } });
    t.equal(everyone.status, 200);
    const ws = await connectReady(s, member.token);
    t.teardown(() => ws.close());
    const ready = ws.events.find((e) => e.type === 'Ready')!;
    t.notOk(ready.channels.some((c: { _id: string }) => c._id === hidden), 'hidden in Ready');
    const from = ws.events.length;
    await roleWith(owner, srv.id, Permission.ViewChannel, [member], 'viewers');
    const created = await ws.waitFor((e) => e.type === 'ChannelCreate' && e._id === hidden, 20_000, from);
    t.equal(created.last_message_id, id, 'ChannelCreate carries the last message');
  });

  t.test('DMs and groups', async (t) => {
    const [a, b, c] = await Promise.all([signup(s), signup(s), signup(s)]);
    for (const [x, y] of [[a, b], [a, c]] as const) {
      t.equal((await x.api.put(`/users/${y.userId}/friend`)).status, 200);
      t.equal((await y.api.put(`/users/${x.userId}/friend`)).body.relationship, 'Friend');
    }
    const dm = (await a.api.get(`/users/${b.userId}/dm`)).body._id as string;
    const cache = s.readModels.factCache!;
    t.equal((await a.api.get(`/channels/${dm}`)).status, 200);
    t.not(cache.get(rm.privateChannel(dm)), undefined, 'the DM is cached');
    const m1 = await send(a, dm, 'hi');
    t.not(cache.get(rm.privateChannel(dm)), undefined, 'a message in an open DM leaves it cached');
    t.equal((await b.api.get(`/channels/${dm}`)).body.last_message_id, m1, 'GET /channels/:dm');
    t.equal((await b.api.get('/users/dms')).body.find((ch: { _id: string }) => ch._id === dm)?.last_message_id, m1, 'GET /users/dms');
    t.equal((await a.api.get(`/users/${b.userId}/dm`)).body.last_message_id, m1, 'GET /users/:id/dm of an existing DM');
    const ws = await connectReady(s, b.token);
    t.teardown(() => ws.close());
    t.equal(ws.events.find((e) => e.type === 'Ready')!.channels.find((ch: { _id: string }) => ch._id === dm)?.last_message_id, m1, 'Ready');

    // A closed DM reopens with a message: that one write changes the channel itself.
    t.equal((await b.api.del(`/channels/${dm}`)).status, 204, 'b closes the DM');
    t.equal((await b.api.get(`/channels/${dm}`)).body.active, false);
    const from = ws.events.length;
    const m2 = await send(a, dm, 'again');
    await ws.waitFor((e) => e.type === 'ChannelUpdate' && e.id === dm && e.data.active === true, 20_000, from);
    t.same([(await b.api.get(`/channels/${dm}`)).body.active, (await b.api.get(`/channels/${dm}`)).body.last_message_id], [true, m2], 'reopened, with the new last message');

    const group = (await a.api.post('/channels/create', { name: 'trio', users: [b.userId, c.userId] })).body._id as string;
    const g1 = await send(c, group, 'group hello');
    t.equal((await b.api.get(`/channels/${group}`)).body.last_message_id, g1, 'a group');
    const patched = await a.api.patch(`/channels/${group}`, { name: 'trio 2' });
    t.equal(patched.status, 200);
    t.equal((await b.api.get(`/channels/${group}`)).body.last_message_id, patched.body.last_message_id, 'the PATCH answer shows the same last message as a fetch');
    t.ok(await redis.exists(key(rm.lastMessage(group))), 'the group has a lastmsg key');
    t.equal((await a.api.del(`/channels/${group}`)).status, 204, 'the owner leaves');
    t.equal((await b.api.del(`/channels/${group}`)).status, 204);
    t.equal((await c.api.del(`/channels/${group}`)).status, 204, 'the last member leaves: the group is deleted');
    t.equal(await redis.exists(key(rm.lastMessage(group))), 0, 'its lastmsg key went with it');
  });

  t.test('a send through one API process shows in the next fetch through another', async (t) => {
    // B applies the fact cache's invalidations 300 ms late: only its fence keeps the cached last message fresh.
    // It shares A's keys, so it stops with the whole test (its teardown deletes them).
    const b = await startTestService(whole, { ROLES: 'api', DATA_DIR: s.dataDir, REDIS_PREFIX: s.prefix, RATE_LIMITS: 'off', FACT_CACHE_STALE_MS: '5000' }, { factCacheApplyDelayMs: 300 });
    await waitServing(b);
    const viaB = client(b, member.token);
    t.equal((await viaB.get(`/channels/${srv.general}`)).status, 200, 'B has the channel and its last message cached');
    for (let i = 0; i < 5; i++) {
      const id = await send(owner, srv.general, `through A ${i}`);
      t.equal((await viaB.get(`/channels/${srv.general}`)).body.last_message_id, id, `round ${i}: B shows the message sent through A at once`);
    }
  });

  t.test('deleting a channel or a server removes the key', async (t) => {
    const gone = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'gone' })).body._id as string;
    await send(owner, gone, 'x');
    t.equal(await redis.exists(key(rm.lastMessage(gone))), 1);
    t.equal((await owner.api.del(`/channels/${gone}`)).status, 204);
    t.equal(await redis.exists(key(rm.lastMessage(gone))), 0, 'channel deleted');
    const other = await createServer(owner, 'Doomed');
    await send(owner, other.general, 'y');
    t.equal(await redis.exists(key(rm.lastMessage(other.general))), 1);
    t.equal((await owner.api.del(`/servers/${other.id}`)).status, 204);
    t.equal(await redis.exists(key(rm.lastMessage(other.general))), 0, 'server deleted');
  });
});
