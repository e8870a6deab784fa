// The published revolt.js 7.2 client, unmodified, against this service: the flow of clients.stoat.test.ts
// (servers, channels, roles, a second client following through the gateway, messages with a masquerade,
// history, edit, reactions, pin, an attachment, custom emoji, deletions). Its bundled revolt-api 0.8.5-1
// rejects every empty 204 answer with a SyntaxError (revolt-client.md §3) and returns error bodies as data:
// the service keeps its 204s, and each such step is confirmed with a follow-up read. Every answer is checked
// against the stoat-api OpenAPI document (helpers/realClients.ts). The client quirk that Node's fetch cannot
// show (the empty `?` both clients append) is sent byte for byte with node:http at the end.
import t from 'tap';
import sharp from 'sharp';
import { Client } from 'revolt.js';
import { Permission as P } from '../src/permissions/bits.ts';
import { startTestService } from './helpers/service.ts';
import { assertTraffic, clearClientIntervalsAtTeardown, installWebSocket, rawRequest, traceClients } from './helpers/realClients.ts';
import { until } from './helpers/wait.ts';

installWebSocket();

const V = Number(P.ViewChannel);

/** Runs a revolt.js call that the service answers with 204: revolt-api 0.8.5-1 rejects it with a SyntaxError. */
async function expect204(p: Promise<unknown>): Promise<void> {
  const outcome = await p.then(
    (v) => ({ ok: true as const, v }),
    (e: unknown) => ({ ok: false as const, e }),
  );
  if (outcome.ok) throw new Error(`expected revolt.js to choke on a 204, got ${JSON.stringify(outcome.v)}`);
  if (!(outcome.e instanceof SyntaxError)) throw outcome.e;
}

/** A revolt.js client logged in (the workable flow of revolt-client.md §4), onboarded and ready. */
async function readyClient(
  t: { teardown(fn: () => unknown): void },
  apiUrl: string,
  name: string,
  options: { heartbeatInterval?: number } = {},
): Promise<{ client: Client; session: { token: string; _id: string; user_id: string } }> {
  const config = await (await fetch(`${apiUrl}/`)).json();
  const client = new Client({ baseURL: apiUrl, autoReconnect: false, ...options }, config);
  t.teardown(() => client.events.disconnect());
  const email = `${name}.${Date.now()}@example.test`;
  const password = 'correct horse battery';
  await expect204(client.api.post('/auth/account/create', { email, password }));
  const session = (await client.api.post('/auth/session/login', { email, password, friendly_name: 'revolt.js test' })) as any;
  if (session.result !== 'Success') throw new Error(`login failed: ${JSON.stringify(session)}`);
  client.useExistingSession(session);
  const hello = (await client.api.get('/onboard/hello')) as { onboarding: boolean };
  if (!hello.onboarding) throw new Error('expected onboarding');
  await client.api.post('/onboard/complete', { username: name });
  const ready = new Promise<void>((resolve) => client.once('ready', () => resolve()));
  client.connect();
  await ready;
  return { client, session };
}

