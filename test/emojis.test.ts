// Custom emoji over HTTP: create (name rules at N and N+1, parent, nsfw), fetch, list, delete, the
// routes that are not there, client events, and a joining member's ServerCreate carrying the emoji.
import t from 'tap';
import { request, signup, type TestUser } from './helpers/http.ts';
import { uploadImage } from './helpers/messages.ts';
import { get } from './helpers/media.ts';
import sharp from 'sharp';
import { clientEvents, createServer, join } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';
import { connectReady } from './helpers/ws.ts';

t.test('custom emoji', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [owner, member, outsider] = await Promise.all([signup(s), signup(s), signup(s)]);
  const srv = await createServer(owner, 'Emoji');
  await join(owner, srv.general, member);
  /** A fresh `emojis` upload by the owner. */
  const nextId = () => uploadImage(s, owner, 'emojis');
  const create = async (body: unknown, id?: string, u: TestUser = owner) => u.api.put(`/custom/emoji/${id ?? (await uploadImage(s, u, 'emojis'))}`, body);
  const parent = { type: 'Server', id: srv.id };

  t.test('create: shape, name rules, parent', async (t) => {
    const id = await nextId();
    const r = await create({ name: 'party_parrot_2', parent, nsfw: true }, id);
    t.equal(r.status, 200);
    t.same(r.body, { _id: id, parent, creator_id: owner.userId, name: 'party_parrot_2', nsfw: true });
    t.same((await member.api.get(`/custom/emoji/${id}`)).body, r.body, 'fetch');
    t.notOk('nsfw' in (await create({ name: 'sfw', parent, nsfw: false })).body, 'nsfw omitted when false');
    t.equal((await create({ name: 'a'.repeat(32), parent })).status, 200, 'name 32');
    const cases: Array<[string, unknown]> = [
      ['name 33', { name: 'a'.repeat(33), parent }],
      ['empty name', { name: '', parent }],
      ['upper case', { name: 'Party', parent }],
      ['a dash', { name: 'party-parrot', parent }],
      ['a space', { name: 'party parrot', parent }],
      ['non-ASCII', { name: 'ñ', parent }],
      ['no parent', { name: 'x' }],
      ['parent without id', { name: 'x', parent: { type: 'Server' } }],
      ['unknown parent type', { name: 'x', parent: { type: 'Channel', id: srv.id } }],
      ['unknown field', { name: 'x', parent, animated: true }],
    ];
    for (const [what, body] of cases) {
      const bad = await create(body);
      t.same([bad.status, bad.body.type], [400, 'FailedValidation'], what);
    }
    const detached = await create({ name: 'x', parent: { type: 'Detached' } });
    t.same([detached.status, detached.body.type], [400, 'InvalidOperation'], 'a detached emoji cannot be created');
    t.equal((await create({ name: 'x', parent: { type: 'Server', id: '01HZZZZZZZZZZZZZZZZZZZZZZZ' } })).status, 404, 'an unknown server');
    t.equal((await create({ name: 'x', parent }, undefined, outsider)).status, 404, 'a server the caller is not in');
    t.equal((await create({ name: 'again', parent }, id)).body.type, 'InvalidOperation', 'an id is used once');
  });

  t.test('the upload: an emojis upload by the caller, used once; a GIF is animated; servable once used', async (t) => {
    const gif = await sharp({ create: { width: 8, height: 8, channels: 3, background: { r: 200, g: 10, b: 10 } } }).gif().toBuffer();
    const gifId = await uploadImage(s, owner, 'emojis', { bytes: gif, filename: 'spin.gif', contentType: 'image/gif' });
    const animated = await create({ name: 'spin', parent }, gifId);
    t.same([animated.status, animated.body.animated], [200, true], 'animated: true');
    t.notOk('animated' in (await create({ name: 'still', parent })).body, 'a PNG is not (omitted)');

    const attachment = await uploadImage(s, owner, 'attachments');
    t.same([(await create({ name: 'x', parent }, attachment)).status], [404], 'an attachments upload: wrong tag');
    const theirs = await uploadImage(s, member, 'emojis');
    t.equal((await create({ name: 'x', parent }, theirs)).status, 404, "another user's upload");
    t.equal((await create({ name: 'x', parent }, '01HZZZZZZZZZZZZZZZZZZZZZZZ')).status, 404, 'no such upload');

    const id = await nextId();
    t.equal((await get(`${s.mediaUrl}/emojis/${id}`)).status, 404, 'not servable before it is used');
    const refused = await create({ name: 'x', parent }, id, member);
    t.same([refused.status, refused.body.permission], [403, 'ManageCustomisation'], 'someone without the permission (and not the uploader)');
    t.equal((await create({ name: 'x', parent: { type: 'Detached' } }, id)).status, 400, 'a refused create');
    t.equal((await create({ name: 'kept', parent }, id)).status, 200, 'the upload was not consumed by the refusals');
    t.equal((await get(`${s.mediaUrl}/emojis/${id}`)).status, 200, 'servable once used');
    t.equal((await owner.api.del(`/custom/emoji/${id}`)).status, 204);
    t.equal((await create({ name: 'reused', parent }, id)).status, 404, 'a used upload cannot make a second emoji');
  });

  t.test('list, fetch, delete; POST /servers/:id/emojis is not a route', async (t) => {
    const list = await member.api.get(`/servers/${srv.id}/emojis`);
    t.equal(list.status, 200);
    t.ok(list.body.length >= 3);
    t.same(list.body.map((e: { _id: string }) => e._id), [...list.body.map((e: { _id: string }) => e._id)].sort(), 'oldest first');
    t.ok(list.body.every((e: { parent: { id: string } }) => e.parent.id === srv.id));
    const post = await owner.api.post(`/servers/${srv.id}/emojis`, { name: 'x' });
    t.same([post.status, post.body.type], [404, 'NotFound'], 'POST /servers/:id/emojis is not the create call');
    const id = list.body[0]._id;
    t.equal((await owner.api.del(`/custom/emoji/${id}`)).status, 204);
    t.equal((await member.api.get(`/custom/emoji/${id}`)).status, 404);
    t.equal((await owner.api.del(`/custom/emoji/${id}`)).status, 404, 'deleted twice');
    t.notOk((await member.api.get(`/servers/${srv.id}/emojis`)).body.some((e: { _id: string }) => e._id === id));
    t.equal((await owner.api.get('/custom/emoji/01HZZZZZZZZZZZZZZZZZZZZZZZ')).status, 404);
  });

  t.test('rename (PATCH /custom/emoji/:id, Stoat\'s emoji_edit.rs): ManageCustomisation, name rules, EmojiUpdate, audited', async (t) => {
    const fresh = await createServer(owner, 'Rename');
    await join(owner, fresh.general, member);
    const id = await nextId();
    const made = (await create({ name: 'before', parent: { type: 'Server', id: fresh.id } }, id)).body;
    const ws = await connectReady(s, member.token);
    t.teardown(() => ws.close());
    const from = ws.events.length;
    const r = await owner.api.patch(`/custom/emoji/${id}`, { name: 'after_2' });
    t.equal(r.status, 200);
    t.same(r.body, { ...made, name: 'after_2' }, 'the emoji, renamed');
    t.same(await ws.waitFor((e) => e.type === 'EmojiUpdate', undefined, from), { type: 'EmojiUpdate', id, data: { name: 'after_2' } }, 'EmojiUpdate to the server');
    t.equal((await member.api.get(`/custom/emoji/${id}`)).body.name, 'after_2', 'fetched');
    t.equal((await member.api.get(`/servers/${fresh.id}/emojis`)).body.find((e: { _id: string }) => e._id === id).name, 'after_2', 'listed');
    t.equal((await owner.api.patch(`/custom/emoji/${id}`, { name: 'a'.repeat(32) })).status, 200, 'name 32');
    for (const [what, body] of [['name 33', { name: 'a'.repeat(33) }], ['upper case', { name: 'Up' }], ['empty', { name: '' }], ['unknown field', { nsfw: true }]] as const) {
      const bad = await owner.api.patch(`/custom/emoji/${id}`, body);
      t.same([bad.status, bad.body.type], [400, 'FailedValidation'], what);
    }
    t.same((await owner.api.patch(`/custom/emoji/${id}`, {})).body.name, 'a'.repeat(32), 'no name: unchanged');
    t.match(await member.api.patch(`/custom/emoji/${id}`, { name: 'member' }), { status: 403, body: { type: 'MissingPermission', permission: 'ManageCustomisation' } });
    t.match(await outsider.api.patch(`/custom/emoji/${id}`, { name: 'outsider' }), { status: 404, body: { type: 'NotFound' } }, 'a non-member');
    t.match(await owner.api.patch('/custom/emoji/01HZZZZZZZZZZZZZZZZZZZZZZZ', { name: 'x' }), { status: 404, body: { type: 'NotFound' } });
    t.equal((await request(s.apiUrl, 'PATCH', `/custom/emoji/${id}`, { body: { name: 'anon' } })).status, 401);
    const log = (await owner.api.get(`/servers/${fresh.id}/audit_logs`)).body;
    const entries = log.audit_logs.filter((e: { action: string }) => e.action === 'EmojiUpdate');
    t.equal(entries.length, 2, 'two renames audited (the no-op is not)');
    t.equal(ws.events.slice(from).filter((e) => e.type === 'EmojiUpdate').length, 2, 'two EmojiUpdate, none for the no-op');
    t.equal((await owner.api.del(`/custom/emoji/${id}`)).status, 204);
    t.equal((await owner.api.patch(`/custom/emoji/${id}`, { name: 'gone' })).status, 404, 'a deleted emoji');
  });

  t.test('fetch is public, as in Stoat: no session and non-members get the emoji; unknown and malformed ids 404', async (t) => {
    const id = await nextId();
    const made = await create({ name: 'public_one', parent }, id);
    const anon = await request(s.apiUrl, 'GET', `/custom/emoji/${id}`);
    t.same([anon.status, anon.body], [200, made.body], 'without a session');
    const bad = await request(s.apiUrl, 'GET', `/custom/emoji/${id}`, { token: 'not-a-session' });
    t.same([bad.status, bad.body], [200, made.body], 'with an invalid session (the route needs none)');
    t.same((await outsider.api.get(`/custom/emoji/${id}`)).body, made.body, 'a non-member');
    for (const wrong of ['01HZZZZZZZZZZZZZZZZZZZZZZZ', 'x', 'a'.repeat(300), '%F0%9F%91%8D']) {
      const r = await request(s.apiUrl, 'GET', `/custom/emoji/${wrong}`);
      t.same([r.status, r.body.type], [404, 'NotFound'], `${wrong.slice(0, 30)}: 404`);
    }
    t.equal((await owner.api.del(`/custom/emoji/${id}`)).status, 204);
    t.equal((await request(s.apiUrl, 'GET', `/custom/emoji/${id}`)).status, 404, 'gone once deleted');
  });

  t.test('reactions with a deleted emoji are refused', async (t) => {
    const id = await nextId();
    await create({ name: 'short_lived', parent }, id);
    const m = (await member.api.post(`/channels/${srv.general}/messages`, { content: 'x' })).body._id;
    t.equal((await member.api.put(`/channels/${srv.general}/messages/${m}/reactions/${id}`)).status, 204);
    await owner.api.del(`/custom/emoji/${id}`);
    t.equal((await owner.api.put(`/channels/${srv.general}/messages/${m}/reactions/${id}`)).status, 404, 'a new reaction with it: 404');
    t.equal((await member.api.del(`/channels/${srv.general}/messages/${m}/reactions/${id}`)).status, 204, 'an old one can still be removed');
    const elsewhere = await createServer(owner, 'Elsewhere');
    const foreign = await nextId();
    await create({ name: 'foreign', parent: { type: 'Server', id: elsewhere.id } }, foreign);
    t.equal((await owner.api.put(`/channels/${srv.general}/messages/${m}/reactions/${foreign}`)).status, 404, "another server's emoji");
  });

  t.test('client events on the server route; ServerCreate of a joiner carries the emoji', async (t) => {
    const fresh = await createServer(owner, 'Events');
    const [a, b] = [await nextId(), await nextId()];
    const emojiA = (await create({ name: 'a', parent: { type: 'Server', id: fresh.id } }, a)).body;
    await create({ name: 'b', parent: { type: 'Server', id: fresh.id } }, b);
    await owner.api.del(`/custom/emoji/${b}`);
    const joiner = await signup(s);
    await join(owner, fresh.general, joiner);
    const events = (await clientEvents(s.redis, s.prefix)).filter((e) => /^Emoji/.test(e.payload.type) && (e.payload.parent?.id === fresh.id || e.payload.id === b));
    t.same(events, [
      { route: { kind: 'server', serverId: fresh.id }, payload: { type: 'EmojiCreate', ...emojiA } },
      { route: { kind: 'server', serverId: fresh.id }, payload: { type: 'EmojiCreate', _id: b, parent: { type: 'Server', id: fresh.id }, creator_id: owner.userId, name: 'b' } },
      { route: { kind: 'server', serverId: fresh.id }, payload: { type: 'EmojiDelete', id: b } },
    ]);
    const create_ = (await clientEvents(s.redis, s.prefix)).find((e) => e.payload.type === 'ServerCreate' && e.route.userId === joiner.userId);
    t.same(create_?.payload.emojis, [emojiA], 'the joiner learns the server\'s emoji');
    t.notOk('emojis' in (await owner.api.get(`/servers/${fresh.id}`)).body, 'the server object does not carry them');
  });
});
