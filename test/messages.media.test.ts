// Uploads used by messages (DESIGN §4 "media server", "masquerade"; reference §7.3): attachments (≤ 5, tag
// `attachments`, by the sender, each usable once), embed media, masquerade avatars (a URL of an `avatars`
// upload on this media server; referenced, not consumed), and custom emoji in reactions.
import t from 'tap';
import { Permission as P } from '../src/permissions/bits.ts';
import { signup, type TestUser } from './helpers/http.ts';
import { get, upload } from './helpers/media.ts';
import { uploadImage } from './helpers/messages.ts';
import { createServer, join, roleWith } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';

t.test('messages and uploads', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [owner, member, other] = await Promise.all([signup(s), signup(s), signup(s)]);
  const srv = await createServer(owner, 'Media');
  await join(owner, srv.general, member, other);
  const M = `/channels/${srv.general}/messages`;
  const send = (u: TestUser, body: unknown) => u.api.post(M, body);
  const attachment = (u: TestUser = member) => uploadImage(s, u, 'attachments');

  t.test('attachments: File objects in the message, 5 pass, 6 fail, servable once used', async (t) => {
    const ids = await Promise.all(Array.from({ length: 6 }, () => attachment()));
    t.equal((await get(`${s.mediaUrl}/attachments/${ids[0]}`)).status, 404, 'not servable before it is used');
    const six = await send(member, { attachments: ids });
    t.same([six.status, six.body.type, six.body.max], [400, 'TooManyAttachments', 5], '6 attachments');
    const five = await send(member, { attachments: ids.slice(0, 5) });
    t.equal(five.status, 200, '5 attachments (and no content)');
    t.same(five.body.attachments.map((f: { _id: string }) => f._id), ids.slice(0, 5), 'in the order sent');
    t.match(five.body.attachments[0], { _id: ids[0], tag: 'attachments', filename: String, content_type: 'image/png', size: Number, metadata: { type: 'Image', width: Number, height: Number } });
    t.same((await member.api.get(`${M}/${five.body._id}`)).body.attachments, five.body.attachments, 'on the next read');
    t.equal((await get(`${s.mediaUrl}/attachments/${ids[0]}`)).status, 200, 'servable once used');
    t.equal((await send(member, { attachments: [ids[5]] })).status, 200, 'the 6th was not consumed by the refused send');
  });

  t.test('use once, by the sender, with its own tag', async (t) => {
    const a = await attachment();
    t.equal((await send(member, { content: 'first', attachments: [a] })).status, 200);
    const again = await send(member, { content: 'second', attachments: [a] });
    t.same([again.status, again.body.type], [404, 'NotFound'], 'a second message with the same id fails');
    const theirs = await attachment(other);
    t.equal((await send(member, { content: 'x', attachments: [theirs] })).status, 404, "another user's file fails");
    const avatar = await uploadImage(s, member, 'avatars');
    t.equal((await send(member, { content: 'x', attachments: [avatar] })).status, 404, 'an avatars upload as an attachment: wrong tag');
    t.equal((await send(member, { content: 'x', attachments: ['01HZZZZZZZZZZZZZZZZZZZZZZZ'] })).status, 404, 'no such upload');
    const twice = await attachment();
    t.equal((await send(member, { content: 'x', attachments: [twice, twice] })).status, 404, 'the same id twice in one message');
    // A refused send consumes none of its files, whichever check refused it.
    const fresh = await attachment();
    t.equal((await send(member, { content: 'x', attachments: [fresh, a] })).status, 404, 'one used file refuses the message');
    t.equal((await send(member, { content: '@everyone', attachments: [fresh] })).body.permission, 'MentionEveryone');
    t.equal((await send(member, { content: 'x', attachments: [fresh] })).status, 200, 'the fresh file is still usable');
    const events = [];
    for await (const e of s.store.readAll()) if (e.stream === `file-${fresh}` && e.type === 'FileAttached') events.push(e);
    t.equal(events.length, 1, 'one FileAttached');
    t.match(events[0]!.data, { usedFor: { type: 'Message' } });
  });

  t.test('UploadFiles is needed for attachments and embed media', async (t) => {
    const noUploads = await signup(s);
    await join(owner, srv.general, noUploads);
    await owner.api.put(`/channels/${srv.general}/permissions/default`, { permissions: { allow: 0, deny: Number(P.UploadFiles) } });
    t.teardown(() => owner.api.put(`/channels/${srv.general}/permissions/default`, { permissions: { allow: 0, deny: 0 } }));
    const file = await attachment(noUploads);
    t.equal((await send(noUploads, { attachments: [file] })).body.permission, 'UploadFiles');
    t.equal((await send(noUploads, { embeds: [{ media: file }] })).body.permission, 'UploadFiles');
    await roleWith(owner, srv.id, P.UploadFiles, [noUploads], 'uploaders');
    t.equal((await send(noUploads, { attachments: [file] })).status, 200, 'granted by a role, above the channel default');
  });

  t.test('embed media: a claimed attachments upload inside a Text embed; edits too', async (t) => {
    const media = await attachment();
    const r = await send(member, { embeds: [{ title: 'pic', media, colour: '#00ff00' }] });
    t.equal(r.status, 200);
    t.match(r.body.embeds, [{ type: 'Text', title: 'pic', colour: '#00ff00', media: { _id: media, tag: 'attachments' } }]);
    t.equal((await send(member, { embeds: [{ media }] })).status, 404, 'used once');
    t.equal((await send(member, { embeds: [{ media: await attachment(other) }] })).status, 404, "another user's");
    const next = await attachment();
    const edited = await member.api.patch(`${M}/${r.body._id}`, { embeds: [{ description: 'new', media: next }] });
    t.equal(edited.status, 200);
    t.match(edited.body.embeds, [{ type: 'Text', description: 'new', media: { _id: next } }]);
    t.equal((await member.api.patch(`${M}/${r.body._id}`, { embeds: [{ media: next }] })).status, 404, 'an edit uses a file once too');
    const byOther = await attachment(other);
    t.equal((await member.api.patch(`${M}/${r.body._id}`, { embeds: [{ media: byOther }] })).status, 404);
    const refused = await owner.api.patch(`${M}/${r.body._id}`, { embeds: [{ media: await attachment(owner) }] });
    t.equal(refused.body.type, 'CannotEditMessage');
  });

  t.test('masquerade avatar: a URL of an avatars upload here; referenced, not consumed', async (t) => {
    const masker = await signup(s);
    await join(owner, srv.general, masker);
    await roleWith(owner, srv.id, P.Masquerade, [masker], 'maskers');
    const avatar = await uploadImage(s, masker, 'avatars', { filename: 'mask.png' });
    const url = `${s.mediaUrl}/avatars/${avatar}`;
    t.equal((await get(url)).status, 404, 'not servable yet');
    const first = await send(masker, { content: 'x', masquerade: { name: 'bridge', avatar: url } });
    t.equal(first.status, 200);
    t.same(first.body.masquerade, { name: 'bridge', avatar: url }, 'stored as given');
    t.equal((await get(url)).status, 200, 'servable once referenced');
    t.equal((await send(masker, { content: 'again', masquerade: { avatar: url } })).status, 200, 'not consumed: reused by another message');
    t.equal((await send(masker, { content: 'with name', masquerade: { avatar: `${url}/mask.png` } })).status, 200, 'with its filename');
    await roleWith(owner, srv.id, P.Masquerade, [member], 'maskers2');
    t.equal((await send(member, { content: 'x', masquerade: { avatar: url } })).status, 200, 'anyone may reuse a servable avatar');

    const bad = async (avatarUrl: string, status: number, what: string) => {
      const r = await send(masker, { content: 'x', masquerade: { avatar: avatarUrl } });
      t.equal(r.status, status, what);
      if (status === 400) t.equal(r.body.type, 'FailedValidation');
    };
    await bad(`https://evil.example/avatars/${avatar}`, 400, 'a foreign host');
    await bad(`${s.mediaUrl.replace('127.0.0.1', 'localhost')}/avatars/${avatar}`, 400, 'another spelling of the host');
    await bad(`${s.mediaUrl}/attachments/${avatar}`, 400, 'another tag');
    await bad(`${s.mediaUrl}/avatars/${avatar}?x=1`, 400, 'a query');
    await bad('not a url', 400, 'not a URL');
    await bad(`${s.mediaUrl}/avatars/01HZZZZZZZZZZZZZZZZZZZZZZZ`, 404, 'no such upload');
    await bad(`${s.mediaUrl}/avatars/${avatar}/other.png`, 404, 'another filename');
    const attachmentId = await attachment(masker);
    await bad(`${s.mediaUrl}/avatars/${attachmentId}`, 404, 'an attachments upload under /avatars');
    const unusedTheirs = await uploadImage(s, other, 'avatars');
    await bad(`${s.mediaUrl}/avatars/${unusedTheirs}`, 404, "another user's avatar nobody used yet");
  });

  t.test('a file that is not an image can be an attachment', async (t) => {
    const r = await upload(s, member.token, 'attachments', new TextEncoder().encode('hello, world\n'), { filename: 'notes.txt', contentType: 'text/plain' });
    t.equal(r.status, 200);
    const m = await send(member, { attachments: [r.body.id] });
    t.equal(m.status, 200);
    t.match(m.body.attachments[0], { _id: r.body.id, filename: 'notes.txt' });
    t.ok(['File', 'Text'].includes(m.body.attachments[0].metadata.type));
  });
});
