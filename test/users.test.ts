// User routes of issue 15: default avatars (public, deterministic PNG, ETag / 304, never a 404 for a valid id),
// profiles (Stoat's visibility rule; edit through PATCH /users/@me; the `backgrounds` tag), flags (public)
// and username changes (password, form, blocked names, taken names, discriminators released and reused).
import t from 'tap';
import sharp from 'sharp';
import { request, signup, type TestUser } from './helpers/http.ts';
import { png, upload } from './helpers/media.ts';
import { createServer, dumpCurrent, dumpRebuild, join } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';
import { avatarDesign, PALETTE } from '../src/users/defaultAvatar.ts';
import { userPermissions, UserPermission, type UserPermissionFacts as UserFacts } from '../src/permissions/user.ts';
import { newId } from '../src/ids.ts';

t.test('user permission rule (Stoat calculate_user_permissions)', async (t) => {
  const base: UserFacts = { same: false, relationship: 'None', mutual: false, targetIsBot: false, viewerIsBot: false };
  const view = (f: Partial<UserFacts>) => (userPermissions({ ...base, ...f }) & UserPermission.ViewProfile) !== 0n;
  t.equal(view({}), false, 'a stranger: no profile');
  t.equal(view({ same: true }), true, 'self');
  t.equal(view({ mutual: true }), true, 'a shared server');
  t.equal(view({ relationship: 'Friend' }), true, 'a friend');
  t.equal(view({ targetIsBot: true }), true, 'a bot');
  t.equal(view({ relationship: 'Blocked', mutual: true }), false, 'blocked: Access only, even with a shared server');
  t.equal(view({ relationship: 'BlockedOther', mutual: true }), false, 'blocked by them: Access only');
  t.equal(view({ relationship: 'Incoming' }), false, 'a pending request alone: Access only');
  t.equal(userPermissions({ ...base, relationship: 'Outgoing' }), UserPermission.Access);
  t.equal(userPermissions({ ...base, mutual: true, viewerIsBot: true }) & UserPermission.SendMessage, UserPermission.SendMessage, 'a bot with a mutual connection may message');
  t.equal(userPermissions({ ...base, mutual: true }) & UserPermission.SendMessage, 0n);
});

t.test('default avatar design is a pure function of the id', async (t) => {
  const ids = Array.from({ length: 300 }, () => newId());
  const colours = new Set(ids.map((id) => avatarDesign(id).colour));
  const patterns = new Set(ids.map((id) => avatarDesign(id).cells.map(Number).join('')));
  t.ok(colours.size >= PALETTE.length - 1, `${colours.size} colours used over 300 ids`);
  t.ok(patterns.size > 250, `${patterns.size} distinct patterns over 300 ids`);
  for (const id of ids.slice(0, 20)) {
    t.same(avatarDesign(id), avatarDesign(id));
    const { cells } = avatarDesign(id);
    for (let r = 0; r < 5; r++) t.same([cells[r * 5], cells[r * 5 + 1]], [cells[r * 5 + 4], cells[r * 5 + 3]], 'mirrored');
    t.ok(cells.some(Boolean), 'never a plain square');
  }
});