t.test('revolt.js against the service', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const traffic = traceClients(t, s);
  clearClientIntervalsAtTeardown(t);

  const { client: owner, session: ownerSession } = await readyClient(t, s.apiUrl, `rvowner${process.pid}`, { heartbeatInterval: 1 });
  t.equal(owner.ready(), true);
  t.equal(owner.user?.username, `rvowner${process.pid}`, 'client.user from Ready');

  const server = await owner.servers.createServer({ name: 'Revolt server' });
  t.equal(server.name, 'Revolt server');
  const general = server.channels[0]!;
  const chat = await server.createChannel({ type: 'Text', name: 'chat' });
  t.equal(chat.name, 'chat');
  const role = (await server.createRole('mods')) as { id: string; role: { name: string } };
  t.equal(role.role.name, 'mods');
  await until('ServerRoleUpdate adds the role', () => server.roles.get(role.id));
  await server.setPermissions(role.id, { allow: Number(P.ManageMessages), deny: 0 });
  await until('role permissions arrive', () => Number(server.roles.get(role.id)?.permissions.a) === Number(P.ManageMessages));
  const edited = (await server.editRole(role.id, { colour: '#00ff00' })) as { colour?: string };
  t.equal(edited.colour, '#00ff00');
  await server.edit({ categories: [{ id: 'cat', title: 'Main', channels: [general.id, chat.id] }] });
  t.same(server.categories?.[0]?.channels, [general.id, chat.id]);

  // A second client joins and follows the owner's changes.
  const { client: member } = await readyClient(t, s.apiUrl, `rvmember${process.pid}`);
  const invite = (await chat.createInvite()) as { _id: string };
  await member.api.post(`/invites/${invite._id}` as '/invites/{target}');
  await until('ServerCreate reaches the joining client', () => member.servers.get(server.id));
  // The owner's profile changes reach the member's client while the server is active for it (Subscribe, as
  // Stoat's bonfire gates its member topic; gateway.subscribe.test.ts). Sent long before the avatar edit below.
  // (Neither revolt.js 7.2's nor stoat.js's protocol types list Subscribe; the frame is sent as is.)
  member.events.send({ type: 'Subscribe', server_id: server.id } as never);
  await member.servers.get(server.id)!.syncMembers();
  await chat.edit({ name: 'chat-renamed' });
  await until('ChannelUpdate reaches the member', () => member.channels.get(chat.id)?.name === 'chat-renamed');

  // Hidden and shown again by a channel permission.
  await chat.setPermissions('default', { allow: 0, deny: V });
  await until('ChannelDelete removes the hidden channel', () => !member.channels.get(chat.id));
  await chat.setPermissions('default', { allow: V, deny: 0 });
  await until('ChannelCreate brings it back', () => member.channels.get(chat.id)?.name === 'chat-renamed');

  // Typing.
  const typing = new Promise<string>((resolve) => member.on('channelStartTyping', (channel, user) => resolve(`${channel.id}:${user?.id}`)));
  general.startTyping();
  t.equal(await typing, `${general.id}:${owner.user!.id}`);

  // revolt.js 7.2 has no upload helper: its users POST the form themselves and pass the id on.
  const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#ff8800' } }).png().toBuffer();
  const form = new FormData();
  form.append('file', new File([png], 'a.png', { type: 'image/png' }));
  const upload = await fetch(`${owner.configuration!.features.autumn.url}/avatars`, { method: 'POST', body: form, headers: { 'X-Session-Token': ownerSession.token } });
  t.equal(upload.status, 200);
  const { id: fileId } = (await upload.json()) as { id: string };
  await owner.user!.edit({ avatar: fileId });
  await until('UserUpdate brings the avatar to the member', () => member.users.get(owner.user!.id)?.avatar?.id === fileId);

  // A masquerade avatar upload (same manual upload).
  const upload2 = new FormData();
  upload2.append('file', new File([png], 'masq.png', { type: 'image/png' }));
  const masqRes = await fetch(`${owner.configuration!.features.autumn.url}/avatars`, { method: 'POST', body: upload2, headers: { 'X-Session-Token': ownerSession.token } });
  const masqFile = ((await masqRes.json()) as { id: string }).id;
  const masquerade = { name: 'Herald', avatar: `${s.config.mediaPublicUrl}/avatars/${masqFile}`, colour: '#0000ff' };

  // Messages: send with a masquerade, receive as an event, history, edit.
  const sent = await chat.sendMessage({ content: 'hello from revolt.js', masquerade });
  t.same(sent.masquerade, masquerade);
  const got = await until('Message event reaches the member', () => member.messages.get(sent.id));
  t.equal(got.content, 'hello from revolt.js');
  t.equal(got.username, 'Herald');
  const history = (await member.api.get(`/channels/${chat.id}/messages` as '/channels/{target}/messages', { limit: 5 })) as Array<{ _id: string }>;
  t.same(history.map((m) => m._id), [sent.id], 'history');
  const editedMsg = (await sent.edit({ content: 'edited by revolt.js' })) as { content: string };
  t.equal(editedMsg.content, 'edited by revolt.js');
  await until('MessageUpdate reaches the member', () => member.messages.get(sent.id)?.content === 'edited by revolt.js');

  // React / unreact (204 each): the events and a fetch confirm them.
  const msgPath = `/channels/${chat.id}/messages/${sent.id}` as '/channels/{target}/messages/{msg}';
  await expect204(got.react('🎉'));
  await until('MessageReact reaches the owner', () => owner.messages.get(sent.id)?.reactions.get('🎉')?.has(member.user!.id));
  t.same(((await owner.api.get(msgPath)) as { reactions?: unknown }).reactions, { '🎉': [member.user!.id] }, 'a fetch confirms the reaction');
  await expect204(got.unreact('🎉'));
  await until('MessageUnreact reaches the owner', () => !owner.messages.get(sent.id)?.reactions.get('🎉')?.has(member.user!.id));
  t.notOk(((await owner.api.get(msgPath)) as { reactions?: unknown }).reactions, 'a fetch confirms it is gone');

  // Pin: revolt.js 7.2 has no helper, its users call the route (204).
  await expect204(owner.api.post(`/channels/${chat.id}/messages/${sent.id}/pin` as '/channels/{target}/messages/{msg}/pin'));
  t.equal(((await member.api.get(msgPath)) as { pinned?: boolean }).pinned, true, 'a fetch confirms the pin');

  // A custom emoji from an `emojis` upload; deleting it answers 204.
  const upload3 = new FormData();
  upload3.append('file', new File([png], 'e.png', { type: 'image/png' }));
  const emojiRes = await fetch(`${owner.configuration!.features.autumn.url}/emojis`, { method: 'POST', body: upload3, headers: { 'X-Session-Token': ownerSession.token } });
  const emojiFile = ((await emojiRes.json()) as { id: string }).id;
  const emoji = await server.createEmoji(emojiFile, { name: 'wave' });
  t.equal(emoji.name, 'wave');
  await until('EmojiCreate reaches the member', () => member.emojis.get(emoji.id));
  await expect204(emoji.delete());
  await until('EmojiDelete reaches the member', () => !member.emojis.get(emoji.id));
  const emojis = (await owner.api.get(`/servers/${server.id}/emojis` as '/servers/{target}/emojis')) as unknown[];
  t.same(emojis, [], 'a fetch confirms the deletion');

  // An attachment: uploaded by hand (no helper in 7.2), sent with a message, received by the member.
  const upload4 = new FormData();
  upload4.append('file', new File([Buffer.from('revolt.js attachment')], 'r.txt', { type: 'text/plain' }));
  const attRes = await fetch(`${owner.configuration!.features.autumn.url}/attachments`, { method: 'POST', body: upload4, headers: { 'X-Session-Token': ownerSession.token } });
  const attachmentId = ((await attRes.json()) as { id: string }).id;
  const withFile = await chat.sendMessage({ content: 'file', attachments: [attachmentId] });
  const receivedFile = await until('the message with the attachment reaches the member', () => member.messages.get(withFile.id));
  t.equal(receivedFile.attachments?.[0]?.filename, 'r.txt');

  // Delete the message (204).
  await expect204(sent.delete());
  await until('MessageDelete reaches the member', () => !member.messages.get(sent.id));
  const gone = (await owner.api.get(msgPath)) as unknown as { type: string };
  t.equal(gone.type, 'NotFound', 'a fetch confirms the deletion');

  // Kick (204): rejected by revolt-api, the effect is there.
  await expect204(server.kickUser(member.user!.id));
  await until('the kicked client drops the server', () => !member.servers.get(server.id));
  const members = (await owner.api.get(`/servers/${server.id}/members` as '/servers/{target}/members')) as { members: Array<{ _id: { user: string } }> };
  t.notOk(members.members.some((m) => m._id.user === member.user!.id), 'a follow-up read confirms the kick');

  // Delete the server (204): the ServerDelete event removes it from the client, a read confirms it.
  const doomed = await owner.servers.createServer({ name: 'Doomed' });
  await expect204(doomed.delete());
  await until('ServerDelete removes it from the owner\'s client', () => !owner.servers.get(doomed.id));
  const goneServer = (await owner.api.get(`/servers/${doomed.id}` as '/servers/{target}')) as unknown as { type: string };
  t.equal(goneServer.type, 'NotFound', 'revolt-api hands the error body back as data');

  await until('the client\'s heartbeat gets its Pong', () => owner.events.ping() >= 0);
  owner.events.disconnect();
  member.events.disconnect();
  assertTraffic(t, traffic);
  const sends = traffic.received.filter((r) => r.method === 'POST' && /^\/channels\/[^/]+\/messages$/.test(r.url.split('?')[0]!));
  t.ok(sends.length === 2 && sends.every((r) => /^[0-9A-Z]{26}$/.test(r.idempotencyKey ?? '')), 'each send carried an Idempotency-Key');
  t.ok(traffic.received.some((r) => r.url.includes('/reactions/%F0%9F%8E%89')), 'the emoji arrived percent-encoded');

  t.test('what the clients send, byte for byte', async (t) => {
    const token = ownerSession.token;
    // Both clients build `${path}?${query}`: an empty query leaves a bare `?`.
    const fetched = await rawRequest(s.apiUrl, 'GET', `/servers/${server.id}?`, { token });
    t.equal(fetched.status, 200);
    t.equal((fetched.body as { _id: string })._id, server.id);
    const patched = await rawRequest(s.apiUrl, 'PATCH', `/channels/${chat.id}?`, { token, body: JSON.stringify({ description: 'via ?' }) });
    t.equal(patched.status, 200, patched.text);
    t.equal((patched.body as { description: string }).description, 'via ?', 'a text/plain JSON body is read');
    const role2 = await rawRequest(s.apiUrl, 'POST', `/servers/${server.id}/roles?`, { token, body: '{"name":"r2"}' });
    t.equal(role2.status, 200);
    const del = await rawRequest(s.apiUrl, 'DELETE', `/servers/${server.id}/roles/${(role2.body as { id: string }).id}?`, { token, body: '{}' });
    t.equal(del.status, 204, 'a {} body on DELETE is fine');
    t.equal(del.text, '', '204 has no body');
    const bad = await rawRequest(s.apiUrl, 'PATCH', `/channels/${chat.id}?`, { token, body: '{"name":' });
    t.same([bad.status, (bad.body as { type: string }).type], [400, 'FailedValidation'], 'malformed JSON is a 400, never a 500');
  });
});
