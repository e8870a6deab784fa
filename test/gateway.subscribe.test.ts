// The gateway's `Subscribe {server_id}` (issue 38), as Stoat's bonfire does it (crates/bonfire: websocket.rs
// and the `active_servers` LruTimeCache of events/state.rs, 900 s and capacity 5): the profile changes of users
// who only share a server with the socket's user (bonfire's `<server>u` topic, fed by `p_user`) reach the socket
// only while that server is active for it. As in bonfire, typing (the channel's topic) and presence (the server's
// topic, `broadcast_presence_change`) are not gated, nor are the profile changes of the user, friends, pending
// requests and DM/group peers; a bot's socket has every server active. Over real WebSockets, with an injected
// clock for the TTL.
import t from 'tap';
import { signup, type TestUser } from './helpers/http.ts';
import { createServer, join, type TestServer } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';
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

/** The profile changes of `user` that `c` received (from index `from` of its events). */
const profiles = (c: WsClient, user: TestUser, from = 0) => c.events.slice(from).filter((e) => e.type === 'UserUpdate' && e.id === user.userId);
let edits = 0;
/** `user` changes its status text; resolves with the text. */
async function editProfile(user: TestUser): Promise<string> {
  const text = `status ${++edits}`;
  const r = await user.api.patch('/users/@me', { status: { text } });
  if (r.status !== 200) throw new Error(`profile edit ${r.status}`);
  return text;
}
const saying = (user: TestUser, text: string) => (e: Frame) => e.type === 'UserUpdate' && e.id === user.userId && e.data?.status?.text === text;

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

  t.test('a profile change reaches server peers only while they have the server active', async (t) => {
    const on = await connectReady(s, owner.token);
    const off = await connectReady(s, owner.token);
    const f = await connectReady(s, friend.token);
    const p = await connectReady(s, peer.token);
    const own = await connectReady(s, subject.token);
    on.send({ type: 'Subscribe', server_id: srv.id });
    await flush(on);
    const text = await editProfile(subject);
    t.match(await on.waitFor(saying(subject, text)), { type: 'UserUpdate', id: subject.userId, data: { status: { text } } }, 'subscribed: delivered');
    await f.waitFor(saying(subject, text));
    t.pass('the friend gets it without Subscribe');
    await p.waitFor(saying(subject, text));
    t.pass('the DM peer gets it without Subscribe');
    await own.waitFor(saying(subject, text));
    t.pass('the user\'s own socket gets it');
    await flush(off);
    t.same(profiles(off, subject), [], 'the same user\'s socket that did not subscribe: nothing');
    // A bad frame is a MalformedData error, not a closed socket.
    off.send({ type: 'Subscribe', server_id: 42 });
    t.match(await off.waitFor((e) => e.type === 'Error'), { data: { type: 'MalformedData' } });
    // A server the user is not in is ignored (bonfire checks the membership).
    const elsewhere = await createServer(subject, 'Not the owner\'s');
    off.send({ type: 'Subscribe', server_id: elsewhere.id });
    await flush(off);
    const again = await editProfile(subject);
    await on.waitFor(saying(subject, again));
    await flush(off);
    t.same(profiles(off, subject), [], 'still nothing');
    for (const c of [on, off, f, p, own]) c.close();
  });

  t.test('not gated, as in bonfire: typing and presence', async (t) => {
    const off = await connectReady(s, owner.token);
    const m = await connectReady(s, member.token);
    m.send({ type: 'BeginTyping', channel: srv.general });
    t.same(await off.waitFor((e) => e.type === 'ChannelStartTyping'), { type: 'ChannelStartTyping', id: srv.general, user: member.userId }, 'a server channel\'s typing');
    const p = await connectReady(s, peer.token);
    const own = await connectReady(s, subject.token);
    own.send({ type: 'BeginTyping', channel: dmId });
    t.same(await p.waitFor((e) => e.type === 'ChannelStartTyping' && e.id === dmId), { type: 'ChannelStartTyping', id: dmId, user: subject.userId }, 'a DM\'s typing');
    own.close();
    await off.waitForPresence((e) => e.id === subject.userId && e.data.online === false);
    t.pass('a server peer\'s presence (offline)');
    const back = await connectReady(s, subject.token);
    await off.waitForPresence((e) => e.id === subject.userId && e.data.online === true);
    t.pass('a server peer\'s presence (online)');
    for (const c of [off, m, p, back]) c.close();
  });

  t.test('a bot\'s socket has every server active', async (t) => {
    const created = await owner.api.post('/bots/create', { name: `sub${process.pid}` });
    t.equal(created.status, 200);
    t.equal((await owner.api.post(`/bots/${created.body._id}/invite`, { server: srv.id })).status, 204);
    const bot = await connectReady(s, created.body.token as string);
    const text = await editProfile(member);
    t.match(await bot.waitFor(saying(member, text)), { type: 'UserUpdate', id: member.userId });
    bot.close();
  });

  t.test('at most 5 servers: a sixth evicts the least recently subscribed', async (t) => {
    // Six servers of the owner, each with one member of its own (who shares nothing else with the owner).
    const members = await Promise.all([1, 2, 3, 4, 5, 6].map(() => signup(s)));
    const servers: TestServer[] = [];
    for (const [i, u] of members.entries()) {
      const x = await createServer(owner, `Server ${i + 1}`);
      await join(owner, x.general, u);
      servers.push(x);
    }
    const o = await connectReady(s, owner.token);
    for (const x of servers) o.send({ type: 'Subscribe', server_id: x.id });
    await flush(o);
    const round = async (expected: number[]) => {
      const mark = o.events.length;
      const texts = await Promise.all(members.map((u) => editProfile(u)));
      for (const i of expected) await o.waitFor(saying(members[i]!, texts[i]!), undefined, mark);
      // The owner's own change comes after all of theirs (one projector partition, one dispatch queue): once
      // it arrives, every change that was going to reach this socket has.
      const mine = await editProfile(owner);
      await o.waitFor(saying(owner, mine), undefined, mark);
      return members.map((u, i) => (profiles(o, u, mark).length > 0 ? i : -1)).filter((i) => i >= 0);
    };
    t.same(await round([1, 2, 3, 4, 5]), [1, 2, 3, 4, 5], 'servers 2–6 delivered, the first (evicted by the sixth) not');
    // Refresh server 2, then subscribe to server 1 again: server 3 is now the least recent and goes.
    o.send({ type: 'Subscribe', server_id: servers[1]!.id });
    o.send({ type: 'Subscribe', server_id: servers[0]!.id });
    await flush(o);
    t.same(await round([0, 1, 3, 4, 5]), [0, 1, 3, 4, 5], 'server 3 evicted; 1, 2, 4, 5, 6 delivered');
    o.close();
  });

  t.test('the TTL: 15 minutes after the last Subscribe', async (t) => {
    const o = await connectReady(s, owner.token);
    o.send({ type: 'Subscribe', server_id: srv.id });
    await flush(o);
    // 890 s later (a 10 s margin for a loaded machine): still active.
    shift += 890_000;
    const first = await editProfile(member);
    await o.waitFor(saying(member, first));
    t.pass('active at 890 s');
    // 901 s after the Subscribe: expired. A socket that subscribes now gets the change, the old one not.
    shift += 11_000;
    const fresh = await connectReady(s, owner.token);
    fresh.send({ type: 'Subscribe', server_id: srv.id });
    await flush(fresh);
    const mark = o.events.length;
    const second = await editProfile(member);
    await fresh.waitFor(saying(member, second));
    const mine = await editProfile(owner);
    await o.waitFor(saying(owner, mine), undefined, mark);
    t.same(profiles(o, member, mark), [], 'expired at 901 s: nothing');
    // Subscribing again renews it.
    o.send({ type: 'Subscribe', server_id: srv.id });
    await flush(o);
    const third = await editProfile(member);
    t.match(await o.waitFor(saying(member, third), undefined, mark), { id: member.userId }, 'renewed by a new Subscribe');
    for (const c of [o, fresh]) c.close();
  });
});