t.test('user routes over HTTP', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [alice, bob, carol] = await Promise.all([signup(s), signup(s), signup(s)]);
  const srv = await createServer(alice, 'Users');
  await join(alice, srv.general, bob);

  t.test('default avatar: PNG, deterministic, cached, public, 304, never 404 for a valid id', async (t) => {
    const unknown = newId();
    for (const [who, id] of [['a user', alice.userId], ['an unknown id', unknown]] as const) {
      const a = await request(s.apiUrl, 'GET', `/users/${id}/default_avatar`);
      t.equal(a.status, 200, `${who}: 200 without a session`);
      t.equal(a.headers.get('content-type'), 'image/png');
      t.equal(a.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      t.equal(a.headers.get('x-content-type-options'), 'nosniff');
      t.equal(a.headers.get('location'), null, 'no redirect');
      const bytes = Buffer.from(await (await fetch(`${s.apiUrl}/users/${id}/default_avatar`)).arrayBuffer());
      const meta = await sharp(bytes).metadata();
      t.same([meta.format, meta.width, meta.height], ['png', 256, 256], `${who}: a 256 × 256 PNG`);
      const again = Buffer.from(await (await fetch(`${s.apiUrl}/users/${id}/default_avatar`)).arrayBuffer());
      t.ok(bytes.equals(again), 'the same bytes every time');
      const etag = a.headers.get('etag')!;
      t.match(etag, /^"v1-[A-Za-z0-9_-]+"$/, 'a strong ETag');
      const cached = await fetch(`${s.apiUrl}/users/${id}/default_avatar`, { headers: { 'If-None-Match': etag } });
      t.equal(cached.status, 304, 'If-None-Match → 304');
      t.equal((await cached.arrayBuffer()).byteLength, 0, 'no body');
      t.equal(cached.headers.get('etag'), etag);
      const other = await fetch(`${s.apiUrl}/users/${id}/default_avatar`, { headers: { 'If-None-Match': '"something-else"' } });
      t.equal(other.status, 200, 'another tag → 200');
      await other.arrayBuffer();
    }
    // Colour of a corner pixel = the palette colour the design picked.
    const raw = await sharp(Buffer.from(await (await fetch(`${s.apiUrl}/users/${bob.userId}/default_avatar`)).arrayBuffer())).raw().toBuffer({ resolveWithObject: true });
    t.same([...raw.data.subarray(0, 3)], [...PALETTE[avatarDesign(bob.userId).colour]!], 'background from the palette');
    const a1 = await fetch(`${s.apiUrl}/users/${alice.userId}/default_avatar`);
    const b1 = await fetch(`${s.apiUrl}/users/${bob.userId}/default_avatar`);
    t.not(a1.headers.get('etag'), b1.headers.get('etag'), 'two ids, two pictures');
    await Promise.all([a1.arrayBuffer(), b1.arrayBuffer()]);
    const me = await request(s.apiUrl, 'GET', `/users/@me/default_avatar`, { token: alice.token, skipOpenApi: true });
    t.equal(me.headers.get('etag'), (await request(s.apiUrl, 'GET', `/users/${alice.userId}/default_avatar`)).headers.get('etag'), '@me with a session');
    for (const bad of ['x', '@me', 'a'.repeat(300), '01HZZZZZZZZZZZZZZZZZZZZZZ']) {
      const r = await request(s.apiUrl, 'GET', `/users/${bad}/default_avatar`, { skipOpenApi: true });
      t.same([r.status, r.body?.type], [404, 'NotFound'], `malformed id ${bad.slice(0, 20)}: JSON 404 NotFound`);
    }
    const limited = await request(s.apiUrl, 'GET', `/users/${unknown}/default_avatar`);
    t.equal(limited.headers.get('x-ratelimit-bucket'), 'default_avatar', "Stoat's default_avatar bucket");
    t.equal(limited.headers.get('x-ratelimit-limit'), '255');
  });

  t.test('flags: public, 0 for unknown users', async (t) => {
    const r = await request(s.apiUrl, 'GET', `/users/${alice.userId}/flags`);
    t.same([r.status, r.body], [200, { flags: 0 }]);
    t.same((await request(s.apiUrl, 'GET', `/users/${newId()}/flags`)).body, { flags: 0 }, 'unknown user');
    const bad = await request(s.apiUrl, 'GET', `/users/nope/flags`, { skipOpenApi: true });
    t.same([bad.status, bad.body.type], [404, 'NotFound'], 'malformed id');
  });

  t.test('profile: self, a shared server; 403 ViewProfile to strangers; 404 unknown', async (t) => {
    const empty = await bob.api.get(`/users/${alice.userId}/profile`);
    t.same([empty.status, empty.body], [200, {}], 'no profile yet: {}');
    const bg = (await upload(s, alice.token, 'backgrounds', await png(1600, 900), { filename: 'bg.png' })).body.id as string;
    const edit = await alice.api.patch('/users/@me', { profile: { content: 'hello **world**', background: bg } });
    t.equal(edit.status, 200);
    const own = await alice.api.get('/users/@me/profile');
    t.equal(own.status, 200);
    t.equal(own.body.content, 'hello **world**');
    t.match(own.body.background, { _id: bg, tag: 'backgrounds' });
    t.same((await bob.api.get(`/users/${alice.userId}/profile`)).body, own.body, 'a member of a shared server sees it');
    const stranger = await carol.api.get(`/users/${alice.userId}/profile`);
    t.same([stranger.status, stranger.body.type, stranger.body.permission], [403, 'MissingPermission', 'ViewProfile'], 'no mutual connection: 403');
    t.same((await carol.api.get(`/users/${carol.userId}/profile`)).body, {}, 'own profile always');
    const unknown = await carol.api.get(`/users/${newId()}/profile`);
    t.same([unknown.status, unknown.body.type], [404, 'NotFound']);
    const malformed = await carol.api.get(`/users/zzz/profile`);
    t.same([malformed.status, malformed.body.type], [404, 'NotFound']);
    t.equal((await request(s.apiUrl, 'GET', `/users/${alice.userId}/profile`)).status, 401, 'needs a session');
    // Leaving the shared server takes the visibility away.
    await join(alice, srv.general, carol);
    t.equal((await carol.api.get(`/users/${alice.userId}/profile`)).status, 200, 'after joining alice’s server');
    t.equal((await carol.api.del(`/servers/${srv.id}/members/${carol.userId}`)).status < 300 || (await alice.api.del(`/servers/${srv.id}/members/${carol.userId}`)).status < 300, true);
    t.equal((await carol.api.get(`/users/${alice.userId}/profile`)).status, 403, 'after leaving it: 403');
    // Relationships: a friend sees it without a shared server; a group shared with her counts as a mutual
    // connection; a block takes it away even with a shared server.
    t.equal((await carol.api.put(`/users/${alice.userId}/friend`)).status, 200, 'carol asks alice');
    t.equal((await carol.api.get(`/users/${alice.userId}/profile`)).status, 403, 'a pending request alone: 403');
    t.equal((await alice.api.put(`/users/${carol.userId}/friend`)).status, 200, 'alice accepts');
    t.equal((await carol.api.get(`/users/${alice.userId}/profile`)).status, 200, 'a friend sees it');
    const group = await alice.api.post('/channels/create', { name: 'g', users: [carol.userId] });
    t.equal(group.status, 200, 'a group of alice and carol');
    t.equal((await carol.api.del(`/users/${alice.userId}/friend`)).status, 200, 'no longer friends');
    t.equal((await carol.api.get(`/users/${alice.userId}/profile`)).status, 200, 'the shared group is a mutual connection');
    t.equal((await carol.api.del(`/channels/${group.body._id}`)).status, 204, 'carol leaves the group');
    t.equal((await carol.api.get(`/users/${alice.userId}/profile`)).status, 403, 'no connection left: 403');
    await join(alice, srv.general, carol);
    t.equal((await carol.api.get(`/users/${alice.userId}/profile`)).status, 200, 'a shared server again');
    t.equal((await alice.api.put(`/users/${carol.userId}/block`)).status, 200, 'alice blocks carol');
    t.equal((await carol.api.get(`/users/${alice.userId}/profile`)).status, 403, 'blocked by her: 403 despite the shared server');
    t.equal((await alice.api.get(`/users/${carol.userId}/profile`)).status, 403, 'blocking: 403 too');
    // Remove as Stoat names the fields.
    await alice.api.patch('/users/@me', { remove: ['ProfileContent'] });
    t.same(Object.keys((await alice.api.get('/users/@me/profile')).body), ['background']);
    await alice.api.patch('/users/@me', { remove: ['ProfileBackground'] });
    t.same((await alice.api.get('/users/@me/profile')).body, {});
    // The background needs a `backgrounds` upload, 6 MB like Stoat's autumn.
    const avatar = (await upload(s, alice.token, 'avatars', await png(64, 64), { filename: 'a.png' })).body.id as string;
    const wrongTag = await alice.api.patch('/users/@me', { profile: { background: avatar } });
    t.same([wrongTag.status, wrongTag.body.type], [404, 'NotFound'], 'an avatars upload is not a background (src/files.ts: wrong tag → 404)');
    t.equal((await alice.api.patch('/users/@me', { profile: { content: 'x'.repeat(2001) } })).status, 400, 'content over 2000');
    t.equal((await alice.api.patch('/users/@me', { profile: { content: 'x'.repeat(2000) } })).status, 200, 'content of 2000');
  });

  t.test('username change', async (t) => {
    const u: TestUser = await signup(s);
    const me = (await u.api.get('/users/@me')).body;
    const pw = u.password;
    const wrong = await u.api.patch('/users/@me/username', { username: 'renamed_one', password: 'wrong-password' });
    t.same([wrong.status, wrong.body.type], [401, 'InvalidCredentials'], 'wrong password');
    const short = await u.api.patch('/users/@me/username', { username: 'renamed_one', password: 'short' });
    t.same([short.status, short.body.type], [400, 'FailedValidation'], 'password under 8');
    for (const [what, name] of [['one character', 'a'], ['33 characters', 'a'.repeat(33)], ['a space', 'a b'], ['an @', 'a@b']] as const) {
      const r = await u.api.patch('/users/@me/username', { username: name, password: pw });
      t.same([r.status, r.body.type], [400, 'FailedValidation'], what);
    }
    const blockedWrong = await u.api.patch('/users/@me/username', { username: 'admin', password: 'wrong-password' });
    t.equal(blockedWrong.body.type, 'InvalidCredentials', 'the password is checked before the blocked names');
    const blocked = await u.api.patch('/users/@me/username', { username: 'Stoat', password: pw });
    t.same([blocked.status, blocked.body.type], [400, 'InvalidUsername'], 'a blocked name');
    const extra = await u.api.patch('/users/@me/username', { username: 'x1', password: pw, display_name: 'x' });
    t.equal(extra.body.type, 'FailedValidation', 'unknown field');
    t.same((await u.api.get('/users/@me')).body.username, me.username, 'nothing changed so far');

    const name = `renamed${Date.now() % 100000}`;
    const r = await u.api.patch('/users/@me/username', { username: name, password: pw });
    t.equal(r.status, 200);
    t.same([r.body._id, r.body.username, r.body.discriminator], [u.userId, name, me.discriminator], 'the discriminator is kept when free');
    t.equal((await bob.api.get(`/users/${u.userId}`)).body.username, name, 'others see it');
    const caseOnly = await u.api.patch('/users/@me/username', { username: name.toUpperCase(), password: pw });
    t.same([caseOnly.body.username, caseOnly.body.discriminator], [name.toUpperCase(), me.discriminator], 'another case: same discriminator');

    // A second user taking the same name gets another discriminator; the first user's old name is free again.
    const v = await signup(s);
    const vr = await v.api.patch('/users/@me/username', { username: name, password: v.password });
    t.equal(vr.status, 200);
    t.equal(vr.body.username, name);
    t.not(vr.body.discriminator, me.discriminator, 'taken discriminator → another one');
    const back = await u.api.patch('/users/@me/username', { username: me.username, password: pw });
    t.same([back.status, back.body.discriminator], [200, me.discriminator], 'the released name and discriminator are usable again');
  });

  t.test('a name whose every discriminator is taken → 409 UsernameTaken (unit)', async (t) => {
    const { decideUsernameChange } = await import('../src/domain/account/commands.ts');
    const all = new Set(Array.from({ length: 10_000 }, (_, i) => String(i).padStart(4, '0')));
    try {
      decideUsernameChange({ username: 'a', discriminator: '0002' }, 'bb', all, Math.random);
      t.fail('no discriminator is free');
    } catch (err) {
      t.equal((err as { body?: { type?: string } }).body?.type, 'UsernameTaken');
    }
    const oneFree = new Set(all);
    oneFree.delete('0456');
    t.same(decideUsernameChange({ username: 'a', discriminator: '0002' }, 'bb', oneFree, Math.random).discriminator, '0456');
    t.same(decideUsernameChange({ username: 'a', discriminator: '1111' }, 'bb', new Set(), () => 0.5).discriminator === '1111', false, 'an excluded discriminator is not kept');
  });

  t.test('rebuild equals live', async (t) => {
    const live = await dumpCurrent(s.redis, s.prefix);
    t.same(await dumpRebuild(t, s.redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions }), live, 'rebuilt = live');
  });
});
