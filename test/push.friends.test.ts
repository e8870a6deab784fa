/**
 * Web Push for friend requests (issue 20, Stoat's pushd fr_received / fr_accepted): a request received and a
 * request accepted reach every subscribed session of the user they concern — decrypted on a loopback push
 * endpoint as a browser would — with Stoat's bodies; nobody else is pushed, and a request that was only
 * sent, denied or withdrawn pushes nothing more.
 */
import t from 'tap';
import { signup, type TestUser } from './helpers/http.ts';
import { startPushEndpoint } from './helpers/pushEndpoint.ts';
import { startTestService } from './helpers/service.ts';
import { until } from './helpers/wait.ts';

t.test('friend requests and acceptances are pushed', async (t) => {
  const s = await startTestService(t, { OUTBOUND_ALLOW_PRIVATE: '127.0.0.0/8', RATE_LIMITS: 'off', PUSH_RETRY_DELAY_MS: '20' });
  await s.pushWorker!.caughtUp;
  const ep = await startPushEndpoint(t);
  const [alice, bob, carol] = await Promise.all([signup(s), signup(s), signup(s)]);
  t.equal((await alice.api.patch('/users/@me', { display_name: 'Alice A' })).status, 200);
  const subs = new Map<TestUser, string>();
  for (const u of [alice, bob, carol]) {
    const sub = ep.subscribe();
    t.equal((await u.api.post('/push/subscribe', sub)).status, 204);
    subs.set(u, new URL(sub.endpoint).pathname);
  }
  const to = (u: TestUser) => ep.received.filter((r) => r.path === subs.get(u));

  // Alice asks Bob: Bob is told, with Alice's display name.
  t.equal((await alice.api.put(`/users/${bob.userId}/friend`)).body.relationship, 'Outgoing');
  const [received] = await until('the request reaching Bob', () => (to(bob).length ? to(bob) : undefined));
  t.same(received!.payload, { body: 'Alice A sent you a friend request' });

  // Bob accepts: Alice is told, with Bob's name (no display name: username#discriminator).
  const bobUser = (await bob.api.get('/users/@me')).body as { username: string; discriminator: string };
  t.equal((await bob.api.put(`/users/${alice.userId}/friend`)).body.relationship, 'Friend');
  const [accepted] = await until('the acceptance reaching Alice', () => (to(alice).length ? to(alice) : undefined));
  t.same(accepted!.payload, { body: `${bobUser.username}#${bobUser.discriminator} accepted your friend request` });

  // Carol asks Alice, Alice denies: one push to Alice for the request, nothing for the denial.
  t.equal((await carol.api.put(`/users/${alice.userId}/friend`)).status, 200);
  await until('the second request reaching Alice', () => (to(alice).length === 2 ? true : undefined));
  t.equal((await alice.api.del(`/users/${carol.userId}/friend`)).status, 200);
  await new Promise((r) => setTimeout(r, 800));
  t.equal(to(alice).length, 2, 'the denial pushes nothing');
  t.equal(to(bob).length, 1, 'Bob got only his request: not his own acceptance');
  t.equal(to(carol).length, 0, 'Carol sent a request and was denied: nothing');
  t.same(ep.errors, []);
});
