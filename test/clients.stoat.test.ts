// The published stoat.js 7.3 client, unmodified, against this service: sign up, log in, onboard, connect and
// become ready, then the server flow (server, channel, role, permissions, categories), a second client that
// joins and follows the first one's changes through the gateway (including a channel hidden and shown
// again by permissions), typing, an upload used as an avatar, a kick, the server's deletion and a logout.
// Every answer is checked against the stoat-api OpenAPI document (helpers/realClients.ts).
import t from 'tap';
import sharp from 'sharp';
import { Client } from 'stoat.js';
import { Permission as P } from '../src/permissions/bits.ts';
import { startTestService } from './helpers/service.ts';
import { assertTraffic, clearClientIntervalsAtTeardown, installWebSocket, traceClients, until } from './helpers/realClients.ts';

installWebSocket();

const V = Number(P.ViewChannel);

/** A stoat.js client logged in, onboarded and ready. */
async function readyClient(
  t: { teardown(fn: () => unknown): void },
  apiUrl: string,
  name: string,
  options: { heartbeatInterval?: number } = {},
): Promise<{ client: Client; password: string; email: string }> {
  const config = await (await fetch(`${apiUrl}/`)).json();
  const client = new Client({ baseURL: apiUrl, autoReconnect: false, ...options }, config);
  t.teardown(() => client.events.disconnect());
  const email = `${name}.${Date.now()}@example.test`;
  const password = 'correct horse battery';
  // stoat-api answers null for the 204 of account creation.
  const created = await client.api.post('/auth/account/create', { email, password });
  if (created !== null) throw new Error('account create did not answer 204');
  const session = await client.api.post('/auth/session/login', { email, password, friendly_name: 'stoat.js test' });
  if (session.result !== 'Success') throw new Error('login failed');
  client.useExistingSession(session);
  const hello = await client.api.get('/onboard/hello');
  if (!hello.onboarding) throw new Error('expected onboarding');
  await client.api.post('/onboard/complete', { username: name });
  const ready = new Promise<void>((resolve) => client.once('ready', () => resolve()));
  client.connect();
  await ready;
  return { client, password, email };
}

