/**
 * Unreads and acks over HTTP and the gateway (issue 15): which messages count as mentions of whom, what an
 * ack clears, `GET /sync/unreads`, `PUT /channels/:id/ack/:message`, `PUT /servers/:id/ack`, ChannelAck to
 * the user's own sockets, Ready's `channel_unreads`, and rebuild equals live. The service runs with four
 * projector partitions, so mentions (server scope) and acks (user scope) are projected by different ones.
 */
import t from 'tap';
import { Redis } from 'ioredis';
import { Permission as P } from '../src/permissions/bits.ts';
import { newId } from '../src/ids.ts';
import { signup, type TestUser } from './helpers/http.ts';
import { createServer, dumpCurrent, dumpRebuild, join, roleWith } from './helpers/servers.ts';
import { startTestService, TEST_REDIS_URL } from './helpers/service.ts';
import { connectReady } from './helpers/ws.ts';

const PARTITIONS = 4;

type Unread = { _id: { channel: string; user: string }; last_id?: string; mentions?: string[] };

/** The caller's unread entry for a channel (undefined when it has none). */
async function unreadOf(u: TestUser, channel: string): Promise<Unread | undefined> {
  const r = await u.api.get('/sync/unreads');
  if (r.status !== 200) throw new Error(`unreads ${r.status} ${r.text}`);
  return (r.body as Unread[]).find((e) => e._id.channel === channel);
}

const mentionsOf = async (u: TestUser, channel: string) => (await unreadOf(u, channel))?.mentions ?? [];

