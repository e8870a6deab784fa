// The gateway's `Subscribe {server_id}` (issue 38), as Stoat's bonfire does it (crates/bonfire: websocket.rs
// and the `active_servers` LruTimeCache of events/state.rs, 900 s and capacity 5): a server's typing and the
// presence of users who only share that server reach a socket only while the server is active for it. Private
// channels' typing, the user's own presence and that of friends and DM/group peers are not gated; a bot's
// socket has every server active. Over real WebSockets, with an injected clock for the TTL.
import t from 'tap';
import { signup, type TestUser } from './helpers/http.ts';
import { createServer, join, type TestServer } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';
import { until } from './helpers/wait.ts';
import { connectReady, type Frame, type WsClient } from './helpers/ws.ts';
import { ActiveServers, SUBSCRIBE_MAX, SUBSCRIBE_TTL_MS } from '../src/gateway/activeServers.ts';

let pings = 0;
/**
 * Everything the gateway wrote to `c` before now has arrived: a Ping is answered in order on the same socket,
 * after every frame the server processed before it (and after the Subscribe frames sent before it).
 */
async function flush(c: WsClient): Promise<void> {
  const data = 1_000_000 + ++pings;
  c.send({ type: 'Ping', data });
  await c.waitFor((e) => e.type === 'Pong' && e.data === data);
}

const typing = (c: WsClient, from = 0) => c.events.slice(from).filter((e) => e.type === 'ChannelStartTyping' || e.type === 'ChannelStopTyping');
const startedIn = (channel: string, user: TestUser) => (e: Frame) => e.type === 'ChannelStartTyping' && e.id === channel && e.user === user.userId;

t.test('the pure cache: bonfire\'s numbers', async (t) => {
  t.equal(SUBSCRIBE_TTL_MS, 900_000, '15 minutes (Duration::from_secs(900))');
  t.equal(SUBSCRIBE_MAX, 5, 'capacity 5');
  const a = new ActiveServers();
  for (let i = 1; i <= 5; i++) a.subscribe(`s${i}`, 1000 + i);
  t.same(a.list(2000), ['s1', 's2', 's3', 's4', 's5'], 'five are kept');
  a.subscribe('s1', 3000);
  a.subscribe('s6', 3001);
  t.same(a.list(3001), ['s3', 's4', 's5', 's1', 's6'], 'a sixth evicts the least recently subscribed (s1 was refreshed, s2 goes)');
  t.ok(a.has('s1', 3000 + SUBSCRIBE_TTL_MS - 1), 'active until the TTL');
  t.notOk(a.has('s1', 3000 + SUBSCRIBE_TTL_MS), 'expired at the TTL');
  t.same(a.list(1005 + SUBSCRIBE_TTL_MS), ['s1', 's6'], 'the older ones expired');
  a.subscribe('s7', 1005 + SUBSCRIBE_TTL_MS);
  t.same(a.list(1005 + SUBSCRIBE_TTL_MS), ['s1', 's6', 's7'], 'expired entries do not count towards the limit');
  a.forget('s6');
  t.notOk(a.has('s6', 1005 + SUBSCRIBE_TTL_MS), 'forgotten on leaving');
});

