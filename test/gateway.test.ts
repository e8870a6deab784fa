// The events gateway with real `ws` clients: handshake and Ready, authentication, Ping/Pong, delivery to
// members only, visibility rewriting on permission changes, order under bursts, typing, logout, server
// subscriptions, UserUpdate reach, the facts cache, and shutdown. Multi-process delivery and dropping slow
// or dead sockets are in gateway.scale.test.ts.
import t from 'tap';
import type tap from 'tap';
import sharp from 'sharp';
import { Permission as P, DEFAULT_PERMISSION_SERVER } from '../src/permissions/bits.ts';
import { client, signup, type TestUser } from './helpers/http.ts';
import { createServer, join, roleWith } from './helpers/servers.ts';
import { createLogger } from '../src/log.ts';
import { controlKeys } from '../src/readmodel/keys.ts';
import { startService } from '../src/service.ts';
import { deletePrefix, startTestService, testConfig, waitServing, type TestService } from './helpers/service.ts';
import { connectReady, connectWs, type Frame, type WsClient } from './helpers/ws.ts';

const V = P.ViewChannel;
const num = (b: bigint) => Number(b);

let barrierCount = 0;
/**
 * Waits until everything emitted before now has been dispatched to `c`: the user's own profile edit is a
 * later event of the same (single) partition stream, so once it arrives every earlier event was judged.
 */
async function barrier(user: TestUser, c: WsClient): Promise<void> {
  const text = `barrier ${++barrierCount}`;
  const r = await user.api.patch('/users/@me', { status: { text } });
  if (r.status !== 200) throw new Error(`barrier ${r.status} ${r.text}`);
  await c.waitFor((e) => e.type === 'UserUpdate' && e.id === user.userId && e.data?.status?.text === text);
}

/** Runs `action` and waits for the first event after it matching `pred`. */
async function after(c: WsClient, action: () => Promise<unknown>, pred: (e: Frame) => boolean): Promise<Frame> {
  const mark = c.events.length;
  await action();
  return c.waitFor(pred, undefined, mark);
}

/** The frames received since index `mark` (Bulk unpacked). */
const since = (c: WsClient, mark: number) => c.events.slice(mark);

/** No client ever receives an internal event or a type it does not know. */
function assertNoInternal(t: Pick<typeof tap, 'notOk'>, ...clients: WsClient[]) {
  for (const c of clients) t.notOk(c.events.some((e) => e.type === 'DeleteSession'), 'no internal event reached a client');
}

