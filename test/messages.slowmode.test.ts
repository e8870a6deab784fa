// Channel slowmode (Stoat's channel_edit.rs and message_send.rs): the `slowmode` field (ManageChannel, 0 to
// 21600 seconds, removable), 429 InSlowmode {retry_after} while the sender waits, UserSlowmodes to the sender
// after a send and when one is refused (and after Ready), BypassSlowmode or ManageMessages exempt; held in
// Redis, so two API processes share it and concurrent sends at the boundary let exactly one through.
import t from 'tap';
import { client, signup } from './helpers/http.ts';
import { createServer, join, roleWith } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';
import { connectReady, type Frame } from './helpers/ws.ts';
import { Permission as P } from '../src/permissions/bits.ts';

t.test('slowmode', async (t) => {
  // A clock that moves only when the test moves it, so a wait is exact to the millisecond.
  let offset = Date.now();
  const now = () => offset;
  const s = await startTestService(t, { RATE_LIMITS: 'off' }, { now });
  // A second API process on the same log and Redis, without a projector.
  const other = await startTestService(t, { RATE_LIMITS: 'off', DATA_DIR: s.dataDir, REDIS_PREFIX: s.prefix, ROLES: 'api' }, { now });
  const owner = await signup(s);
  const member = await signup(s);
  const srv = await createServer(owner, 'Slow');
  await join(owner, srv.general, member);
  const C = `/channels/${srv.general}`;
  const M = `${C}/messages`;
  const slowmodesOf = (ws: { events: Frame[] }, from: number) => ws.events.slice(from).filter((e) => e.type === 'UserSlowmodes');

  t.test('PATCH /channels/:id slowmode: ManageChannel, 0 to 21600 whole seconds, removable', async (t) => {
    t.equal((await member.api.patch(C, { slowmode: 10 })).body.permission, 'ManageChannel', 'a member without ManageChannel: 403');
    for (const bad of [21601, -1, 1.5, '10']) {
      const r = await owner.api.patch(C, { slowmode: bad });
      t.equal(r.status, 400, `slowmode ${JSON.stringify(bad)}: 400`);
      t.equal(r.body.type, 'FailedValidation');
    }
    const max = await owner.api.patch(C, { slowmode: 21600 });
    t.equal(max.status, 200);
    t.equal(max.body.slowmode, 21600, 'six hours is the most');
    const removed = await owner.api.patch(C, { remove: ['Slowmode'] });
    t.notOk('slowmode' in removed.body, 'remove: [Slowmode] clears it');
    const ws = await connectReady(s, owner.token);
    t.teardown(() => ws.close());
    const from = ws.events.length;
    t.equal((await owner.api.patch(C, { slowmode: 10 })).body.slowmode, 10);
    const update = await ws.waitFor((e) => e.type === 'ChannelUpdate' && e.id === srv.general && e.data.slowmode === 10, undefined, from);
    t.same(update.clear, [], 'ChannelUpdate carries it');
    t.equal((await owner.api.get(C)).body.slowmode, 10, 'fetched');
    // Stoat's slowmode is a server channel's: a group has none to set or remove.
    const friend = await signup(s);
    t.equal((await owner.api.put(`/users/${friend.userId}/friend`)).status, 200);
    t.equal((await friend.api.put(`/users/${owner.userId}/friend`)).status, 200);
    const group = (await owner.api.post('/channels/create', { name: 'g', users: [friend.userId] })).body._id;
    t.match(await owner.api.patch(`/channels/${group}`, { slowmode: 5 }), { status: 400, body: { type: 'InvalidOperation' } }, 'a group: InvalidOperation');
    t.match(await owner.api.patch(`/channels/${group}`, { remove: ['Slowmode'] }), { status: 400, body: { type: 'InvalidOperation' } });
  });

  t.test('a member waits: 429 InSlowmode {retry_after}, UserSlowmodes after a send and after a refusal', async (t) => {
    const ws = await connectReady(s, member.token);
    t.teardown(() => ws.close());
    const from = ws.events.length;
    const first = await member.api.post(M, { content: 'one' });
    t.equal(first.status, 200, 'the first message passes');
    const after = await ws.waitFor((e) => e.type === 'UserSlowmodes', undefined, from);
    t.same(after.slowmodes, [{ channel_id: srv.general, duration: 10, retry_after: 10 }], 'UserSlowmodes after the send');

    offset += 4_000;
    const refused = await member.api.post(M, { content: 'two' });
    t.equal(refused.status, 429);
    t.same({ type: refused.body.type, retry_after: refused.body.retry_after }, { type: 'InSlowmode', retry_after: 6 }, '6 seconds left');
    await ws.waitFor((e) => e.type === 'UserSlowmodes' && e.slowmodes[0].retry_after === 6, undefined, from);
    t.same(slowmodesOf(ws, from)[1]!.slowmodes, [{ channel_id: srv.general, duration: 10, retry_after: 6 }], 'UserSlowmodes on the refusal');
    t.equal((await client(other, member.token).post(M, { content: 'elsewhere' })).body.type, 'InSlowmode', 'the other API process sees the same slowmode');

    // A socket that connects now hears of it after Ready (bonfire).
    const late = await connectReady(other, member.token);
    t.teardown(() => late.close());
    const r = await late.waitFor((e) => e.type === 'UserSlowmodes');
    t.equal(late.events.indexOf(r), late.events.findIndex((e) => e.type === 'Ready') + 1, 'right after Ready');
    t.same(r.slowmodes, [{ channel_id: srv.general, duration: 6, retry_after: 6 }]);

    offset += 5_999;
    t.equal((await member.api.post(M, { content: 'early' })).body.retry_after, 1, 'a millisecond early: still refused');
    offset += 1;
    t.equal((await member.api.post(M, { content: 'three' })).status, 200, 'after ten seconds it passes');
    offset += 10_000;
  });

  t.test('a send refused for another reason does not take the slot', async (t) => {
    t.equal((await member.api.post(M, {})).body.type, 'EmptyMessage');
    t.equal((await member.api.post(M, { content: 'x', replies: [{ id: '01ARZ3NDEKTSV4RRFFQ69G5FAV', mention: false }] })).body.type, 'NotFound');
    t.equal((await member.api.post(M, { content: 'ok' })).status, 200, 'the slot was given back');
    offset += 10_000;
  });

  t.test('BypassSlowmode or ManageMessages exempt; the owner too', async (t) => {
    for (let i = 0; i < 2; i++) t.equal((await owner.api.post(M, { content: `owner ${i}` })).status, 200, `owner send ${i}`);
    const bypass = await signup(s);
    const manager = await signup(s);
    await join(owner, srv.general, bypass, manager);
    await roleWith(owner, srv.id, P.BypassSlowmode, [bypass], 'bypass');
    await roleWith(owner, srv.id, P.ManageMessages, [manager], 'manager');
    for (const [name, u] of [['BypassSlowmode', bypass], ['ManageMessages', manager]] as const) {
      const ws = await connectReady(s, u.token);
      const from = ws.events.length;
      for (let i = 0; i < 3; i++) t.equal((await u.api.post(M, { content: `${name} ${i}` })).status, 200, `${name}: send ${i}`);
      await ws.waitFor((e) => e.type === 'Message' && e.content === `${name} 2`, undefined, from);
      t.same(slowmodesOf(ws, from), [], `${name}: no UserSlowmodes`);
      ws.close();
    }
    const plain = await signup(s);
    await join(owner, srv.general, plain);
    t.equal((await plain.api.post(M, { content: 'a' })).status, 200);
    t.equal((await plain.api.post(M, { content: 'b' })).status, 429, 'without either: slowed');
  });

  t.test('concurrent sends at the boundary across two API processes: exactly one passes', async (t) => {
    const racer = await signup(s);
    await join(owner, srv.general, racer);
    const viaOther = client(other, racer.token);
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? viaOther : racer.api).post(M, { content: `race ${round} ${i}` })));
      t.equal(results.filter((r) => r.status === 200).length, 1, `round ${round}: one of 12 passes`);
      t.ok(results.filter((r) => r.status !== 200).every((r) => r.status === 429 && r.body.type === 'InSlowmode'), 'the rest are InSlowmode');
      offset += 10_000;
    }
    let sent = 0;
    for await (const e of s.store.readAll()) if (e.type === 'MessageSent' && (e.data as any).message.author === racer.userId) sent++;
    t.equal(sent, 3, 'three messages in the log, nothing extra');
  });

  t.test('slowmode 0 or removed: no wait', async (t) => {
    t.equal((await owner.api.patch(C, { slowmode: 0 })).body.slowmode, 0);
    for (let i = 0; i < 2; i++) t.equal((await member.api.post(M, { content: `zero ${i}` })).status, 200);
    await owner.api.patch(C, { slowmode: 30 });
    t.equal((await member.api.post(M, { content: 'slow again' })).status, 200);
    t.equal((await member.api.post(M, { content: 'refused' })).status, 429);
    await owner.api.patch(C, { remove: ['Slowmode'] });
    t.equal((await member.api.post(M, { content: 'free' })).status, 200, 'removing it lifts the wait');
  });
});
