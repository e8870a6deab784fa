// The published stoat.js 7.3 client, unmodified, against this service: sign up, log in, onboard, connect and
// become ready, then the server flow (server, channel, role, permissions, categories), a second client that
// joins and follows the first one's changes through the gateway (including a channel hidden and shown
// again by permissions), typing, an upload used as an avatar, messages (masquerade, history, edit,
// reactions with percent-encoded emoji, pin, an attachment, a custom emoji, delete), a kick, the server's
// deletion and a logout.
// Every answer is checked against the stoat-api OpenAPI document (helpers/realClients.ts).
import t from 'tap';
import sharp from 'sharp';
import { Client } from 'stoat.js';
import { Permission as P } from '../src/permissions/bits.ts';
import { startTestService } from './helpers/service.ts';
import { assertTraffic, clearClientIntervalsAtTeardown, installWebSocket, traceClients } from './helpers/realClients.ts';
import { until } from './helpers/wait.ts';

installWebSocket();

const V = Number(P.ViewChannel);

/** A stoat.js client logged in, onboarded and ready. */
async function readyClient(
  t: { teardown(fn: () => unknown): void },
  apiUrl: string,
  name: string,
  options: { heartbeatInterval?: number } = {},
): Promise<{ client: Client; session: { _id: string; token: string; user_id: string; name: string } }> {
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
  return { client, session };
}