t.test('gateway', async (t) => {
  const s: TestService = await startTestService(t, { RATE_LIMITS: 'off' });
  const owner = await signup(s);
  const member = await signup(s);
  const outsider = await signup(s);
  const srv = await createServer(owner, 'Gateway');
  await join(owner, srv.general, member);
  // A channel only the owner can see (the owner gets GrantAllSafe whatever the overrides say).
  const hidden = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'hidden' })).body._id as string;
  await owner.api.put(`/channels/${hidden}/permissions/default`, { permissions: { allow: 0, deny: num(V) } });
  const other = await createServer(owner, 'Not yours');

  t.test('handshake: Authenticated, then Ready with only what the user may see', async (t) => {
    const c = connectWs(s, { token: member.token });
    const ready = await c.ready();
    t.same(c.frames.map((f) => f.type), ['Authenticated', 'Ready'], 'nothing before Ready but Authenticated');
    t.same(Object.keys(ready).sort(), ['channels', 'emojis', 'members', 'policy_changes', 'servers', 'type', 'users', 'voice_states']);
    t.equal(ready.users.length, 1);
    t.match(ready.users[0], { _id: member.userId, username: member.username, relationship: 'User', online: true });
    t.same(ready.servers.map((x: any) => x._id), [srv.id], 'only servers it is a member of');
    t.same(ready.servers[0].channels.sort(), [srv.general, hidden].sort(), 'the server lists every channel id, as Revolt does');
    t.same(ready.channels.map((x: any) => x._id), [srv.general], 'only channels it may view');
    t.match(ready.channels[0], { channel_type: 'TextChannel', _id: srv.general, server: srv.id, name: 'General' });
    t.same(ready.members.map((m: any) => m._id), [{ server: srv.id, user: member.userId }], 'its own member objects');
    t.same([ready.emojis, ready.voice_states, ready.policy_changes], [[], [], []]);
    c.close();

    const o = await connectReady(s, owner.token);
    const oready = o.frames[1]!;
    t.same(oready.servers.map((x: any) => x._id).sort(), [srv.id, other.id].sort());
    t.same(oready.channels.map((x: any) => x._id).sort(), [srv.general, hidden, other.general].sort(), 'the owner sees every channel');
    t.equal(oready.members.length, 2);
    o.close();
  });

  t.test('?ready= selects the Ready fields (bonfire)', async (t) => {
    const c = connectWs(s, { token: member.token, query: 'ready=users&ready=channels&ready=nonsense' });
    const ready = await c.ready();
    t.same(Object.keys(ready).sort(), ['channels', 'type', 'users']);
    c.close();
  });

  t.test('a token percent-encoded in the URL is decoded', async (t) => {
    const raw = `${s.apiUrl.replace(/^http/, 'ws')}/ws?version=1&format=json&token=${member.token.split('').map((ch) => '%' + ch.charCodeAt(0).toString(16).padStart(2, '0')).join('')}`;
    const { WebSocket } = await import('ws');
    const ws = new WebSocket(raw);
    const types: string[] = [];
    await new Promise<void>((resolve, reject) => {
      ws.on('message', (d) => {
        types.push(JSON.parse(d.toString()).type);
        if (types.includes('Ready')) resolve();
      });
      ws.on('close', () => reject(new Error(`closed after ${types.join(',')}`)));
    });
    t.same(types.slice(0, types.indexOf('Ready') + 1), ['Authenticated', 'Ready']);
    ws.close();
  });

  t.test('a bad token gets Error InvalidSession and the socket is closed', async (t) => {
    for (const token of ['not-a-session', 'x'.repeat(300)]) {
      const c = connectWs(s, { token });
      const closed = await c.closed;
      t.same(c.frames, [{ type: 'Error', data: { type: 'InvalidSession' } }], 'one Error frame, nothing else');
      t.equal(closed.code, 1000);
    }
  });

  t.test('an account that has not onboarded gets OnboardingNotFinished', async (t) => {
    const anon = client(s);
    const email = `noonboard.${Date.now()}@example.test`;
    await anon.post('/auth/account/create', { email, password: 'correct horse battery' });
    const login = await anon.post('/auth/session/login', { email, password: 'correct horse battery', friendly_name: 'x' });
    const c = connectWs(s, { token: login.body.token });
    await c.closed;
    t.same(c.frames, [{ type: 'Error', data: { type: 'OnboardingNotFinished' } }]);
  });

  t.test('without ?token= the client authenticates with an Authenticate frame', async (t) => {
    const c = connectWs(s);
    await c.opened;
    c.send({ type: 'Ping', data: 1 }); // ignored before authentication (bonfire)
    c.send({ type: 'Authenticate', token: member.token });
    const ready = await c.ready();
    t.same(c.frames.map((f) => f.type), ['Authenticated', 'Ready']);
    t.equal(ready.users[0]._id, member.userId);
    c.send({ type: 'Authenticate', token: member.token });
    t.same(await c.waitFor((e) => e.type === 'Error'), { type: 'Error', data: { type: 'AlreadyAuthenticated' } });
    c.close();

    const bad = connectWs(s);
    await bad.opened;
    bad.send({ type: 'Authenticate', token: 'wrong' });
    await bad.closed;
    t.same(bad.frames, [{ type: 'Error', data: { type: 'InvalidSession' } }]);
  });

  t.test('Ping → Pong with the same data; malformed frames get MalformedData', async (t) => {
    const c = await connectReady(s, member.token);
    c.send({ type: 'Ping', data: 1234567890123 });
    t.same(await c.waitFor((e) => e.type === 'Pong'), { type: 'Pong', data: 1234567890123 });
    let mark = c.events.length;
    c.send({ type: 'Ping', data: [1, 2, 255] });
    t.same(await c.waitFor((e) => e.type === 'Pong', undefined, mark), { type: 'Pong', data: [1, 2, 255] }, 'byte-array data');
    mark = c.events.length;
    c.send({ type: 'Ping', data: 7, responded: true });
    c.send({ type: 'Ping', data: 8 });
    t.same(await c.waitFor((e) => e.type === 'Pong', undefined, mark), { type: 'Pong', data: 8 }, 'a responded Ping gets no Pong');
    mark = c.events.length;
    c.ws.send('{not json');
    t.same(await c.waitFor((e) => e.type === 'Error', undefined, mark), { type: 'Error', data: { type: 'MalformedData', msg: 'frame is not JSON' } });
    mark = c.events.length;
    c.send({ type: 'Ping', data: 'a string' });
    t.match(await c.waitFor((e) => e.type === 'Error', undefined, mark), { data: { type: 'MalformedData' } });
    mark = c.events.length;
    c.send({ type: 'SomethingNew', x: 1 });
    c.send({ type: 'Ping', data: 9 });
    t.same(await c.waitFor(() => true, undefined, mark), { type: 'Pong', data: 9 }, 'unknown types are ignored');
    t.equal(c.ws.readyState, c.ws.OPEN, 'still open');
    c.close();
  });

  t.test('format other than json is refused', async (t) => {
    const { WebSocket } = await import('ws');
    const ws = new WebSocket(`${s.apiUrl.replace(/^http/, 'ws')}/ws?version=1&format=msgpack&token=${member.token}`);
    const frames: any[] = [];
    ws.on('message', (d) => frames.push(JSON.parse(d.toString())));
    await new Promise((r) => ws.on('close', r));
    t.match(frames, [{ type: 'Error', data: { type: 'MalformedData' } }]);
  });

  t.test('other paths are not WebSocket endpoints', async (t) => {
    const { WebSocket } = await import('ws');
    const ws = new WebSocket(`${s.apiUrl.replace(/^http/, 'ws')}/elsewhere?token=${member.token}`);
    const status = await new Promise<number | undefined>((resolve) => {
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode));
      ws.on('error', () => resolve(undefined));
    });
    t.equal(status, 404);
  });

  t.test('server events reach the members, never a non-member', async (t) => {
    const m = await connectReady(s, member.token);
    const x = await connectReady(s, outsider.token);
    const e = await after(m, () => owner.api.patch(`/servers/${srv.id}`, { description: 'about us' }), (e) => e.type === 'ServerUpdate');
    t.same(e, { type: 'ServerUpdate', id: srv.id, data: { description: 'about us' }, clear: [] });
    await barrier(outsider, x);
    t.notOk(x.events.some((e) => JSON.stringify(e).includes(srv.id)), 'the outsider heard nothing of the server');
    // Member events of a server the member is not in do not reach it either.
    const mark = m.events.length;
    await owner.api.patch(`/servers/${other.id}`, { description: 'private' });
    await barrier(member, m);
    t.notOk(since(m, mark).some((e) => e.id === other.id), 'events of another server stay there');
    m.close();
    x.close();
  });

  t.test('a permission change hides a channel (ChannelDelete) and shows it again (ChannelCreate)', async (t) => {
    const m = await connectReady(s, member.token);
    const o = await connectReady(s, owner.token);
    const ch = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'secret' })).body._id as string;
    t.match(await m.waitFor((e) => e.type === 'ChannelCreate' && e._id === ch), { channel_type: 'TextChannel', server: srv.id, name: 'secret' });

    // Channel default override: deny ViewChannel → the member's copy is deleted, the owner's updated.
    const del = await after(m, () => owner.api.put(`/channels/${ch}/permissions/default`, { permissions: { allow: 0, deny: num(V) } }), (e) => e.id === ch);
    t.same(del, { type: 'ChannelDelete', id: ch });
    t.match(await o.waitFor((e) => e.type === 'ChannelUpdate' && e.id === ch), { data: { default_permissions: { a: 0, d: num(V) } } });

    // Nothing of the hidden channel reaches the member: an edit of it is not delivered.
    let mark = m.events.length;
    await owner.api.patch(`/channels/${ch}`, { name: 'secret-renamed', description: 'shh' });
    await o.waitFor((e) => e.type === 'ChannelUpdate' && e.id === ch && e.data?.name === 'secret-renamed');
    await barrier(member, m);
    t.notOk(since(m, mark).some((e) => e.id === ch || e._id === ch), 'no event of a hidden channel');

    // A channel role override that allows ViewChannel for the member's role → ChannelCreate with the whole channel.
    const role = await roleWith(owner, srv.id, 0n, [member], 'seer');
    const create = await after(m, () => owner.api.put(`/channels/${ch}/permissions/${role}`, { permissions: { allow: num(V), deny: 0 } }), (e) => e._id === ch || e.id === ch);
    t.match(create, { type: 'ChannelCreate', _id: ch, name: 'secret-renamed', description: 'shh', role_permissions: { [role]: { a: num(V), d: 0 } } });

    // Server default permissions without ViewChannel: General disappears for the member, in one Bulk ending with the ServerUpdate.
    mark = m.frames.length;
    await owner.api.put(`/servers/${srv.id}/permissions/default`, { permissions: num(DEFAULT_PERMISSION_SERVER & ~V) });
    await m.waitFor((e) => e.type === 'ServerUpdate' && 'default_permissions' in (e.data ?? {}));
    const bulk = m.frames.slice(mark).find((f) => f.type === 'Bulk');
    t.same(bulk, {
      type: 'Bulk',
      v: [
        { type: 'ChannelDelete', id: srv.general },
        { type: 'ServerUpdate', id: srv.id, data: { default_permissions: num(DEFAULT_PERMISSION_SERVER & ~V) }, clear: [] },
      ],
    });

    // The role's server permissions grant ViewChannel → General comes back, and so does the channel hidden by
    // its default override: server-role overrides apply after the channel default (spec steps 2 and 3).
    const roleUp = await after(m, () => owner.api.put(`/servers/${srv.id}/permissions/${role}`, { permissions: { allow: num(V), deny: 0 } }), (e) => e.type === 'ServerRoleUpdate');
    t.match(roleUp, { id: srv.id, role_id: role });
    let frame = m.frames.findLast((f) => f.type === 'Bulk')!;
    t.same(frame.v.map((e: Frame) => e.type), ['ChannelCreate', 'ChannelCreate', 'ServerRoleUpdate']);
    t.same(frame.v.slice(0, 2).map((e: Frame) => e._id).sort(), [srv.general, hidden].sort());

    // The member loses the role: the three channels go.
    mark = m.events.length;
    await owner.api.patch(`/servers/${srv.id}/members/${member.userId}`, { remove: ['Roles'] });
    await m.waitFor((e) => e.type === 'ServerMemberUpdate', undefined, mark);
    const lost = since(m, mark);
    t.same(lost.map((e) => e.type), ['ChannelDelete', 'ChannelDelete', 'ChannelDelete', 'ServerMemberUpdate']);
    t.same(lost.slice(0, 3).map((e) => e.id).sort(), [srv.general, ch, hidden].sort());
    t.same(lost[3]!.id, { server: srv.id, user: member.userId });

    // Gets it back, then the role is deleted: they go again.
    mark = m.events.length;
    await owner.api.patch(`/servers/${srv.id}/members/${member.userId}`, { roles: [role] });
    await m.waitFor((e) => e.type === 'ServerMemberUpdate', undefined, mark);
    t.same(since(m, mark).filter((e) => e.type === 'ChannelCreate').map((e) => e._id).sort(), [srv.general, ch, hidden].sort());
    mark = m.events.length;
    await owner.api.del(`/servers/${srv.id}/roles/${role}`, {});
    await m.waitFor((e) => e.type === 'ServerRoleDelete', undefined, mark);
    t.same(since(m, mark).map((e) => e.type), ['ChannelDelete', 'ChannelDelete', 'ChannelDelete', 'ServerRoleDelete']);

    // The server default gets ViewChannel back: General only (the secret channel denies it by default).
    mark = m.events.length;
    await owner.api.put(`/servers/${srv.id}/permissions/default`, { permissions: num(DEFAULT_PERMISSION_SERVER) });
    await m.waitFor((e) => e.type === 'ServerUpdate', undefined, mark);
    t.same(since(m, mark).map((e) => [e.type, e._id ?? e.id]), [['ChannelCreate', srv.general], ['ServerUpdate', srv.id]]);
    frame = m.frames.findLast((f) => f.type === 'Bulk')!;
    t.equal(frame.v.length, 2, 'as one Bulk');

    // The owner never had anything hidden: its sockets got plain events, never a ChannelDelete.
    t.notOk(o.events.some((e) => e.type === 'ChannelDelete'));
    assertNoInternal(t, m, o);
    m.close();
    o.close();
  });

  t.test('a role rank change can hide a channel (the lower rank number wins)', async (t) => {
    const ch = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'ranked' })).body._id as string;
    const allow = await roleWith(owner, srv.id, 0n, [member], 'allow');
    const deny = await roleWith(owner, srv.id, 0n, [member], 'deny');
    await owner.api.put(`/channels/${ch}/permissions/${allow}`, { permissions: { allow: num(V), deny: 0 } });
    await owner.api.put(`/channels/${ch}/permissions/${deny}`, { permissions: { allow: 0, deny: num(V) } });
    const roles = (await owner.api.get(`/servers/${srv.id}`)).body.roles;
    const top = roles[allow].rank < roles[deny].rank ? allow : deny;
    const m = await connectReady(s, member.token);
    const sees = (m.frames[1]!.channels as any[]).some((c) => c._id === ch);
    t.equal(sees, top === allow, 'Ready follows the ranks');
    const ids = Object.keys(roles).sort((a, b) => roles[a].rank - roles[b].rank);
    const swapped = [...ids];
    const ia = swapped.indexOf(allow);
    const id = swapped.indexOf(deny);
    [swapped[ia], swapped[id]] = [swapped[id]!, swapped[ia]!];
    const mark = m.events.length;
    const r = await owner.api.patch(`/servers/${srv.id}/roles/ranks`, { ranks: swapped });
    t.equal(r.status, 200, r.text);
    await m.waitFor((e) => e.type === 'ServerRoleRanksUpdate', undefined, mark);
    t.same(since(m, mark).map((e) => [e.type, e._id ?? e.id]), [[sees ? 'ChannelDelete' : 'ChannelCreate', ch], ['ServerRoleRanksUpdate', srv.id]]);
    await owner.api.patch(`/servers/${srv.id}/members/${member.userId}`, { remove: ['Roles'] });
    await owner.api.del(`/channels/${ch}`, {});
    m.close();
  });

  t.test('a channel deletion reaches only sockets that knew the channel', async (t) => {
    const m = await connectReady(s, member.token);
    const o = await connectReady(s, owner.token);
    const ch = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'doomed' })).body._id as string;
    await owner.api.put(`/channels/${ch}/permissions/default`, { permissions: { allow: 0, deny: num(V) } });
    await m.waitFor((e) => e.type === 'ChannelDelete' && e.id === ch);
    const mark = m.events.length;
    await owner.api.del(`/channels/${ch}`, {});
    await o.waitFor((e) => e.type === 'ChannelDelete' && e.id === ch);
    await barrier(member, m);
    t.notOk(since(m, mark).some((e) => e.type === 'ChannelDelete'), 'the member was already told');
    m.close();
    o.close();
  });

  t.test('events of one channel arrive in the order of the log, under a burst', async (t) => {
    const m = await connectReady(s, member.token);
    const a = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'burst-a' })).body._id as string;
    const b = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'burst-b' })).body._id as string;
    const mark = m.events.length;
    const n = 25;
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        Promise.all([owner.api.patch(`/channels/${a}`, { description: `a${i}` }), owner.api.patch(`/channels/${b}`, { description: `b${i}` })]),
      ),
    );
    for (const ch of [a, b]) {
      await m.waitFor((e) => e.type === 'ChannelUpdate' && e.id === ch && since(m, mark).filter((x) => x.id === ch).length >= n, 30_000, mark);
      const got = since(m, mark).filter((e) => e.type === 'ChannelUpdate' && e.id === ch).map((e) => e.data.description);
      const logged: string[] = [];
      for (const e of await s.store.readStream(`channel-${ch}`)) logged.push((e.data as any).data.description);
      t.same(got, logged, `channel ${ch === a ? 'a' : 'b'}: delivered in log order`);
      t.equal(new Set(got).size, n, 'each edit once');
    }
    m.close();
  });

  t.test('messages: only sockets that can see the channel receive them, in order under a burst', async (t) => {
    const m = await connectReady(s, member.token);
    const o = await connectReady(s, owner.token);
    const x = await connectReady(s, outsider.token);
    const a = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'msg-a' })).body._id as string;
    const b = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'msg-b' })).body._id as string;
    await m.waitFor((e) => e.type === 'ChannelCreate' && e._id === b);

    // A burst into two channels at once: each socket gets each channel's messages in history order.
    const n = 20;
    const mark = m.events.length;
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        Promise.all([owner.api.post(`/channels/${a}/messages`, { content: `a${i}` }), member.api.post(`/channels/${b}/messages`, { content: `b${i}` })]),
      ),
    );
    for (const [ch, c] of [[a, m], [b, m], [a, o], [b, o]] as const) {
      await c.waitFor(() => c.events.filter((e) => e.type === 'Message' && e.channel === ch).length >= n, 30_000);
      const got = c.events.filter((e) => e.type === 'Message' && e.channel === ch).map((e) => e._id);
      const history = (await owner.api.get(`/channels/${ch}/messages?limit=100&sort=Oldest`)).body.map((msg: { _id: string }) => msg._id);
      t.same(got, history, 'delivered in the order of the channel\'s history');
    }
    t.ok(since(m, mark).filter((e) => e.type === 'Message').every((e) => typeof e.content === 'string' && e.author), 'Message events carry the message');
    await barrier(outsider, x);
    t.notOk(x.events.some((e) => e.type === 'Message'), 'a non-member gets no message');

    // Hidden from the member: no Message, MessageUpdate, MessageReact or MessageDelete of that channel.
    const visible = (await owner.api.post(`/channels/${a}/messages`, { content: 'before hiding' })).body._id as string;
    await m.waitFor((e) => e.type === 'Message' && e._id === visible);
    await owner.api.put(`/channels/${a}/permissions/default`, { permissions: { allow: 0, deny: num(V) } });
    await m.waitFor((e) => e.type === 'ChannelDelete' && e.id === a);
    const hmark = m.events.length;
    const secret = (await owner.api.post(`/channels/${a}/messages`, { content: 'secret' })).body._id as string;
    await owner.api.patch(`/channels/${a}/messages/${secret}`, { content: 'secret, edited' });
    await owner.api.put(`/channels/${a}/messages/${secret}/reactions/%F0%9F%91%8D`, {});
    await owner.api.post(`/channels/${a}/messages/${secret}/pin`, {});
    await owner.api.del(`/channels/${a}/messages/${visible}`, {});
    await o.waitFor((e) => e.type === 'MessageDelete' && e.id === visible);
    t.ok(o.events.some((e) => e.type === 'MessageReact' && e.id === secret && e.emoji_id === '👍'), 'the owner sees it all');
    await barrier(member, m);
    t.same(since(m, hmark).filter((e) => e.type !== 'UserUpdate'), [], 'the member hears nothing of the hidden channel');
    await owner.api.del(`/channels/${a}`, {});
    await owner.api.del(`/channels/${b}`, {});
    m.close();
    o.close();
    x.close();
  });

  t.test('Ready and ServerCreate carry the server\'s custom emoji', async (t) => {
    const png = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#00ff00' } }).png().toBuffer();
    const form = new FormData();
    form.append('file', new File([png], 'e.png', { type: 'image/png' }));
    const up = await fetch(`${s.config.mediaPublicUrl}/emojis`, { method: 'POST', body: form, headers: { 'X-Session-Token': owner.token } });
    const { id } = (await up.json()) as { id: string };
    const m = await connectReady(s, member.token);
    const created = await owner.api.put(`/custom/emoji/${id}`, { name: 'gw', parent: { type: 'Server', id: srv.id } });
    t.equal(created.status, 200, created.text);
    t.match(await m.waitFor((e) => e.type === 'EmojiCreate'), { _id: id, name: 'gw', parent: { type: 'Server', id: srv.id } });
    const again = await connectReady(s, member.token);
    t.match(again.frames[1]!.emojis, [{ _id: id, name: 'gw' }], 'Ready lists the emoji of the user\'s servers');
    const x = await connectReady(s, outsider.token);
    t.same(x.frames[1]!.emojis, [], 'not of other servers');
    await join(owner, srv.general, outsider);
    t.match(await x.waitFor((e) => e.type === 'ServerCreate'), { emojis: [{ _id: id }] }, 'ServerCreate carries them');
    await owner.api.del(`/servers/${srv.id}/members/${outsider.userId}`, {});
    await x.waitFor((e) => e.type === 'ServerMemberLeave');
    await owner.api.del(`/custom/emoji/${id}`, {});
    t.same(await m.waitFor((e) => e.type === 'EmojiDelete'), { type: 'EmojiDelete', id });
    for (const c of [m, again, x]) c.close();
  });

  t.test('typing reaches the viewers of the channel only', async (t) => {
    const o = await connectReady(s, owner.token);
    const m = await connectReady(s, member.token);
    const x = await connectReady(s, outsider.token);
    o.send({ type: 'BeginTyping', channel: srv.general });
    t.same(await m.waitFor((e) => e.type === 'ChannelStartTyping'), { type: 'ChannelStartTyping', id: srv.general, user: owner.userId });
    // In the hidden channel: the owner's typing is relayed to viewers (the owner's own socket), not the member.
    let mark = m.events.length;
    const omark = o.events.length;
    o.send({ type: 'BeginTyping', channel: hidden });
    o.send({ type: 'EndTyping', channel: srv.general });
    t.same(await m.waitFor((e) => e.type === 'ChannelStopTyping', undefined, mark), { type: 'ChannelStopTyping', id: srv.general, user: owner.userId });
    t.notOk(since(m, mark).some((e) => e.id === hidden), 'not relayed to a socket that cannot see the channel');
    // Waited for, not read once: the two channels' typing are separate pub/sub messages, which nothing orders
    // (on a cluster the hidden channel's facts are read from other shards than the general channel's).
    t.same(await o.waitFor((e) => e.type === 'ChannelStartTyping' && e.id === hidden, undefined, omark), { type: 'ChannelStartTyping', id: hidden, user: owner.userId }, 'relayed to the viewers');
    // The member typing in a channel it cannot see is not relayed at all.
    mark = o.events.length;
    m.send({ type: 'BeginTyping', channel: hidden });
    m.send({ type: 'BeginTyping', channel: srv.general });
    await o.waitFor((e) => e.type === 'ChannelStartTyping' && e.user === member.userId, undefined, mark);
    t.same(since(o, mark).filter((e) => e.user === member.userId).map((e) => e.id), [srv.general]);
    t.notOk(x.events.some((e) => e.type === 'ChannelStartTyping' || e.type === 'ChannelStopTyping'), 'the outsider hears no typing');
    o.close();
    m.close();
    x.close();
  });

  t.test('joining subscribes (ServerCreate); leaving, a kick and a deletion unsubscribe', async (t) => {
    const newcomer = await signup(s);
    const c = await connectReady(s, newcomer.token);
    const srv2 = await createServer(owner, 'Second');
    await join(owner, srv2.general, newcomer);
    const created = await c.waitFor((e) => e.type === 'ServerCreate');
    t.match(created, { id: srv2.id, server: { _id: srv2.id }, channels: [{ _id: srv2.general }] });
    const upd = await after(c, () => owner.api.patch(`/servers/${srv2.id}`, { name: 'Second!' }), (e) => e.type === 'ServerUpdate');
    t.same(upd.data, { name: 'Second!' }, 'events of the joined server arrive');

    // Kicked: it hears its own ServerMemberLeave, then nothing more of the server.
    const leave = await after(c, () => owner.api.del(`/servers/${srv2.id}/members/${newcomer.userId}`, {}), (e) => e.type === 'ServerMemberLeave');
    t.same(leave, { type: 'ServerMemberLeave', id: srv2.id, user: newcomer.userId, reason: 'Kick' });
    let mark = c.events.length;
    await owner.api.patch(`/servers/${srv2.id}`, { name: 'after kick' });
    await barrier(newcomer, c);
    t.notOk(since(c, mark).some((e) => e.id === srv2.id), 'unsubscribed');

    // Joins again and leaves by itself.
    await join(owner, srv2.general, newcomer);
    await c.waitFor((e) => e.type === 'ServerCreate', undefined, mark);
    mark = c.events.length;
    await newcomer.api.del(`/servers/${srv2.id}`, {});
    t.match(await c.waitFor((e) => e.type === 'ServerMemberLeave', undefined, mark), { reason: 'Leave' });

    // A member of a deleted server hears ServerDelete once and nothing after.
    await join(owner, srv2.general, newcomer);
    await c.waitFor((e) => e.type === 'ServerCreate', undefined, mark);
    mark = c.events.length;
    await owner.api.del(`/servers/${srv2.id}`, {});
    t.same(await c.waitFor((e) => e.type === 'ServerDelete', undefined, mark), { type: 'ServerDelete', id: srv2.id });
    c.close();
  });

  t.test('UserUpdate reaches the user and those sharing a server with it', async (t) => {
    const m = await connectReady(s, member.token);
    const o = await connectReady(s, owner.token);
    const x = await connectReady(s, outsider.token);
    // A server peer's profile change reaches a socket that has the server active (Subscribe, bonfire's member topic;
    // gateway.subscribe.test.ts); the Pong says it was applied.
    o.send({ type: 'Subscribe', server_id: srv.id });
    o.send({ type: 'Ping', data: 0 });
    await o.waitFor((e) => e.type === 'Pong' && e.data === 0);
    await member.api.patch('/users/@me', { display_name: 'Member Name' });
    for (const c of [m, o]) t.match(await c.waitFor((e) => e.type === 'UserUpdate' && e.id === member.userId), { data: { display_name: 'Member Name' } });
    await barrier(outsider, x);
    t.notOk(x.events.some((e) => e.type === 'UserUpdate' && e.id === member.userId), 'a stranger does not hear it');
    m.close();
    o.close();
    x.close();
  });

  t.test('logout and session revocation close the session\'s sockets, and only those', async (t) => {
    const u = await signup(s);
    const second = await client(s).post('/auth/session/login', { email: u.email, password: u.password, friendly_name: 'second' });
    const a = await connectReady(s, u.token);
    const b = await connectReady(s, second.body.token);
    const r = await u.api.post('/auth/session/logout');
    t.equal(r.status, 204);
    t.same(await a.waitFor((e) => e.type === 'Logout'), { type: 'Logout' });
    t.equal((await a.closed).code, 1000);
    await barrier({ ...u, api: client(s, second.body.token) }, b);
    t.equal(b.ws.readyState, b.ws.OPEN, 'the other session stays connected');
    t.notOk(b.events.some((e) => e.type === 'Logout'));
    // Revoked from elsewhere (DELETE /auth/session/:id).
    const third = await client(s).post('/auth/session/login', { email: u.email, password: u.password, friendly_name: 'third' });
    const rv = await client(s, third.body.token).del(`/auth/session/${second.body._id}`, {});
    t.equal(rv.status, 204);
    await b.waitFor((e) => e.type === 'Logout');
    await b.closed;
    // Reconnecting with the revoked token fails.
    const again = connectWs(s, { token: second.body.token });
    await again.closed;
    t.same(again.frames, [{ type: 'Error', data: { type: 'InvalidSession' } }]);
    assertNoInternal(t, a, b);
  });

  t.test('the facts cache: a burst costs no Redis read per socket per event', async (t) => {
    const sockets = await Promise.all([member, member, member, owner, owner].map((u) => connectReady(s, u.token)));
    const ch = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'cache' })).body._id as string;
    await Promise.all(sockets.map((c) => c.waitFor((e) => e.type === 'ChannelCreate' && e._id === ch)));
    await barrier(member, sockets[0]!);
    const before = s.gateway!.stats.factLoads;
    const n = 20;
    for (let i = 0; i < n; i++) await owner.api.patch(`/servers/${srv.id}`, { description: `d${i}` });
    await Promise.all(sockets.map((c) => c.waitFor((e) => e.type === 'ServerUpdate' && e.data?.description === `d${n - 1}`)));
    const loads = s.gateway!.stats.factLoads - before;
    // One reload of the server per ServerUpdate for the whole process, whatever the number of sockets.
    t.ok(loads <= n, `${loads} reads for ${n} events × ${sockets.length} sockets`);
    const mark = s.gateway!.stats.factLoads;
    // Channel edits that change no permission need no read at all.
    for (let i = 0; i < n; i++) await owner.api.patch(`/channels/${ch}`, { description: `c${i}` });
    await Promise.all(sockets.map((c) => c.waitFor((e) => e.type === 'ChannelUpdate' && e.data?.description === `c${n - 1}`)));
    t.ok(s.gateway!.stats.factLoads - mark <= n, 'at most one read per event for the process');
    for (const c of sockets) c.close();
  });

  t.test('a payload of a type no client knows never reaches a client', async (t) => {
    const m = await connectReady(s, member.token);
    const mark = m.events.length;
    const key = controlKeys(s.prefix).clientEvents(s.config.projectorPartitions, 0);
    // What a projection bug would publish: an unknown type, and the internal type aimed at another session.
    for (const payload of [{ type: 'SessionRevokedOops', id: member.userId }, { type: 'DeleteSession', user_id: member.userId, session_id: 'another' }]) {
      await s.redis.xadd(key, '*', 'e', JSON.stringify({ route: { kind: 'user', userId: member.userId }, payload }));
    }
    await barrier(member, m);
    t.same(since(m, mark).map((e) => e.type), ['UserUpdate'], 'nothing but the barrier arrived');
    t.equal(m.ws.readyState, m.ws.OPEN, 'and the socket of the other session stays open');
    m.close();
  });

  t.test('while the read models cannot serve, a connection gets InternalError, not InvalidSession', async (t) => {
    const readyKey = s.readModels.partition(0).caughtUp;
    await s.redis.del(readyKey);
    t.teardown(() => s.redis.set(readyKey, '1'));
    // `serving()` caches its answer for a quarter of a second.
    await new Promise((r) => setTimeout(r, 300));
    const c = connectWs(s, { token: member.token });
    await c.closed;
    t.same(c.frames, [{ type: 'Error', data: { type: 'InternalError', at: 'Ready' } }]);
    await s.redis.set(readyKey, '1');
    await new Promise((r) => setTimeout(r, 300));
    const again = await connectReady(s, member.token);
    t.equal(again.frames[1]!.users[0]._id, member.userId, 'served again once caught up');
    again.close();
  });

  t.test('GET / advertises the gateway', async (t) => {
    const root = await client(s).get('/');
    t.equal(root.body.ws, s.apiUrl.replace(/^http/, 'ws') + '/ws');
  });
});

t.test('shutdown closes the sockets with 1001', async (t) => {
  const config = testConfig(t, { RATE_LIMITS: 'off' });
  const s = await startService(config, { log: createLogger('silent') });
  t.teardown(() => deletePrefix(config.redisUrl, config.redisPrefix));
  await waitServing(s);
  const u = await signup(s);
  const c = await connectReady(s, u.token);
  const started = Date.now();
  await s.stop();
  const closed = await c.closed;
  t.equal(closed.code, 1001);
  t.ok(Date.now() - started < 8000, 'without waiting for the drain timeout');
});
