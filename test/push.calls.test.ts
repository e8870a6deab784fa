/**
 * Ringing (Stoat's pushd dm_call): when a DM's or group's call starts — the first join LiveKit reports for
 * the room — the other recipients are pushed `"<name> is calling you"` / `"<name> is calling your group,
 * <group>"`, decrypted on a loopback push endpoint as a browser would. `join_call`'s `recipients` narrow who
 * is rung; later joins ring nobody; a recipient who muted the channel is not rung; the event keeps who was rung.
 */
import t from 'tap';
import { signup, type TestUser } from './helpers/http.ts';
import { joined, left, livekitWebhook } from './helpers/livekit.ts';
import { startPushEndpoint } from './helpers/pushEndpoint.ts';
import { startTestService } from './helpers/service.ts';
import { until } from './helpers/wait.ts';
import { createServer } from './helpers/servers.ts';

const KEY = 'ring-test-key';
const SECRET = 'ring-test-secret-0123456789abcdefghij';

t.test('a DM or group call that starts rings the other recipients', async (t) => {
  const s = await startTestService(t, {
    OUTBOUND_ALLOW_PRIVATE: '127.0.0.0/8',
    RATE_LIMITS: 'off',
    PUSH_RETRY_DELAY_MS: '20',
    VOICE_ENABLED: 'true',
    LIVEKIT_URL: 'wss://livekit.example',
    LIVEKIT_API_KEY: KEY,
    LIVEKIT_API_SECRET: SECRET,
  });
  await s.pushWorker!.caughtUp;
  const ep = await startPushEndpoint(t);
  const [alice, bob, carol, dave] = await Promise.all([signup(s), signup(s), signup(s), signup(s)]);
  t.equal((await alice.api.patch('/users/@me', { display_name: 'Alice A' })).status, 200);
  const subs = new Map<TestUser, string>();
  for (const u of [alice, bob, carol, dave]) {
    const sub = ep.subscribe();
    t.equal((await u.api.post('/push/subscribe', sub)).status, 204);
    subs.set(u, new URL(sub.endpoint).pathname);
  }
  for (const u of [bob, carol, dave]) {
    t.equal((await alice.api.put(`/users/${u.userId}/friend`)).status, 200);
    t.equal((await u.api.put(`/users/${alice.userId}/friend`)).body.relationship, 'Friend');
  }
  // The requests and acceptances are pushed too (three each): count only what comes after them (a friend
  // push arriving late, or an extra one, is then counted below and fails the test).
  await until('the friend pushes', () => (ep.received.length >= 6 ? true : undefined));
  const base = 6;
  const calls = (u: TestUser) => ep.received.slice(base).filter((r) => r.path === subs.get(u));
  const webhook = (event: Record<string, unknown>) => livekitWebhook(s, { key: KEY, secret: SECRET }, event);

  const dm = (await alice.api.get(`/users/${bob.userId}/dm`)).body._id as string;
  const group = (await alice.api.post('/channels/create', { name: 'Night shift', users: [bob.userId, carol.userId, dave.userId] })).body._id as string;

  // A DM call: Alice joins first, Bob is rung; Bob joining rings nobody.
  t.equal((await alice.api.post(`/channels/${dm}/join_call`, {})).status, 200);
  t.equal((await webhook(joined(dm, alice.userId))).status, 200);
  const [rung] = await until('Bob rung', () => (calls(bob).length ? calls(bob) : undefined));
  t.same(rung!.payload, { body: 'Alice A is calling you', tag: dm }, 'tagged with the channel, so a stop replaces it');
  await webhook(joined(dm, bob.userId));
  const dmEvents = (await s.store.readStream(`voice-${dm}`)).map((e) => e.data as { user: string; ring?: string[] });
  t.same(dmEvents.map((d) => [d.user, d.ring]), [[alice.userId, [bob.userId]], [bob.userId, undefined]], 'the log keeps who was rung, once');

  // A group call with recipients: only those named (and still members) are rung; Dave muted the group. Alice
  // leaves the DM call first: join_call refuses a user who is in a call (Stoat's AlreadyConnected).
  await webhook(left(dm, alice.userId));
  t.equal((await dave.api.post('/sync/settings/set', { notifications: JSON.stringify({ server: {}, channel: { [group]: 'muted' } }) })).status, 204);
  const r = await alice.api.post(`/channels/${group}/join_call`, { recipients: [carol.userId, dave.userId, 'Z'.repeat(26)] });
  t.equal(r.status, 200);
  await webhook(joined(group, alice.userId));
  const [groupRing] = await until('Carol rung', () => (calls(carol).length ? calls(carol) : undefined));
  t.same(groupRing!.payload, { body: 'Alice A is calling your group, Night shift', tag: group });
  const groupEvents = (await s.store.readStream(`voice-${group}`)).map((e) => e.data as { ring?: string[] });
  t.same(groupEvents[0]!.ring, [carol.userId, dave.userId], 'the event rings the named recipients (an unknown id dropped)');

  // Everyone leaves; the next call started by Bob without a list rings every other recipient but Dave (muted).
  await webhook(left(dm, bob.userId));
  await webhook(left(group, alice.userId));
  await webhook(joined(group, bob.userId));
  await until('Alice and Carol rung by Bob', () => (calls(alice).length === 1 && calls(carol).length === 2 ? true : undefined));

  // Settle, then count: exactly one push per ring, none to the callers or the muted.
  await new Promise((r) => setTimeout(r, 800));
  t.equal(calls(bob).length, 1, 'Bob: rung once (the DM), never for his own call or the group list that left him out');
  t.equal(calls(carol).length, 2, 'Carol: the two group calls');
  t.equal(calls(alice).length, 1, 'Alice: Bob’s group call only');
  t.equal(calls(dave).length, 0, 'Dave muted the group');
  t.same(ep.errors, []);

  // Stopping the ring (Stoat's stop_ring, PUT /channels/:id/end_ring/:user): only a participant of the call,
  // only for a recipient; the stopped recipient's push says so under the ring's tag, which it replaces.
  await webhook(joined(dm, alice.userId));
  await until('Bob rung again', () => (calls(bob).length === 2 ? true : undefined));
  t.match(await carol.api.put(`/channels/${dm}/end_ring/${bob.userId}`), { status: 404, body: { type: 'NotFound' } }, 'someone else’s DM');
  t.match(await bob.api.put(`/channels/${dm}/end_ring/${alice.userId}`), { status: 400, body: { type: 'NotConnected' } }, 'Bob is not in the call');
  t.match(await alice.api.put(`/channels/${dm}/end_ring/${carol.userId}`), { status: 404, body: { type: 'NotFound' } }, 'Carol is no recipient of the DM');
  const srv = await createServer(alice);
  t.match(await alice.api.put(`/channels/${srv.general}/end_ring/${bob.userId}`), { status: 400, body: { type: 'NoEffect' } }, 'a server channel');
  t.equal((await alice.api.put(`/channels/${dm}/end_ring/${bob.userId}`)).status, 204);
  const stop = await until('Bob told', () => (calls(bob).length === 3 ? calls(bob)[2] : undefined));
  t.same(stop!.payload, { body: 'Alice A stopped calling you', tag: dm });
  t.same((await s.store.readStream(`ring-${dm}`)).map((e) => [e.type, e.data, e.metadata.actor]), [['CallRingStopped', { channel: dm, by: alice.userId, users: [bob.userId] }, alice.userId]], 'the log keeps who stopped ringing whom');
  // In the group (Bob is in its call): Carol is told; Dave, who muted the group, is not.
  t.equal((await bob.api.put(`/channels/${group}/end_ring/${carol.userId}`)).status, 204);
  t.equal((await bob.api.put(`/channels/${group}/end_ring/${dave.userId}`)).status, 204);
  const groupStop = await until('Carol told', () => (calls(carol).length === 3 ? calls(carol)[2] : undefined));
  t.match(groupStop!.payload, { body: /^\S+ stopped calling your group, Night shift$/, tag: group });
  await new Promise((r) => setTimeout(r, 500));
  t.equal(calls(dave).length, 0, 'Dave muted the group');
  t.equal(calls(carol).length, 3);
  t.same(ep.errors, []);
});