t.test('stoat.js against the service', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const traffic = traceClients(t, s);
  clearClientIntervalsAtTeardown(t);

  // The owner's client pings every second (Ping → Pong with the same data, or it disconnects).
  const { client: owner, session: ownerSession } = await readyClient(t, s.apiUrl, `stoatowner${process.pid}`, { heartbeatInterval: 1 });
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
  await until('the ServerUpdate with the new channel list reaches the owner', () => server.channelIds.has(chat.id));
  const role = await server.createRole('mods');
  t.equal(role.role.name, 'mods');
  await until('ServerRoleUpdate adds the role to the owner\'s server', () => server.roles.get(role.id));
  await server.setPermissions(role.id, { allow: Number(P.ManageMessages), deny: 0 });
  await until('role permissions arrive as ServerRoleUpdate', () => server.roles.get(role.id)?.permissions.a === P.ManageMessages);
  const edited = await server.editRole(role.id, { colour: '#ff0000', hoist: true });
  t.equal(edited.colour, '#ff0000');
  await server.edit({ categories: [{ id: 'cat1', title: 'Talk', channels: [chat.id] }] });
  t.same(server.categories?.map((c) => [c.id, c.title, c.channels]), [['cat1', 'Talk', [chat.id]]], 'categories from the PATCH answer');

  // A second client joins through an invite and receives the server through the gateway.
  const { client: member } = await readyClient(t, s.apiUrl, `stoatmember${process.pid}`);
  const invite = await chat.createInvite();
  await member.api.post(`/invites/${invite._id}`);
  const joined = await until('ServerCreate reaches the joining client', () => member.servers.get(server.id));
  // The owner's profile changes reach the member's client while the server is active for it (Subscribe, as
  // Stoat's bonfire gates its member topic `<server>u`; gateway.subscribe.test.ts). stoat.js's protocol types do
  // not list Subscribe, so the frame is sent as is, long before the avatar edit below.
  member.events.send({ type: 'Subscribe', server_id: server.id } as never);
  t.equal(joined.name, 'Stoat server');
  await until('with the channels it can see', () => member.channels.get(chat.id));
  // As the apps do when a server is opened: load its members and their users.
  await joined.syncMembers();
  t.equal(member.users.get(owner.user!.id)?.username, owner.user!.username, 'members and users are listed pairwise');
  await until('ServerMemberJoin reaches the owner', () => owner.serverMembers.getByKey({ server: server.id, user: member.user!.id }));

  // The owner edits; the member's cache follows.
  await chat.edit({ name: 'chat-renamed' });
  await until('ChannelUpdate reaches the member', () => member.channels.get(chat.id)?.name === 'chat-renamed');
  await server.edit({ description: 'A place' });
  await until('ServerUpdate reaches the member', () => member.servers.get(server.id)?.description === 'A place');

  // Permissions hide the channel from the member (ChannelDelete) and show it again (ChannelCreate).
  await chat.setPermissions('default', { allow: 0, deny: V });
  await until('the hidden channel is removed from the member\'s cache', () => !member.channels.get(chat.id));
  t.ok(owner.channels.get(chat.id), 'the owner still has it');
  await chat.setPermissions('default', { allow: V, deny: 0 });
  const back = await until('and comes back', () => member.channels.get(chat.id));
  t.equal(back.name, 'chat-renamed', 'with its current state');

  // Typing, relayed to the member.
  const typing = new Promise<string>((resolve) => member.on('channelStartTyping', (channel, user) => resolve(`${channel.id}:${user?.id}`)));
  general.startTyping();
  t.equal(await typing, `${general.id}:${owner.user!.id}`);

  // Upload a file to the media server and use it as the avatar.
  const png = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#3366ff' } }).png().toBuffer();
  const fileId = await owner.uploadFile('avatars', new File([png], 'avatar.png', { type: 'image/png' }));
  t.match(fileId, /^[A-Za-z0-9_-]{42}$/, 'the upload answers a 42-character nanoid, as Stoat');
  await owner.user!.edit({ avatar: fileId });
  await until('UserUpdate brings the avatar to the owner\'s client', () => owner.user?.avatar?.id === fileId);
  await until('and to the member sharing the server', () => member.users.get(owner.user!.id)?.avatar?.id === fileId);
  const avatarUrl = owner.user!.avatar!.createFileURL();
  t.ok(avatarUrl?.startsWith(s.config.mediaPublicUrl), `file URLs point at the media server (${avatarUrl})`);
  t.equal((await fetch(avatarUrl!)).status, 200, 'the avatar is served');

  // Messages. The owner sends with a masquerade (name, an avatar uploaded to the media server, colour); the
  // member's client receives it as a Message event.
  const memberChat = member.channels.get(chat.id)!;
  const masqFile = await owner.uploadFile('avatars', new File([png], 'masq.png', { type: 'image/png' }));
  const masquerade = { name: 'Herald', avatar: `${s.config.mediaPublicUrl}/avatars/${masqFile}`, colour: '#ff0000' };
  const sent = await chat.sendMessage({ content: `hello <@${member.user!.id}>`, masquerade });
  t.match(sent.id, /^[0-9A-Z]{26}$/);
  t.same(sent.masquerade, masquerade);
  const got = await until('Message event reaches the member', () => member.messages.get(sent.id));
  t.equal(got.content, `hello <@${member.user!.id}>`);
  t.same(got.masquerade, masquerade, 'with its masquerade');
  t.equal(got.username, 'Herald', 'shown under the masquerade name');
  const reply = await memberChat.sendMessage('hi back');
  await until('and the other way round', () => owner.messages.get(reply.id)?.content === 'hi back');

  // History (newest first), also with users.
  const history = (await owner.api.get(`/channels/${chat.id}/messages`, { limit: 10 })) as Array<{ _id: string }>;
  t.same(history.map((m) => m._id), [reply.id, sent.id], 'history, newest first');
  const withUsers = await chat.fetchMessagesWithUsers({ limit: 10 });
  t.same(withUsers.users.map((u) => u.id).sort(), [owner.user!.id, member.user!.id].sort(), 'with their users');

  // Edit: the member's copy follows (MessageUpdate).
  await sent.edit({ content: 'hello, edited' });
  await until('MessageUpdate reaches the member', () => member.messages.get(sent.id)?.content === 'hello, edited');
  t.ok(member.messages.get(sent.id)!.editedAt, 'marked edited');

  // Reactions with a unicode emoji (percent-encoded in the path), then removed (`?remove_all=false`).
  await got.react('👍');
  await until('MessageReact reaches the owner', () => owner.messages.get(sent.id)?.reactions.get('👍')?.has(member.user!.id));
  const fetched = (await owner.api.get(`/channels/${chat.id}/messages/${sent.id}`)) as { reactions?: Record<string, string[]> };
  t.same(fetched.reactions, { '👍': [member.user!.id] }, 'a fetch shows the reaction');
  await got.unreact('👍');
  await until('MessageUnreact reaches the owner', () => !owner.messages.get(sent.id)?.reactions.get('👍')?.has(member.user!.id));

  // Pin (ManageMessages, the owner has every right): the member's copy is pinned, and so is a fetch.
  await sent.pin();
  await until('the pin reaches the member', () => member.messages.get(sent.id)?.pinned === true);
  t.equal(((await member.api.get(`/channels/${chat.id}/messages/${sent.id}`)) as { pinned?: boolean }).pinned, true, 'a fetched message carries pinned: true');

  // An attachment uploaded to the media server and sent with a message.
  const text = new File([Buffer.from('plain text attachment\n')], 'notes.txt', { type: 'text/plain' });
  const attachmentId = await owner.uploadFile('attachments', text);
  const withFile = await chat.sendMessage({ content: 'see attached', attachments: [attachmentId] });
  const received = await until('the message with the attachment reaches the member', () => member.messages.get(withFile.id));
  t.equal(received.attachments?.[0]?.id, attachmentId);
  t.equal(received.attachments?.[0]?.filename, 'notes.txt');
  const download = await fetch(`${s.config.mediaPublicUrl}/attachments/${attachmentId}/notes.txt`);
  t.equal(download.status, 200, 'the attachment is served once used');
  t.equal(await download.text(), 'plain text attachment\n');

  // A custom emoji: created from an `emojis` upload, it reaches the member (EmojiCreate), is used in a
  // reaction, and is deleted (EmojiDelete).
  const emojiFile = await owner.uploadFile('emojis', new File([png], 'party.png', { type: 'image/png' }));
  const emoji = await server.createEmoji(emojiFile, { name: 'party' });
  t.equal(emoji.id, emojiFile, 'the emoji id is the upload id');
  t.equal(emoji.name, 'party');
  await until('EmojiCreate reaches the member', () => member.emojis.get(emoji.id));
  await got.react(emoji.id);
  await until('a reaction with the custom emoji', () => owner.messages.get(sent.id)?.reactions.get(emoji.id)?.has(member.user!.id));
  const reconnected = new Client({ baseURL: s.apiUrl, autoReconnect: false }, owner.configuration);
  reconnected.useExistingSession(ownerSession);
  await new Promise<void>((resolve) => {
    reconnected.once('ready', () => resolve());
    reconnected.connect();
  });
  t.equal(reconnected.emojis.get(emoji.id)?.name, 'party', 'Ready lists the server\'s emoji');
  reconnected.events.disconnect();
  await emoji.delete();
  await until('EmojiDelete reaches the member', () => !member.emojis.get(emoji.id));

  // Delete a message: gone from the member's cache, and from history.
  await withFile.delete();
  await until('MessageDelete reaches the member', () => !member.messages.get(withFile.id));
  const after = (await member.api.get(`/channels/${chat.id}/messages`, {})) as Array<{ _id: string }>;
  t.notOk(after.some((m) => m._id === withFile.id), 'history no longer has it');

  // Kick: the member's client drops the server.
  await server.kickUser(member.user!.id);
  await until('ServerMemberLeave of itself removes the server from the member', () => !member.servers.get(server.id));

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

  await until('the client\'s heartbeat gets its Pong', () => owner.events.ping() >= 0);
  t.equal(owner.events.state(), 2, 'and is still connected');
  owner.events.disconnect();
  assertTraffic(t, traffic);
  const sends = traffic.received.filter((r) => r.method === 'POST' && /^\/channels\/[^/]+\/messages$/.test(r.url.split('?')[0]!));
  t.equal(sends.length, 3, 'three sends');
  t.ok(sends.every((r) => /^[0-9A-Z]{26}$/.test(r.idempotencyKey ?? '')), 'each with an Idempotency-Key (a ULID)');
  t.ok(traffic.received.some((r) => r.method === 'PUT' && r.url.includes('/reactions/%F0%9F%91%8D')), 'the emoji arrived percent-encoded');
  t.ok(traffic.received.some((r) => r.method === 'DELETE' && r.url.endsWith('/reactions/%F0%9F%91%8D?remove_all=false')), 'unreact sent ?remove_all=false');
});