t.test('Subscribe over real sockets', async (t) => {
  let shift = 0;
  const s = await startTestService(t, { RATE_LIMITS: 'off' }, { now: () => Date.now() + shift });
  const [owner, member, friend, peer, subject] = await Promise.all([signup(s), signup(s), signup(s), signup(s), signup(s)]);
  const srv = await createServer(owner, 'Subscribed');
  await join(owner, srv.general, member, friend, peer, subject);
  // `friend` is the subject's friend and `peer` shares a DM with the subject (and no relationship); both also
  // share the server.
  t.equal((await subject.api.put(`/users/${friend.userId}/friend`)).body.relationship, 'Outgoing');
  t.equal((await friend.api.put(`/users/${subject.userId}/friend`)).body.relationship, 'Friend');
  // A DM needs friendship to open (Stoat's SendMessage user permission); the friendship then ends, the DM stays.
  await peer.api.put(`/users/${subject.userId}/friend`);
  await subject.api.put(`/users/${peer.userId}/friend`);
  const dm = await peer.api.get(`/users/${subject.userId}/dm`);
  t.equal(dm.status, 200, 'the DM opens');
  const dmId = dm.body._id as string;
  t.equal((await peer.api.del(`/users/${subject.userId}/friend`)).body.relationship, 'None', 'no longer friends');

  t.test('a server channel\'s typing reaches only the sockets that subscribed to the server', async (t) => {
    const on = await connectReady(s, owner.token);
    const off = await connectReady(s, owner.token);
    const m = await connectReady(s, member.token);
    on.send({ type: 'Subscribe', server_id: srv.id });
    await flush(on);
    m.send({ type: 'BeginTyping', channel: srv.general });
    t.same(await on.waitFor(startedIn(srv.general, member)), { type: 'ChannelStartTyping', id: srv.general, user: member.userId }, 'subscribed: delivered');
    await flush(off);
    t.same(typing(off), [], 'the same user\'s socket that did not subscribe: nothing');
    // A DM's typing is not gated: the peer's socket never subscribed to anything.
    const p = await connectReady(s, peer.token);
    const sub = await connectReady(s, subject.token);
    sub.send({ type: 'BeginTyping', channel: dmId });
    t.same(await p.waitFor((e) => e.type === 'ChannelStartTyping' && e.id === dmId), { type: 'ChannelStartTyping', id: dmId, user: subject.userId }, 'a DM\'s typing needs no Subscribe');
    // A bad frame is a MalformedData error, not a closed socket.
    off.send({ type: 'Subscribe', server_id: 42 });
    t.match(await off.waitFor((e) => e.type === 'Error'), { data: { type: 'MalformedData' } });
    await flush(off);
    for (const c of [on, off, m, p, sub]) c.close();
  });

  t.test('presence: server peers only while subscribed; own, friends and DM peers always', async (t) => {
    // The subject's socket of the previous test is gone (so connecting again is a change).
    await until('the subject offline', async () => (await owner.api.get(`/users/${subject.userId}`)).body.online === false);
    const on = await connectReady(s, owner.token);
    const off = await connectReady(s, owner.token);
    const f = await connectReady(s, friend.token);
    const p = await connectReady(s, peer.token);
    const m = await connectReady(s, member.token);
    on.send({ type: 'Subscribe', server_id: srv.id });
    await flush(on);
    const sub = await connectReady(s, subject.token);
    const online = (e: Frame) => e.id === subject.userId && e.data.online === true;
    t.same(await on.waitForPresence(online), { type: 'UserUpdate', id: subject.userId, data: { online: true }, clear: [] }, 'subscribed: the member came online');
    await f.waitForPresence(online);
    t.pass('the friend hears it without Subscribe');
    await p.waitForPresence(online);
    t.pass('the DM peer hears it without Subscribe');
    await flush(off);
    await flush(m);
    t.same(off.presence.filter((e) => e.id === subject.userId), [], 'a socket that did not subscribe hears no presence of server peers');
    t.same(m.presence.filter((e) => e.id === subject.userId), [], 'nor does another member that did not subscribe');
    // Going offline reaches the subscribed socket and the friend, not the others.
    sub.close();
    const offline = (e: Frame) => e.id === subject.userId && e.data.online === false;
    await on.waitForPresence(offline);
    await f.waitForPresence(offline);
    await flush(off);
    await flush(m);
    t.same(off.presence.filter((e) => e.id === subject.userId), [], 'offline: not to the unsubscribed socket either');
    // A profile change is not presence: every server peer still gets it.
    await subject.api.patch('/users/@me', { status: { text: 'here' } });
    await off.waitFor((e) => e.type === 'UserUpdate' && e.id === subject.userId && e.data?.status?.text === 'here');
    t.pass('profile changes are not gated');
    for (const c of [on, off, f, p, m]) c.close();
  });

  t.test('a bot\'s socket has every server active', async (t) => {
    const created = await owner.api.post('/bots/create', { name: `sub${process.pid}` });
    t.equal(created.status, 200);
    t.equal((await owner.api.post(`/bots/${created.body._id}/invite`, { server: srv.id })).status, 204);
    const bot = await connectReady(s, created.body.token as string);
    const m = await connectReady(s, member.token);
    m.send({ type: 'BeginTyping', channel: srv.general });
    t.same(await bot.waitFor(startedIn(srv.general, member)), { type: 'ChannelStartTyping', id: srv.general, user: member.userId });
    bot.close();
    m.close();
  });

  t.test('at most 5 servers: a sixth evicts the least recently subscribed', async (t) => {
    const servers: TestServer[] = [srv];
    for (let i = 2; i <= 6; i++) {
      const x = await createServer(owner, `Server ${i}`);
      await join(owner, x.general, member);
      servers.push(x);
    }
    const o = await connectReady(s, owner.token);
    for (const x of servers) o.send({ type: 'Subscribe', server_id: x.id });
    await flush(o);
    const m = await connectReady(s, member.token);
    for (const x of servers) m.send({ type: 'BeginTyping', channel: x.general });
    for (const x of servers.slice(1)) await o.waitFor(startedIn(x.general, member));
    await flush(m);
    await flush(o);
    t.same(typing(o).map((e) => e.id).sort(), servers.slice(1).map((x) => x.general).sort(), 'servers 2–6 delivered, the first (evicted by the sixth) not');
    // Refresh server 2, then subscribe to server 1 again: server 3 is now the least recent and goes.
    o.send({ type: 'Subscribe', server_id: servers[1]!.id });
    o.send({ type: 'Subscribe', server_id: servers[0]!.id });
    await flush(o);
    const mark = o.events.length;
    const m2 = await connectReady(s, member.token);
    for (const x of servers) m2.send({ type: 'BeginTyping', channel: x.general });
    const expected = [0, 1, 3, 4, 5].map((i) => servers[i]!.general);
    for (const id of expected) await o.waitFor(startedIn(id, member), undefined, mark);
    await flush(m2);
    await flush(o);
    t.same(typing(o, mark).map((e) => e.id).sort(), [...expected].sort(), 'server 3 evicted; 1, 2, 4, 5, 6 delivered');
    for (const c of [o, m, m2]) c.close();
  });

  t.test('the TTL: 15 minutes after the last Subscribe', async (t) => {
    const o = await connectReady(s, owner.token);
    o.send({ type: 'Subscribe', server_id: srv.id });
    await flush(o);
    // 890 s later (a 10 s margin for a loaded machine): still active.
    shift += 890_000;
    const m = await connectReady(s, member.token);
    m.send({ type: 'BeginTyping', channel: srv.general });
    await o.waitFor(startedIn(srv.general, member));
    t.pass('active at 890 s');
    // 901 s after the Subscribe: expired. A socket that subscribes now gets the typing, the old one not.
    shift += 11_000;
    const fresh = await connectReady(s, owner.token);
    fresh.send({ type: 'Subscribe', server_id: srv.id });
    await flush(fresh);
    const mark = o.events.length;
    const m2 = await connectReady(s, member.token);
    m2.send({ type: 'BeginTyping', channel: srv.general });
    await fresh.waitFor(startedIn(srv.general, member));
    await flush(o);
    t.same(typing(o, mark), [], 'expired at 901 s: no typing');
    // Subscribing again renews it.
    o.send({ type: 'Subscribe', server_id: srv.id });
    await flush(o);
    m2.send({ type: 'EndTyping', channel: srv.general });
    t.same(await o.waitFor((e) => e.type === 'ChannelStopTyping', undefined, mark), { type: 'ChannelStopTyping', id: srv.general, user: member.userId }, 'renewed by a new Subscribe');
    for (const c of [o, m, fresh, m2]) c.close();
  });
});
