/**
 * Attack review items 11 and 12 on the events gateway: typing frames are throttled per socket; sockets are
 * capped per user and per client address (GATEWAY_MAX_SOCKETS_PER_USER / _PER_ADDRESS); others never see
 * an Invisible user's `presence: "Invisible"` (HTTP or events).
 */
import t from 'tap';
import { TYPING_PER_WINDOW } from '../src/gateway/gateway.ts';
import { startTestService } from './helpers/service.ts';
import { signup } from './helpers/http.ts';
import { createServer, join } from './helpers/servers.ts';
import { connectReady, connectWs } from './helpers/ws.ts';

t.test('gateway limits', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', GATEWAY_MAX_SOCKETS_PER_USER: '3', GATEWAY_MAX_SOCKETS_PER_ADDRESS: '6' });
  const owner = await signup(s);
  const member = await signup(s);
  const server = await createServer(owner);
  await join(owner, server.general, member);

  await t.test('a typing flood is throttled', async (t) => {
    const o = await connectReady(s, owner.token);
    const m = await connectReady(s, member.token);
    for (let i = 0; i < 2000; i++) o.send({ type: i % 2 === 0 ? 'BeginTyping' : 'EndTyping', channel: server.general });
    // A marker after the flood: once it arrives, everything relayed before it has arrived too.
    o.send({ type: 'Ping', data: 1 });
    await o.waitFor((e) => e.type === 'Pong');
    const marker = await owner.api.post(`/channels/${server.general}/messages`, { content: 'marker' });
    t.equal(marker.status, 200);
    await m.waitFor((e) => e.type === 'Message' && e._id === marker.body._id);
    const typing = m.events.filter((e) => e.type === 'ChannelStartTyping' || e.type === 'ChannelStopTyping');
    t.ok(typing.length >= 1, `typing still works (${typing.length} relayed)`);
    t.ok(typing.length <= TYPING_PER_WINDOW, `at most ${TYPING_PER_WINDOW} of 2,000 relayed (got ${typing.length})`);
    const repeats = await connectReady(s, member.token);
    for (let i = 0; i < 50; i++) repeats.send({ type: 'BeginTyping', channel: server.general });
    const marker2 = await member.api.post(`/channels/${server.general}/messages`, { content: 'marker 2' });
    await o.waitFor((e) => e.type === 'Message' && e._id === marker2.body._id);
    t.equal(o.events.filter((e) => e.type === 'ChannelStartTyping' && e.user === member.userId).length, 1, '50 BeginTyping in a row: relayed once');
    o.close();
    m.close();
    repeats.close();
    await Promise.all([o.closed, m.closed, repeats.closed]);
  });

  await t.test('sockets per user are capped', async (t) => {
    const held = [];
    for (let i = 0; i < 3; i++) held.push(await connectReady(s, member.token));
    const extra = connectWs(s, { token: member.token });
    const closed = await extra.closed;
    t.match(extra.frames.find((f) => f.type === 'Error'), { type: 'Error', data: { type: 'InternalError', at: 'SocketLimit' } }, 'the 4th socket of a user is refused');
    t.equal(closed.code, 1000);
    t.notOk(extra.frames.some((f) => f.type === 'Ready'), 'and never gets Ready');
    held[0]!.close();
    await held[0]!.closed;
    const again = await connectReady(s, member.token);
    t.ok(again, 'a socket closed frees a place');
    for (const c of [...held.slice(1), again]) c.close();
    await Promise.all([...held.slice(1), again].map((c) => c.closed));
  });

  await t.test('sockets per address are capped, authenticated or not', async (t) => {
    const anon = [];
    for (let i = 0; i < 6; i++) {
      const c = connectWs(s, {});
      await c.opened;
      anon.push(c);
    }
    const extra = connectWs(s, {});
    const refused = await Promise.race([
      extra.opened.then(() => 'opened'),
      new Promise<string>((resolve) => extra.ws.once('unexpected-response', (_req, res) => resolve(String(res.statusCode)))),
      new Promise<string>((resolve) => extra.ws.once('error', () => resolve('error'))),
    ]);
    t.equal(refused, '429', 'the 7th upgrade from one address: 429');
    anon[0]!.close();
    await anon[0]!.closed;
    const next = connectWs(s, {});
    await next.opened;
    t.pass('a closed socket frees a place');
    for (const c of [...anon.slice(1), next]) c.close();
    await Promise.all([...anon.slice(1), next].map((c) => c.closed));
  });
});

t.test('others never see presence "Invisible"', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const owner = await signup(s);
  const member = await signup(s);
  const server = await createServer(owner);
  await join(owner, server.general, member);
  t.equal((await member.api.patch('/users/@me', { status: { text: 'away', presence: 'Invisible' } })).status, 200);
  const seen = await owner.api.get(`/users/${member.userId}`);
  t.same([seen.body.status, seen.body.online], [{ text: 'away' }, false], 'GET /users/:id: no presence, offline');
  const own = await member.api.get('/users/@me');
  t.equal(own.body.status?.presence, 'Invisible', 'the user sees its own presence');
  const list = await owner.api.get(`/servers/${server.id}/members?include_users=true`);
  const listed = list.body.users.find((u: { _id: string }) => u._id === member.userId);
  t.equal(listed.status?.presence, undefined, 'member list: no presence');
  const ws = await connectReady(s, owner.token);
  const mws = await connectReady(s, member.token);
  // A server peer's profile change reaches a socket that has the server active (Subscribe, bonfire's member topic;
  // gateway.subscribe.test.ts); the Pong says it was applied.
  ws.send({ type: 'Subscribe', server_id: server.id });
  ws.send({ type: 'Ping', data: 0 });
  await ws.waitFor((e) => e.type === 'Pong' && e.data === 0);
  t.equal((await member.api.patch('/users/@me', { status: { text: 'still away', presence: 'Invisible' } })).status, 200);
  const update = await ws.waitFor((e) => e.type === 'UserUpdate' && e.id === member.userId && e.data.status?.text === 'still away');
  t.equal(update.data.status.presence, undefined, 'UserUpdate to others: no presence');
  const sent = await member.api.post(`/channels/${server.general}/messages`, { content: 'hi' });
  const msg = await ws.waitFor((e) => e.type === 'Message' && e._id === sent.body._id);
  if (msg.user) t.equal(msg.user.status?.presence, undefined, 'Message.user to others: no presence');
  ws.close();
  mws.close();
  await Promise.all([ws.closed, mws.closed]);
});
