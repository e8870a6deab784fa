// HTTP tests of messages: the send shape, strict bodies, every limit at N and N+1 (code points), mentions,
// masquerade permissions, edit, delete, bulk delete, pins, reactions, client events, read-model cleanup on
// channel and server deletion, and projection replay.
import { scanKeys } from '../src/redis.ts';
import t from 'tap';
import { Permission as P } from '../src/permissions/bits.ts';
import { generationPrefix, generationPrefixes, rm } from '../src/readmodel/keys.ts';
import { signup, type TestUser } from './helpers/http.ts';
import { createEmoji } from './helpers/messages.ts';
import { clientEvents, createServer, dumpGeneration, dumpRebuild, join, roleWith } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';

/** `n` code points, each an astral character (two UTF-16 units), so a UTF-16 length check would fail. */
const cp = (n: number) => '😀'.repeat(n);
const enc = encodeURIComponent;

t.test('messages', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [owner, member, other, outsider] = await Promise.all([signup(s), signup(s), signup(s), signup(s)]);
  const srv = await createServer(owner, 'Messages');
  await join(owner, srv.general, member, other);
  const C = `/channels/${srv.general}`;
  const send = (u: TestUser, body: unknown, headers: Record<string, string> = {}, channel = srv.general) =>
    u.api.post(`/channels/${channel}/messages`, body, { headers });

  t.test('send: the created message with nonce, user and member', async (t) => {
    const r = await send(member, { content: 'hello' });
    t.equal(r.status, 200);
    t.match(r.body, { _id: String, nonce: String, channel: srv.general, author: member.userId, content: 'hello' });
    t.equal(r.body.nonce.length, 26, 'a fresh ULID nonce without a key');
    t.not(r.body.nonce, r.body._id);
    t.same(r.body.user, { _id: member.userId, username: member.username, discriminator: r.body.user.discriminator, relationship: 'User', online: true });
    t.same(r.body.member._id, { server: srv.id, user: member.userId });
    for (const absent of ['reactions', 'pinned', 'edited', 'mentions', 'embeds', 'attachments', 'masquerade', 'flags', 'revision']) {
      t.notOk(absent in r.body, `${absent} omitted`);
    }
    const fetched = await member.api.get(`${C}/messages/${r.body._id}`);
    const { user: _u, member: _m, ...message } = r.body;
    t.same(fetched.body, message, 'the fetched message is the created one without user and member');
    t.equal((await owner.api.get(C)).body.last_message_id, r.body._id, 'the channel knows its last message');
    t.equal((await outsider.api.get(`${C}/messages/${r.body._id}`)).status, 404, 'a non-member gets 404');
    t.equal((await outsider.api.post(`${C}/messages`, { content: 'x' })).status, 404);
    t.equal((await member.api.get(`${C}/messages/01HZZZZZZZZZZZZZZZZZZZZZZZ`)).status, 404);
    const elsewhere = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'elsewhere' })).body._id;
    t.equal((await member.api.get(`/channels/${elsewhere}/messages/${r.body._id}`)).status, 404, 'a message of another channel');
    // revolt.js sends JSON as text/plain.
    const plain = await member.api.post(`${C}/messages`, undefined, { rawBody: JSON.stringify({ content: 'plain' }), contentType: 'text/plain;charset=UTF-8' });
    t.equal(plain.body.content, 'plain');
  });

  t.test('strict bodies: British spelling, unknown fields', async (t) => {
    const color = await send(owner, { content: 'x', masquerade: { name: 'n', color: '#fff' } });
    t.same([color.status, color.body.type], [400, 'FailedValidation']);
    t.match(color.body.error, /color/);
    t.match((await send(owner, { content: 'x', embeds: [{ title: 't', color: '#fff' }] })).body.error, /color/);
    t.match((await send(owner, { content: 'x', banana: 1 })).body.error, /banana/);
    t.equal((await send(owner, { content: 'x', masquerade: { colour: 'red' } })).body.type, 'FailedValidation', 'colour is hex');
    t.equal((await send(owner, { content: 'x', masquerade: { colour: '#abcd' } })).body.type, 'FailedValidation');
    t.equal((await send(owner, { content: 'x', embeds: [{ colour: 'blue' }] })).body.type, 'FailedValidation');
    t.equal((await send(owner, { content: 5 })).body.type, 'FailedValidation');
    t.equal((await send(owner, { content: 'x', replies: [{ id: 'a' }] })).body.type, 'FailedValidation', 'mention is required');
    t.equal((await owner.api.patch(`${C}/messages/01HZZZZZZZZZZZZZZZZZZZZZZZ`, { content: 'x', pinned: true })).body.type, 'FailedValidation');
  });

  t.test('limits at N and N+1, counted in code points', async (t) => {
    const ok = async (body: unknown, what: string) => {
      const r = await send(owner, body);
      t.equal(r.status, 200, `${what}: ${r.status === 200 ? 'passes' : r.text}`);
      return r;
    };
    const bad = async (body: unknown, status: number, type: string, what: string) => {
      const r = await send(owner, body);
      t.same([r.status, r.body?.type], [status, type], what);
      return r;
    };
    await ok({ content: cp(2000) }, 'content 2000 code points (4000 UTF-16 units)');
    await bad({ content: cp(2001) }, 400, 'FailedValidation', 'content 2001 code points');
    await ok({ content: 'x', masquerade: { name: cp(32) } }, 'masquerade name 32');
    await bad({ content: 'x', masquerade: { name: cp(33) } }, 400, 'FailedValidation', 'masquerade name 33');
    await bad({ content: 'x', masquerade: { name: '' } }, 400, 'FailedValidation', 'masquerade name empty');
    await ok({ embeds: Array.from({ length: 5 }, (_, i) => ({ title: `t${i}` })) }, '5 embeds');
    const six = await bad({ embeds: Array.from({ length: 6 }, (_, i) => ({ title: `t${i}` })) }, 400, 'TooManyEmbeds', '6 embeds');
    t.equal(six.body.max, 5);
    const target = (await send(owner, { content: 'target' })).body._id;
    await ok({ content: 'r', replies: Array.from({ length: 5 }, () => ({ id: target, mention: false })) }, '5 replies');
    const sixReplies = await bad({ content: 'r', replies: Array.from({ length: 6 }, () => ({ id: target, mention: false })) }, 400, 'TooManyReplies', '6 replies');
    t.equal(sixReplies.body.max, 5);
    const sixFiles = await bad({ content: 'x', attachments: ['a', 'b', 'c', 'd', 'e', 'f'] }, 400, 'TooManyAttachments', '6 attachments');
    t.equal(sixFiles.body.max, 5);
    await ok({ embeds: [{ title: cp(100), description: cp(2000 - 100) }] }, 'embed title 100 + description 1900');
    await bad({ embeds: [{ title: cp(101) }] }, 400, 'FailedValidation', 'embed title 101');
    await bad({ embeds: [{ description: cp(2001) }] }, 400, 'FailedValidation', 'embed description 2001');
    await ok({ embeds: [{ url: cp(256), icon_url: cp(256) }] }, 'url and icon_url 256');
    await bad({ embeds: [{ url: cp(257) }] }, 400, 'FailedValidation', 'url 257');
    await bad({ embeds: [{ icon_url: cp(257) }] }, 400, 'FailedValidation', 'icon_url 257');
    // The ceiling: content + every embed's title and description, in code points.
    await ok({ content: cp(1000), embeds: [{ title: cp(100), description: cp(400) }, { title: cp(100), description: cp(400) }] }, 'body 2000');
    await bad({ content: cp(1000), embeds: [{ title: cp(100), description: cp(400) }, { title: cp(100), description: cp(401) }] }, 422, 'PayloadTooLarge', 'body 2001');
    await bad({ content: cp(1), embeds: [{ description: cp(2000) }] }, 422, 'PayloadTooLarge', 'content 1 + description 2000');
    await bad({}, 422, 'EmptyMessage', 'nothing');
    await bad({ content: '' }, 422, 'EmptyMessage', 'empty content');
    await ok({ content: '', embeds: [{ title: 't' }] }, 'an embed alone');
    await bad({ content: 'x', nonce: cp(65) }, 400, 'FailedValidation', 'a body nonce of 65');
  });

  t.test('mentions: members who can see the channel, roles, everyone', async (t) => {
    const hidden = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'hidden' })).body._id;
    const blind = await roleWith(owner, srv.id, 0n, [other], 'blind');
    await owner.api.put(`/channels/${hidden}/permissions/${blind}`, { permissions: { allow: 0, deny: Number(P.ViewChannel) } });
    const content = `<@${member.userId}> <@${other.userId}> <@${outsider.userId}> <@01HZZZZZZZZZZZZZZZZZZZZZZZ>`;
    t.same((await send(owner, { content }, {}, hidden)).body.mentions, [member.userId], 'only members who can view the channel');
    t.same((await send(owner, { content })).body.mentions, [member.userId, other.userId]);
    const mentioner = await signup(s);
    await join(owner, srv.general, mentioner);
    const everyone = await send(mentioner, { content: 'hey @everyone' });
    t.same([everyone.status, everyone.body.type, everyone.body.permission], [403, 'MissingPermission', 'MentionEveryone']);
    t.equal((await send(mentioner, { content: 'hey @online' })).body.permission, 'MentionEveryone');
    t.equal((await send(mentioner, { content: `\`@everyone\` \`\`\`\n@online\n\`\`\` \\@everyone` })).status, 200, 'inside code or escaped: no mention');
    const roleMention = await send(mentioner, { content: `<%${blind}>` });
    t.same([roleMention.status, roleMention.body.permission], [403, 'MentionRoles']);
    const granted = await roleWith(owner, srv.id, P.MentionEveryone | P.MentionRoles, [mentioner], 'mentioner');
    const ok = await send(mentioner, { content: `@everyone @online <%${blind}> <%${granted}> <%01HZZZZZZZZZZZZZZZZZZZZZZZ>` });
    t.equal(ok.status, 200);
    t.same(ok.body.role_mentions, [blind, granted], 'roles of the server only');
    t.equal(ok.body.flags, 12, 'MentionsEveryone | MentionsOnline');
    const emoji = await send(member, { content: 'look <:01HZZZZZZZZZZZZZZZZZZZZZZZ:>' });
    t.equal(emoji.body.content, 'look <:01HZZZZZZZZZZZZZZZZZZZZZZZ:>', 'custom emoji stored as written');
    // Replies: mention flag, missing targets.
    const target = (await send(other, { content: 'target' })).body._id;
    const reply = await send(member, { content: 'r', replies: [{ id: target, mention: true }] });
    t.same([reply.body.replies, reply.body.mentions], [[target], [other.userId]]);
    t.same((await send(member, { content: 'r', replies: [{ id: target, mention: false }] })).body.mentions, undefined);
    t.equal((await send(member, { content: 'r', replies: [{ id: '01HZZZZZZZZZZZZZZZZZZZZZZZ', mention: false }] })).status, 404);
    const skipped = await send(member, { content: 'r', replies: [{ id: '01HZZZZZZZZZZZZZZZZZZZZZZZ', mention: false, fail_if_not_exists: false }] });
    t.same([skipped.status, skipped.body.replies], [200, undefined]);
  });

  t.test('masquerade: Masquerade for the name, ManageRole too for the colour', async (t) => {
    const masker = await signup(s);
    await join(owner, srv.general, masker);
    t.equal((await send(masker, { content: 'x', masquerade: { name: 'bot' } })).body.permission, 'Masquerade');
    await roleWith(owner, srv.id, P.Masquerade, [masker], 'masq');
    const named = await send(masker, { content: 'x', masquerade: { name: 'bot' } });
    t.same(named.body.masquerade, { name: 'bot' });
    const colour = await send(masker, { content: 'x', masquerade: { name: 'bot', colour: '#ff0000' } });
    t.same([colour.status, colour.body.permission], [403, 'ManageRole']);
    await roleWith(owner, srv.id, P.ManageRole, [masker], 'colours');
    t.same((await send(masker, { content: 'x', masquerade: { colour: '#f00' } })).body.masquerade, { colour: '#f00' });
  });

  t.test('edit: author only, sets edited, shows on the next read', async (t) => {
    const m = (await send(member, { content: 'before' })).body;
    const e = await member.api.patch(`${C}/messages/${m._id}`, { content: 'after' });
    t.equal(e.status, 200);
    t.match(e.body, { _id: m._id, content: 'after', edited: String });
    t.notOk('user' in e.body);
    t.same((await owner.api.get(`${C}/messages/${m._id}`)).body, e.body, 'read-your-writes');
    const byOwner = await owner.api.patch(`${C}/messages/${m._id}`, { content: 'hijack' });
    t.same([byOwner.status, byOwner.body.type], [403, 'CannotEditMessage'], 'even the owner cannot edit another\'s message');
    t.equal((await member.api.patch(`${C}/messages/${m._id}`, { content: cp(2000) })).status, 200, 'edit content 2000');
    t.equal((await member.api.patch(`${C}/messages/${m._id}`, { content: cp(2001) })).body.type, 'FailedValidation', 'edit content 2001');
    t.equal((await member.api.patch(`${C}/messages/${m._id}`, { content: '' })).body.type, 'FailedValidation');
    t.equal((await member.api.patch(`${C}/messages/${m._id}`, { embeds: [{ title: 't' }] })).body.type, 'PayloadTooLarge', '2000 + 1');
    const embeds = await member.api.patch(`${C}/messages/${m._id}`, { content: 'short', embeds: [{ title: 'T', description: 'D' }] });
    t.same(embeds.body.embeds, [{ type: 'Text', title: 'T', description: 'D' }]);
    t.equal((await member.api.patch(`${C}/messages/${m._id}`, { embeds: Array.from({ length: 6 }, () => ({ title: 't' })) })).body.type, 'TooManyEmbeds');
    t.equal((await outsider.api.patch(`${C}/messages/${m._id}`, { content: 'x' })).status, 404);
    t.equal((await member.api.patch(`${C}/messages/01HZZZZZZZZZZZZZZZZZZZZZZZ`, { content: 'x' })).status, 404);
  });

  t.test('delete: the author or ManageMessages; bulk delete', async (t) => {
    const own = (await send(member, { content: 'mine' })).body._id;
    const others = (await send(other, { content: 'theirs' })).body._id;
    t.equal((await member.api.del(`${C}/messages/${own}`)).status, 204, 'the author');
    t.equal((await member.api.get(`${C}/messages/${own}`)).status, 404, 'gone on the next read');
    t.equal((await member.api.del(`${C}/messages/${own}`)).status, 404, 'deleted twice');
    const refused = await member.api.del(`${C}/messages/${others}`);
    t.same([refused.status, refused.body.permission], [403, 'ManageMessages']);
    t.equal((await owner.api.del(`${C}/messages/${others}`)).status, 204, 'the owner moderates');

    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await send(member, { content: `bulk ${i}` })).body._id);
    const keep = (await send(member, { content: 'keep' })).body._id;
    t.equal((await member.api.del(`${C}/messages/bulk`, { ids })).body.permission, 'ManageMessages');
    t.equal((await owner.api.del(`${C}/messages/bulk`, { ids: [] })).body.type, 'FailedValidation', 'no ids');
    t.equal((await owner.api.del(`${C}/messages/bulk`, { ids: Array.from({ length: 101 }, () => keep) })).body.type, 'FailedValidation', '101 ids');
    t.equal((await owner.api.del(`${C}/messages/bulk`, { ids: ['not-a-ulid'] })).body.type, 'InvalidOperation');
    t.equal((await owner.api.del(`${C}/messages/bulk`, { ids: ['01ARZ3NDEKTSV4RRFFQ69G5FAV'] })).body.type, 'InvalidOperation', 'older than 7 days');
    const before = await s.store.headPosition();
    t.equal((await owner.api.del(`${C}/messages/bulk`, { ids: [...ids, '01HZZZZZZZZZZZZZZZZZZZZZZZ'.replace('HZZ', 'M9Z')] })).status, 204, 'an unknown id is skipped');
    for (const id of ids) t.equal((await owner.api.get(`${C}/messages/${id}`)).status, 404);
    t.equal((await owner.api.get(`${C}/messages/${keep}`)).status, 200);
    const deleted: Array<{ stream: string; position: bigint }> = [];
    for await (const e of s.store.readAll({ after: before! })) if (e.type === 'MessageDeleted') deleted.push(e);
    t.same(deleted.map((e) => e.stream).sort(), ids.map((id) => `message-${id}`).sort(), 'one MessageDeleted per message');
    t.same(deleted.map((e) => e.position), deleted.map((_, i) => deleted[0]!.position + BigInt(i)), 'appended together (one atomic append)');
  });

  t.test('pins: ManageMessages, AlreadyPinned, NotPinned, system messages', async (t) => {
    const m = (await send(member, { content: 'pin me' })).body._id;
    const refused = await member.api.post(`${C}/messages/${m}/pin`);
    t.same([refused.status, refused.body.permission], [403, 'ManageMessages']);
    t.equal((await owner.api.post(`${C}/messages/${m}/pin`)).status, 204);
    t.equal((await member.api.get(`${C}/messages/${m}`)).body.pinned, true, 'pinned: true on the next read');
    t.equal((await owner.api.post(`${C}/messages/${m}/pin`)).body.type, 'AlreadyPinned');
    const latest = (await member.api.get(`${C}/messages?limit=1`)).body[0];
    t.match(latest, { author: '00000000000000000000000000', system: { type: 'message_pinned', id: m, by: owner.userId } });
    t.equal((await owner.api.del(`${C}/messages/${m}/pin`)).status, 204);
    t.notOk('pinned' in (await member.api.get(`${C}/messages/${m}`)).body, 'omitted when false');
    t.equal((await owner.api.del(`${C}/messages/${m}/pin`)).body.type, 'NotPinned');
    t.match((await member.api.get(`${C}/messages?limit=1`)).body[0], { system: { type: 'message_unpinned', id: m, by: owner.userId } });
    t.equal((await owner.api.post(`${C}/messages/01HZZZZZZZZZZZZZZZZZZZZZZZ/pin`)).status, 404);
  });

  t.test('reactions: unicode and custom emoji, 20 distinct, user_id and remove_all', async (t) => {
    const m = (await send(member, { content: 'react' })).body._id;
    const R = `${C}/messages/${m}/reactions`;
    t.equal((await member.api.put(`${R}/${enc('👍')}`)).status, 204, 'percent-encoded unicode emoji');
    t.equal((await other.api.put(`${R}/${enc('👍')}`)).status, 204);
    t.equal((await other.api.put(`${R}/${enc('👍')}`)).status, 204, 'again: nothing changes');
    t.same((await member.api.get(`${C}/messages/${m}`)).body.reactions, { '👍': [member.userId, other.userId] });
    t.equal((await member.api.put(`${R}/notanemoji`)).body.type, 'InvalidOperation');
    t.equal((await member.api.put(`${R}/01HZZZZZZZZZZZZZZZZZZZZZZZ`)).status, 404, 'an unknown custom emoji');
    const emoji = await createEmoji(s, owner, srv.id, 'party');
    t.equal((await member.api.put(`${R}/${emoji._id}`)).status, 204, 'a custom emoji of the server');
    for (let i = 0; i < 18; i++) t.equal((await member.api.put(`${R}/${enc(String.fromCodePoint(0x1f600 + i))}`)).status, 204);
    t.equal(Object.keys((await member.api.get(`${C}/messages/${m}`)).body.reactions).length, 20, '20 distinct emoji');
    const over = await member.api.put(`${R}/${enc('🚀')}`);
    t.same([over.status, over.body.type], [400, 'InvalidOperation'], 'the 21st distinct emoji');
    t.equal((await owner.api.put(`${R}/${enc('👍')}`)).status, 204, 'another user on an existing emoji');

    // Removal: own reaction; another user's or all of one emoji need ManageMessages; "false" is false.
    t.equal((await other.api.del(`${R}/${enc('👍')}?remove_all=false`)).status, 204, 'remove_all=false needs nothing more');
    t.same((await member.api.get(`${C}/messages/${m}`)).body.reactions['👍'], [member.userId, owner.userId]);
    t.equal((await other.api.del(`${R}/${enc('👍')}`)).status, 404, 'a reaction that is not there');
    t.equal((await other.api.del(`${R}/${enc('👍')}?user_id=${member.userId}`)).body.permission, 'ManageMessages');
    t.equal((await other.api.del(`${R}/${enc('👍')}?remove_all=true`)).body.permission, 'ManageMessages');
    t.equal((await other.api.del(`${R}/${enc('👍')}?remove_all=maybe`)).body.type, 'FailedValidation');
    t.equal((await owner.api.del(`${R}/${enc('👍')}?user_id=${member.userId}`)).status, 204);
    t.same((await member.api.get(`${C}/messages/${m}`)).body.reactions['👍'], [owner.userId]);
    t.equal((await owner.api.del(`${R}/${enc('😀')}?remove_all=true`)).status, 204);
    t.notOk('😀' in (await member.api.get(`${C}/messages/${m}`)).body.reactions);
    t.equal((await member.api.del(R)).body.permission, 'ManageMessages');
    t.equal((await owner.api.del(R)).status, 204);
    t.notOk('reactions' in (await member.api.get(`${C}/messages/${m}`)).body, 'cleared');
  });

  t.test('client events on the channel route', async (t) => {
    const ch = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'events' })).body._id;
    const E = `/channels/${ch}/messages`;
    const sent = (await send(member, { content: 'ev' }, { 'Idempotency-Key': 'events-key' }, ch)).body;
    await member.api.patch(`${E}/${sent._id}`, { content: 'ev2' });
    await other.api.put(`${E}/${sent._id}/reactions/${enc('👍')}`);
    await other.api.del(`${E}/${sent._id}/reactions/${enc('👍')}`);
    await other.api.put(`${E}/${sent._id}/reactions/${enc('🎉')}`);
    await owner.api.del(`${E}/${sent._id}/reactions/${enc('🎉')}?remove_all=true`);
    await other.api.put(`${E}/${sent._id}/reactions/${enc('🎉')}`);
    await owner.api.del(`${E}/${sent._id}/reactions`);
    await owner.api.post(`${E}/${sent._id}/pin`);
    await owner.api.del(`${E}/${sent._id}/pin`);
    const second = (await send(member, { content: 'two' }, {}, ch)).body._id;
    await member.api.del(`${E}/${sent._id}`);
    await owner.api.del(`${E}/bulk`, { ids: [second] });
    const events = (await clientEvents(s.redis, s.prefix)).filter((e) => e.route.channelId === ch && e.payload.type !== 'ChannelCreate');
    const route = { kind: 'channel', serverId: srv.id, channelId: ch };
    t.ok(events.every((e) => JSON.stringify(e.route) === JSON.stringify(route)), 'every message event on the channel route');
    const payloads = events.map((e) => e.payload);
    const { user: _u, member: _m, ...message } = sent;
    t.same(payloads[0], { type: 'Message', ...message });
    t.same(payloads[1], { type: 'MessageUpdate', id: sent._id, channel: ch, data: { content: 'ev2', edited: payloads[1]!.data.edited }, clear: [] });
    t.same(payloads[2], { type: 'MessageReact', id: sent._id, channel_id: ch, user_id: other.userId, emoji_id: '👍' });
    t.same(payloads[3], { type: 'MessageUnreact', id: sent._id, channel_id: ch, user_id: other.userId, emoji_id: '👍' });
    t.same(payloads[5], { type: 'MessageRemoveReaction', id: sent._id, channel_id: ch, emoji_id: '🎉' });
    t.same(payloads[7], { type: 'MessageUpdate', id: sent._id, channel: ch, data: { reactions: {} }, clear: [] });
    t.same(payloads[8], { type: 'MessageUpdate', id: sent._id, channel: ch, data: { pinned: true }, clear: [] });
    t.match(payloads[9], { type: 'Message', system: { type: 'message_pinned', id: sent._id, by: owner.userId } });
    t.same(payloads[10], { type: 'MessageUpdate', id: sent._id, channel: ch, data: {}, clear: ['Pinned'] });
    t.match(payloads[11], { type: 'Message', system: { type: 'message_unpinned' } });
    t.same(payloads[13], { type: 'MessageDelete', id: sent._id, channel: ch });
    t.same(payloads[14], { type: 'BulkMessageDelete', channel: ch, ids: [second] });
    t.equal(payloads.length, 15);
  });

  t.test('deleting a channel or a server removes its messages and emoji from the read models', async (t) => {
    const doomed = await createServer(owner, 'Doomed');
    const extra = (await owner.api.post(`/servers/${doomed.id}/channels`, { name: 'extra' })).body._id;
    for (const ch of [doomed.general, extra]) for (let i = 0; i < 3; i++) await send(owner, { content: `m${i}` }, {}, ch);
    const emojiId = (await createEmoji(s, owner, doomed.id, 'doomed'))._id;
    const keys = (ch: string) => [rm.channelHistory(ch)].map((k) => s.readModels.key(k));
    t.same(await Promise.all([...keys(doomed.general), ...keys(extra)].map((k) => s.redis.exists(k))), [1, 1]);
    t.equal((await owner.api.del(`/channels/${extra}`)).status, 204);
    t.same(await Promise.all(keys(extra).map((k) => s.redis.exists(k))), [0], 'a deleted channel\'s messages are gone');
    t.equal((await owner.api.del(`/servers/${doomed.id}`)).status, 204);
    t.same(await Promise.all(keys(doomed.general).map((k) => s.redis.exists(k))), [0], 'a deleted server\'s messages are gone');
    t.equal(await s.redis.exists(s.readModels.key(rm.emoji(emojiId))), 0, 'and its emoji');
    t.equal(await s.redis.exists(s.readModels.key(rm.serverEmojis(doomed.id))), 0);
    // On every master when the suite runs on a cluster (`npm run test:cluster`).
    const left: string[] = [];
    // The whole generation: its main slot and every shard and home slot (`generationPrefixes`).
    for (const p of generationPrefixes(s.prefix, s.readModels.generation!)) await scanKeys(s.redis, `${p}*`, async (batch) => void left.push(...batch));
    // The upload's own record (`file:<id>`, projection `files`) belongs to the media feature and stays, with the
    // marker that it is detached (projection `fileUses`), so the media server answers 404 for it.
    const mentions = left.filter((k) => k.includes(doomed.id) || k.includes(extra) || k.includes(doomed.general) || k.includes(emojiId));
    t.same(mentions.filter((k) => !k.endsWith(rm.file(emojiId)) && !k.endsWith(rm.fileDetached(emojiId))), [], 'no key mentions them');
    t.ok(mentions.some((k) => k.endsWith(rm.fileDetached(emojiId))), "the deleted emoji's file is marked detached");
  });

  t.test('replay: the message and emoji read models from zero equal the live ones', async (t) => {
    const m = (await send(member, { content: 'replay', embeds: [{ title: 't' }] })).body._id;
    await other.api.put(`${C}/messages/${m}/reactions/${enc('👍')}`);
    await owner.api.post(`${C}/messages/${m}/pin`);
    await member.api.patch(`${C}/messages/${m}`, { content: 'replayed' });
    const gone = (await send(member, { content: 'gone' })).body._id;
    await member.api.del(`${C}/messages/${gone}`);
    const live = await dumpGeneration(s.redis, generationPrefix(s.prefix, s.readModels.generation!));
    t.ok(Array.isArray(live[rm.channelHistory(srv.general)]), 'messages are in the dump');
    t.same(await dumpRebuild(t, s.redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions }), live, 'rebuilt = live');
  });
});