t.test('stoat.js against the service', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const traffic = traceClients(t, s);
  clearClientIntervalsAtTeardown(t);

  // The owner's client pings every second (Ping → Pong with the same data, or it disconnects).
  const { client: owner } = await readyClient(t, s.apiUrl, `stoatowner${process.pid}`, { heartbeatInterval: 1 });
  t.equal(owner.ready(), true, 'ready');
  t.equal(owner.user?.username, `stoatowner${process.pid}`, 'client.user comes from Ready (relationship "User")');

  // Server, channel, role.
  const server = await owner.servers.createServer({ name: 'Stoat server' });
  t.equal(server.name, 'Stoat server');
  t.equal(server.channels.length, 1, 'with its General channel');
  const general = server.channels[0]!;
  const chat = await server.createChannel({ type: 'Text', name: 'chat', description: 'talk here' });
  t.equal(chat.name, 'chat');
  t.equal(chat.serverId, server.id);
  await until(() => server.channelIds.has(chat.id), 'the ServerUpdate with the new channel list reaches the owner');
  const role = await server.createRole('mods');
  t.equal(role.role.name, 'mods');
  await until(() => server.roles.get(role.id), 'ServerRoleUpdate adds the role to the owner\'s server');
  await server.setPermissions(role.id, { allow: Number(P.ManageMessages), deny: 0 });
  await until(() => server.roles.get(role.id)?.permissions.a === P.ManageMessages, 'role permissions arrive as ServerRoleUpdate');
  const edited = await server.editRole(role.id, { colour: '#ff0000', hoist: true });
  t.equal(edited.colour, '#ff0000');
  await server.edit({ categories: [{ id: 'cat1', title: 'Talk', channels: [chat.id] }] });
  t.same(server.categories?.map((c) => [c.id, c.title, c.channels]), [['cat1', 'Talk', [chat.id]]], 'categories from the PATCH answer');

  // A second client joins through an invite and receives the server through the gateway.
  const { client: member } = await readyClient(t, s.apiUrl, `stoatmember${process.pid}`);
  const invite = await chat.createInvite();
  await member.api.post(`/invites/${invite._id}`);
  const joined = await until(() => member.servers.get(server.id), 'ServerCreate reaches the joining client');
  t.equal(joined.name, 'Stoat server');
  await until(() => member.channels.get(chat.id), 'with the channels it can see');
  // As the apps do when a server is opened: load its members and their users.
  await joined.syncMembers();
  t.equal(member.users.get(owner.user!.id)?.username, owner.user!.username, 'members and users are listed pairwise');
  await until(() => owner.serverMembers.getByKey({ server: server.id, user: member.user!.id }), 'ServerMemberJoin reaches the owner');

  // The owner edits; the member's cache follows.
  await chat.edit({ name: 'chat-renamed' });
  await until(() => member.channels.get(chat.id)?.name === 'chat-renamed', 'ChannelUpdate reaches the member');
  await server.edit({ description: 'A place' });
  await until(() => member.servers.get(server.id)?.description === 'A place', 'ServerUpdate reaches the member');

  // Permissions hide the channel from the member (ChannelDelete) and show it again (ChannelCreate).
  await chat.setPermissions('default', { allow: 0, deny: V });
  await until(() => !member.channels.get(chat.id), 'the hidden channel is removed from the member\'s cache');
  t.ok(owner.channels.get(chat.id), 'the owner still has it');
  await chat.setPermissions('default', { allow: V, deny: 0 });
  const back = await until(() => member.channels.get(chat.id), 'and comes back');
  t.equal(back.name, 'chat-renamed', 'with its current state');

  // Typing, relayed to the member.
  const typing = new Promise<string>((resolve) => member.on('channelStartTyping', (channel, user) => resolve(`${channel.id}:${user?.id}`)));
  general.startTyping();
  t.equal(await typing, `${general.id}:${owner.user!.id}`);

  // Upload a file to the media server and use it as the avatar.
  const png = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#3366ff' } }).png().toBuffer();
  const fileId = await owner.uploadFile('avatars', new File([png], 'avatar.png', { type: 'image/png' }));
  t.match(fileId, /^[0-9A-Z]{26}$/, 'the upload answers a ULID');
  await owner.user!.edit({ avatar: fileId });
  await until(() => owner.user?.avatar?.id === fileId, 'UserUpdate brings the avatar to the owner\'s client');
  await until(() => member.users.get(owner.user!.id)?.avatar?.id === fileId, 'and to the member sharing the server');
  const avatarUrl = owner.user!.avatar!.createFileURL();
  t.ok(avatarUrl?.startsWith(s.config.mediaPublicUrl), `file URLs point at the media server (${avatarUrl})`);
  t.equal((await fetch(avatarUrl!)).status, 200, 'the avatar is served');

  // Kick: the member's client drops the server.
  await server.kickUser(member.user!.id);
  await until(() => !member.servers.get(server.id), 'ServerMemberLeave of itself removes the server from the member');

  // Delete the server (204 → null with stoat-api).
  const other = await owner.servers.createServer({ name: 'Doomed' });
  await other.delete();
  t.notOk(owner.servers.get(other.id), 'deleted');
  // stoat-api throws the error body as text.
  const fetchDeleted = await owner.api.get(`/servers/${other.id}`).then(
    () => 'found',
    (e: unknown) => (JSON.parse(String(e)) as { type: string }).type,
  );
  t.equal(fetchDeleted, 'NotFound', 'a follow-up read confirms it');

  // Log out: the session's socket is closed.
  const disconnected = new Promise<void>((resolve) => member.once('disconnected', () => resolve()));
  await member.api.post('/auth/session/logout');
  await disconnected;
  t.pass('logout disconnects the client');

  await until(() => owner.events.ping() >= 0, 'the client\'s heartbeat gets its Pong');
  t.equal(owner.events.state(), 2, 'and is still connected');
  owner.events.disconnect();
  assertTraffic(t, traffic);
});
