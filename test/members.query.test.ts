// GET /servers/:id/members_experimental_query (Stoat's member_experimental_query.rs), through stoat.js's
// `Server.queryMembersExperimental`: names containing the query (the nickname when set, else the username,
// case-sensitive), shortest first, at most ten, as {members, users}; members only; experimental_api required.
import t from 'tap';
import { Client } from 'stoat.js';
import { request, signup } from './helpers/http.ts';
import { startTestService } from './helpers/service.ts';
import { clearClientIntervalsAtTeardown, installWebSocket, signUpWithClient } from './helpers/realClients.ts';
import { until } from './helpers/wait.ts';

installWebSocket();

t.test('member query by name', async (t) => {
  clearClientIntervalsAtTeardown(t);
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const tag = process.pid.toString(36);
  const owner = await signUpWithClient(t, Client, 'stoat.js', s.apiUrl, `own${tag}`);
  const created = await owner.api.post('/servers/create', { name: 'Query' });
  const serverId = created.server._id as string;
  const invite = (await owner.api.post(`/channels/${created.channels[0]._id}/invites`))._id as string;
  const users: Record<string, Awaited<ReturnType<typeof signup>>> = {};
  for (const name of ['Alice', 'Alicia', 'Malice', 'alice', 'Bob', 'Alison']) {
    const u = await signup(s, `${name}${tag}`);
    t.equal((await u.api.post(`/invites/${invite}`)).status, 200);
    users[name] = u;
  }
  // A nickname is what is searched when set: Bob is found as "Alibob", Alison (nicknamed "Zed") is not.
  t.equal((await request(s.apiUrl, 'PATCH', `/servers/${serverId}/members/${users.Bob!.userId}`, { token: owner.testSession.token, body: { nickname: 'Alibob' } })).status, 200);
  t.equal((await request(s.apiUrl, 'PATCH', `/servers/${serverId}/members/${users.Alison!.userId}`, { token: owner.testSession.token, body: { nickname: 'Zed' } })).status, 200);
  const server = await until('the server in the client', () => owner.servers.get(serverId));

  const found = await server.queryMembersExperimental('Ali');
  const names = (r: { members: Array<{ id: { user: string } }>; users: Array<{ id: string; username: string }> }) => r.members.map((m) => m.id.user);
  const want = [users.Bob, users.Alice, users.Alicia].map((u) => u!.userId);
  t.same(names(found).sort(), [...want].sort(), 'Alice, Alicia and "Alibob"; not Malice-with-lowercase, alice, nor Zed');
  t.same(found.users.map((u: { id: string }) => u.id).sort(), [...want].sort(), 'their users beside them');
  const lengths = found.members.map((m: { nickname?: string; user?: { username: string } }) => (m.nickname ?? m.user?.username ?? '').length);
  t.same(lengths, [...lengths].sort((a: number, b: number) => a - b), 'shortest name first');
  t.same(names(await server.queryMembersExperimental('alice')), [users.alice!.userId, users.Malice!.userId], 'case-sensitive; "Malice" contains "alice", after the shorter "alice"');
  t.same(names(await server.queryMembersExperimental('Zed')), [users.Alison!.userId], 'by nickname');
  t.same(names(await server.queryMembersExperimental('nobody')), []);

  // At most ten, the shortest: nine two-letter names beat the three-letter ones.
  const many = [];
  for (let i = 1; i <= 12; i++) many.push(await signup(s, `q${i}${tag}`));
  for (const u of many) await u.api.post(`/invites/${invite}`);
  const top = await server.queryMembersExperimental(`${tag}`);
  t.equal(top.members.length, 10, 'ten of the matches');
  const raw = await request(s.apiUrl, 'GET', `/servers/${serverId}/members_experimental_query?experimental_api=true&query=q`, { token: owner.testSession.token });
  t.equal(raw.body.members.length, 10);
  const shortIds = new Set(many.slice(0, 9).map((u) => u.userId));
  t.ok(raw.body.members.slice(0, 9).every((m: { _id: { user: string } }) => shortIds.has(m._id.user)), 'q1…q9 first');
  t.same(raw.body.users.map((u: { _id: string }) => u._id), raw.body.members.map((m: { _id: { user: string } }) => m._id.user), 'users in the members\' order');

  // Refusals.
  const outsider = await signup(s, `out${tag}`);
  const Q = `/servers/${serverId}/members_experimental_query`;
  t.match(await outsider.api.get(`${Q}?experimental_api=true&query=a`), { status: 404, body: { type: 'NotFound' } }, 'a non-member');
  t.match(await request(s.apiUrl, 'GET', `${Q}?experimental_api=true&query=a`), { status: 401, body: { type: 'NotAuthenticated' } });
  t.match(await users.Bob!.api.get(`${Q}?experimental_api=false&query=a`), { status: 400, body: { type: 'FailedValidation' } }, 'experimental_api must be true');
  t.match(await users.Bob!.api.get(`${Q}?query=a`), { status: 400, body: { type: 'FailedValidation' } }, 'experimental_api is required');
  t.match(await users.Bob!.api.get(`${Q}?experimental_api=true`), { status: 400, body: { type: 'FailedValidation' } }, 'query is required');
  t.match(await users.Bob!.api.get(`${Q}?experimental_api=true&query=${'a'.repeat(129)}`), { status: 400, body: { type: 'FailedValidation' } }, 'a bounded query');
  t.equal((await users.Bob!.api.get(`${Q}?experimental_api=true&query=${'a'.repeat(128)}`)).status, 200);
});