t.test('unreads and acks', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', PROJECTOR_PARTITIONS: String(PARTITIONS) });
  const redis = new Redis(TEST_REDIS_URL);
  t.teardown(() => redis.disconnect());
  const [owner, alice, bob, carol, outsider] = await Promise.all([signup(s), signup(s), signup(s), signup(s), signup(s)]);
  const srv = await createServer(owner!, 'Unreads');
  await join(owner!, srv.general, alice!, bob!, carol!);
  const send = async (u: TestUser, content: string, extra: Record<string, unknown> = {}, channel = srv.general) => {
    const r = await u.api.post(`/channels/${channel}/messages`, { content, ...extra });
    if (r.status !== 200) throw new Error(`send ${r.status} ${r.text}`);
    return r.body._id as string;
  };
  // A channel carol cannot see (the default override hides it; nobody holds a role granting it back).
  const hidden = (await owner!.api.post(`/servers/${srv.id}/channels`, { name: 'hidden' })).body._id as string;
  t.equal((await owner!.api.put(`/channels/${hidden}/permissions/default`, { permissions: { allow: 0, deny: Number(P.ViewChannel) } })).status, 200);
  const seesHidden = await roleWith(owner!, srv.id, P.ViewChannel, [alice!, bob!], 'sees hidden');
  const mentionable = await roleWith(owner!, srv.id, 0n, [bob!], 'mentionable');
  // The owner holds MentionEveryone and MentionRoles (GrantAllSafe).

  t.test('GET /sync/unreads starts empty', async (t) => {
    const r = await alice!.api.get('/sync/unreads');
    t.equal(r.status, 200);
    t.same(r.body, []);
  });

  t.test('<@id>: a mention for members who can view the channel only', async (t) => {
    const m = await send(owner!, `hi <@${alice!.userId}> and <@${carol!.userId}>`, {}, hidden);
    t.same(await mentionsOf(alice!, hidden), [m], 'alice sees the channel: mentioned');
    t.same(await mentionsOf(carol!, hidden), [], 'carol cannot view it: no mention');
    const own = await unreadOf(alice!, hidden);
    t.same(own, { _id: { channel: hidden, user: alice!.userId }, mentions: [m] }, 'Stoat shape: no last_id before an ack');
  });

  t.test('reply with mention: true mentions the replied author; mention: false does not', async (t) => {
    const original = await send(carol!, 'a question');
    const quiet = await send(owner!, 'answer', { replies: [{ id: original, mention: false }] });
    t.same(await mentionsOf(carol!, srv.general), [], 'mention: false');
    const loud = await send(owner!, 'answer', { replies: [{ id: original, mention: true }] });
    t.same(await mentionsOf(carol!, srv.general), [loud], 'mention: true');
    t.not(quiet, loud);
  });

  t.test('a role mention: holders of the role who can view the channel', async (t) => {
    const general = await send(owner!, `ping <%${mentionable}>`);
    t.ok((await mentionsOf(bob!, srv.general)).includes(general), 'bob holds the role');
    t.notOk((await mentionsOf(alice!, srv.general)).includes(general), 'alice does not');
    const hiddenRole = await roleWith(owner!, srv.id, 0n, [carol!, bob!], 'carol and bob');
    const inHidden = await send(owner!, `ping <%${hiddenRole}>`, {}, hidden);
    t.ok((await mentionsOf(bob!, hidden)).includes(inHidden), 'bob holds it and sees the channel');
    t.notOk((await mentionsOf(carol!, hidden)).includes(inHidden), 'carol holds it but cannot view the channel');
    t.notOk((await mentionsOf(owner!, srv.general)).includes(general), 'the author is never mentioned by a mass mention');
  });

  t.test('@everyone: every member who can view the channel but the author', async (t) => {
    const m = await send(owner!, 'hey @everyone', {}, hidden);
    t.ok((await mentionsOf(alice!, hidden)).includes(m));
    t.ok((await mentionsOf(bob!, hidden)).includes(m));
    t.notOk((await mentionsOf(carol!, hidden)).includes(m), 'carol cannot view it');
    t.notOk((await mentionsOf(owner!, hidden)).includes(m), 'not the author');
    const noPermission = await alice!.api.post(`/channels/${srv.general}/messages`, { content: 'hey @everyone' });
    t.same([noPermission.status, noPermission.body.type, noPermission.body.permission], [403, 'MissingPermission', 'MentionEveryone'], 'needs MentionEveryone');
  });

  t.test('@online: only the viewers who are online', async (t) => {
    const ws = await connectReady(s, carol!.token);
    t.teardown(() => ws.close());
    const m = await send(owner!, 'hey @online');
    t.ok((await mentionsOf(carol!, srv.general)).includes(m), 'carol is connected');
    t.notOk((await mentionsOf(bob!, srv.general)).includes(m), 'bob is offline');
  });

  t.test('SuppressNotifications records no mention', async (t) => {
    const m = await send(owner!, `quiet <@${alice!.userId}>`, { flags: 2 });
    t.notOk((await mentionsOf(alice!, srv.general)).includes(m));
  });

  t.test('an ack clears the mentions up to the acked message, sets last_id, and is sent to the own sockets only', async (t) => {
    const own = await connectReady(s, alice!.token);
    const other = await connectReady(s, bob!.token);
    t.teardown(() => (own.close(), other.close()));
    const first = await send(owner!, `one <@${alice!.userId}>`);
    const middle = await send(owner!, 'no mention');
    const third = await send(owner!, `three <@${alice!.userId}>`);
    const before = await mentionsOf(alice!, srv.general);
    t.ok(before.includes(first) && before.includes(third));
    const r = await alice!.api.put(`/channels/${srv.general}/ack/${middle}`);
    t.equal(r.status, 204);
    const after = await unreadOf(alice!, srv.general);
    t.equal(after?.last_id, middle, 'last_id');
    t.same(after?.mentions, [third], 'mentions up to the ack are gone, the later one stays');
    const ack = await own.waitFor((e) => e.type === 'ChannelAck');
    t.same(ack, { type: 'ChannelAck', id: srv.general, user: alice!.userId, message_id: middle });
    // Bob's socket sees the channel's events; an ack of alice's is not one of them.
    const marker = await send(owner!, 'marker');
    await other.waitFor((e) => e.type === 'Message' && e._id === marker);
    t.notOk(other.events.some((e) => e.type === 'ChannelAck'), "another user's socket gets no ChannelAck");

    const head = await s.store.headPosition();
    t.equal((await alice!.api.put(`/channels/${srv.general}/ack/${middle}`)).status, 204, 'the same ack again: 204');
    t.equal(await s.store.headPosition(), head, '... and nothing appended');

    t.equal((await alice!.api.put(`/channels/${srv.general}/ack/${third}`)).status, 204);
    t.same(await unreadOf(alice!, srv.general), { _id: { channel: srv.general, user: alice!.userId }, last_id: third }, 'read to the end: no mentions');
  });

  t.test('mark as unread: an older ack moves last_id back; cleared mentions stay cleared', async (t) => {
    const a = await send(owner!, `a <@${alice!.userId}>`);
    const b = await send(owner!, 'b');
    t.equal((await alice!.api.put(`/channels/${srv.general}/ack/${b}`)).status, 204);
    t.equal((await alice!.api.put(`/channels/${srv.general}/ack/${a}`)).status, 204);
    t.same(await unreadOf(alice!, srv.general), { _id: { channel: srv.general, user: alice!.userId }, last_id: a });
    const c = await send(owner!, `c <@${alice!.userId}>`);
    t.same(await mentionsOf(alice!, srv.general), [c], 'a later mention counts again');
  });

  t.test('ack refusals', async (t) => {
    const m = await send(owner!, 'target', {}, hidden);
    const inGeneral = await send(owner!, 'elsewhere');
    const head = await s.store.headPosition();
    const check = async (u: TestUser, path: string, status: number, type: string, permission?: string) => {
      const r = await u.api.put(path);
      t.same([r.status, r.body?.type, r.body?.permission], [status, type, permission], `${path}: ${status} ${type}`);
    };
    await check(outsider!, `/channels/${hidden}/ack/${m}`, 404, 'NotFound');
    await check(carol!, `/channels/${hidden}/ack/${m}`, 403, 'MissingPermission', 'ViewChannel');
    await check(alice!, `/channels/${hidden}/ack/${inGeneral}`, 404, 'NotFound');
    await check(alice!, `/channels/${hidden}/ack/${newId()}`, 404, 'NotFound');
    await check(alice!, `/channels/${hidden}/ack/not-an-id`, 404, 'NotFound');
    await check(alice!, `/channels/${hidden}/ack/${m.toLowerCase()}`, 404, 'NotFound');
    await check(alice!, `/channels/${newId()}/ack/${m}`, 404, 'NotFound');
    await check(outsider!, `/servers/${srv.id}/ack`, 404, 'NotFound');
    await check(alice!, `/servers/${newId()}/ack`, 404, 'NotFound');
    await check(alice!, `/servers/x/ack`, 404, 'NotFound');
    const anon = await fetch(`${s.apiUrl}/channels/${hidden}/ack/${m}`, { method: 'PUT' });
    t.equal(anon.status, 401);
    t.equal(await s.store.headPosition(), head, 'no refusal appended anything');
    t.equal((await alice!.api.put(`/channels/${hidden}/ack/${m}`)).status, 204, 'the same ack by a viewer: 204');
  });

  t.test("the channel's last message can be acked after it was deleted", async (t) => {
    const c = (await owner!.api.post(`/servers/${srv.id}/channels`, { name: 'deleting' })).body._id as string;
    const m = await send(owner!, 'soon gone', {}, c);
    t.equal((await owner!.api.del(`/channels/${c}/messages/${m}`)).status, 204);
    t.equal((await alice!.api.put(`/channels/${c}/ack/${m}`)).status, 204, 'the client acks channel.last_message_id');
    t.equal((await unreadOf(alice!, c))?.last_id, m);
  });

  t.test('PUT /servers/:id/ack reads every channel the caller can view', async (t) => {
    const own = await connectReady(s, carol!.token);
    t.teardown(() => own.close());
    const g = await send(owner!, `g <@${carol!.userId}>`);
    await send(owner!, 'h', {}, hidden);
    t.ok((await mentionsOf(carol!, srv.general)).includes(g));
    const from = own.events.length;
    t.equal((await carol!.api.put(`/servers/${srv.id}/ack`)).status, 204);
    const general = await unreadOf(carol!, srv.general);
    t.same(general, { _id: { channel: srv.general, user: carol!.userId }, last_id: g }, 'general read to its last message, mentions cleared');
    t.equal((await unreadOf(carol!, hidden))?.last_id, undefined, 'a channel carol cannot view is not acked');
    const acks = await own.waitFor((e) => e.type === 'ChannelAck' && e.id === srv.general, undefined, from);
    t.same(acks, { type: 'ChannelAck', id: srv.general, user: carol!.userId, message_id: g });
    const head = await s.store.headPosition();
    t.equal((await carol!.api.put(`/servers/${srv.id}/ack`)).status, 204, 'again: 204');
    t.equal(await s.store.headPosition(), head, '... appending nothing (everything is read already)');
  });

  t.test('Ready carries channel_unreads and user_settings when asked (Stoat ready fields)', async (t) => {
    const m = await send(owner!, `for ready <@${bob!.userId}>`);
    t.equal((await bob!.api.post('/sync/settings/set?timestamp=1000', { theme: '"dark"' })).status, 204);
    const expected = (await bob!.api.get('/sync/unreads')).body as Unread[];
    t.ok(expected.some((u) => u.mentions?.includes(m)));
    const asked = await connectReady(s, bob!.token, { query: 'ready=users&ready=channel_unreads&ready=user_settings%5Btheme%5D&ready=user_settings[missing]' });
    const ready = asked.frames.find((f) => f.type === 'Ready')!;
    asked.close();
    t.same(ready.channel_unreads, expected, 'channel_unreads equals GET /sync/unreads');
    t.same(ready.user_settings, { theme: [1000, '"dark"'] }, 'user_settings for the stored keys asked for');
    t.ok(Array.isArray(ready.users), 'users asked for');
    t.notOk('servers' in ready, 'with ready=… only the fields named (bonfire)');
    const plain = await connectReady(s, bob!.token);
    const def = plain.frames.find((f) => f.type === 'Ready')!;
    plain.close();
    t.notOk('channel_unreads' in def || 'user_settings' in def, 'not sent unless asked');
    t.ok(Array.isArray(def.servers));
  });

  t.test('mentions and acks racing across partitions keep mentions = {m > highest ack}', async (t) => {
    const c = (await owner!.api.post(`/servers/${srv.id}/channels`, { name: 'race' })).body._id as string;
    const seeds: string[] = [];
    for (let i = 0; i < 6; i++) seeds.push(await send(owner!, `seed ${i} <@${alice!.userId}>`, {}, c));
    // Sends that mention alice and acks of alice's run at once (mentions: server partition; acks: hers).
    const results = await Promise.all([
      ...Array.from({ length: 12 }, (_, i) => send(owner!, `race ${i} <@${alice!.userId}>`, {}, c)),
      ...seeds.map((m) => alice!.api.put(`/channels/${c}/ack/${m}`).then((r) => (r.status === 204 ? m : Promise.reject(new Error(r.text))))),
    ]);
    const sent = [...seeds, ...results.slice(0, 12)];
    const u = await unreadOf(alice!, c);
    const highest = [...seeds].sort().at(-1)!;
    t.same(u?.mentions ?? [], sent.filter((m) => m > highest).sort(), 'exactly the mentions above the highest ack');
  });

  t.test('odd Ready-field queries are ignored, never fatal', async (t) => {
    for (const q of ['ready=user_settings%5B', 'ready=user_settings[a%20b]', `ready=user_settings[${'k'.repeat(300)}]`, 'ready=channel_unreads&ready=channel_unreads', 'ready=', 'ready=%00']) {
      const c = await connectReady(s, bob!.token, { query: q });
      const ready = c.frames.find((f) => f.type === 'Ready')!;
      c.close();
      t.ok(ready, `${q.slice(0, 40)}: Ready`);
      if (q.startsWith('ready=channel_unreads')) t.ok(Array.isArray(ready.channel_unreads), 'channel_unreads once');
      else t.notOk('user_settings' in ready, 'no settings for a malformed key');
    }
  });

  t.test('rebuild equals live', async (t) => {
    const live = await dumpCurrent(redis, s.prefix);
    t.ok(Object.keys(live).some((k) => k.includes(':mentions:')), 'mention keys exist');
    t.ok(Object.keys(live).some((k) => k.startsWith('settings:')), 'settings keys exist');
    t.same(live, await dumpRebuild(t, redis, { store: s.store, redisUrl: TEST_REDIS_URL, prefix: s.prefix, partitions: PARTITIONS }));
  });
});
