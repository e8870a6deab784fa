// Using uploads and serving them: use-once with its own tag by its uploader (claimFile and the avatar route),
// masquerade references that do not consume, serving only after use, preview/original routes and their
// headers (nosniff, disposition, cache), and EXIF/GPS gone from what is served.
import sharp from 'sharp';
import t from 'tap';
import { AppError } from '../src/errors.ts';
import { fileStream, claimFile, loadFile, parseAvatarUrl, referenceFile } from '../src/files.ts';
import { newId } from '../src/ids.ts';
import { signup, type TestUser } from './helpers/http.ts';
import { get, jpeg, png, upload, useFile } from './helpers/media.ts';
import { startTestService } from './helpers/service.ts';

const tap = t;

/** The status and type an AppError-rejecting promise fails with. */
async function refusal(p: Promise<unknown>): Promise<{ status: number; type: string }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return { status: err.status, type: err.body.type };
    throw err;
  }
  throw new Error('expected a refusal, got success');
}

t.test('using and serving files', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const alice = await signup(s);
  const bob = await signup(s);
  const up = async (u: TestUser, tag: string, bytes: Buffer, filename = 'pic.png'): Promise<string> => {
    const r = await upload(s, u.token, tag, bytes, { filename });
    if (r.status !== 200) throw new Error(`upload ${tag} ${r.status} ${r.text}`);
    return r.body.id as string;
  };
  const notFound = async (t: Pick<typeof tap, 'same'>, p: Promise<unknown>, what: string) => {
    t.same(await refusal(p), { status: 404, type: 'NotFound' }, what);
  };

  t.test('claimFile: once, with its own tag, by its uploader; everything else is 404 NotFound', async (t) => {
    const id = await up(alice, 'attachments', await png(10, 10));
    await notFound(t, claimFile(s.deps, { fileId: id, tag: 'avatars', userId: alice.userId, usedFor: { type: 'UserAvatar', id: alice.userId } }), 'wrong tag');
    await notFound(t, claimFile(s.deps, { fileId: id, tag: 'attachments', userId: bob.userId, usedFor: { type: 'Message', id: newId() } }), "another user's file");
    await notFound(t, claimFile(s.deps, { fileId: newId(), tag: 'attachments', userId: alice.userId, usedFor: { type: 'Message', id: newId() } }), 'unknown id');
    await notFound(t, claimFile(s.deps, { fileId: '../etc/passwd', tag: 'attachments', userId: alice.userId, usedFor: { type: 'Message', id: newId() } }), 'not an id');
    const claim = await claimFile(s.deps, { fileId: id, tag: 'attachments', userId: alice.userId, usedFor: { type: 'Message', id: 'm1' } });
    t.match(claim.file, { _id: id, tag: 'attachments', filename: 'pic.png', content_type: 'image/png' });
    t.match(claim.write, { stream: fileStream(id), scope: alice.userId, expected: 0, events: [{ type: 'FileAttached', data: { usedFor: { type: 'Message', id: 'm1' } } }] });
    await useFile(s, alice.userId, id, 'attachments');
    t.match(await loadFile(s.deps, id), { usedFor: { type: 'Message' }, revision: 1 });
    await notFound(t, useFile(s, alice.userId, id, 'attachments'), 'second use');
  });

  t.test('two concurrent uses of one id: exactly one wins', async (t) => {
    const id = await up(alice, 'attachments', await png(10, 10));
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => useFile(s, alice.userId, id, 'attachments')));
    t.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    t.equal((await s.store.readStream(fileStream(id))).filter((e) => e.type === 'FileAttached').length, 1);
  });

  t.test('PATCH /users/@me avatar and profile.background use uploads once', async (t) => {
    const avatar = await up(alice, 'avatars', await png(300, 200), 'me.png');
    const r = await alice.api.patch('/users/@me', { avatar });
    t.equal(r.status, 200);
    t.match(r.body.avatar, { _id: avatar, tag: 'avatars', filename: 'me.png', content_type: 'image/png', metadata: { type: 'Image', width: 300, height: 200 } });
    const again = await alice.api.patch('/users/@me', { avatar });
    t.equal(again.status, 404, 'second use');
    t.equal(again.body.type, 'NotFound');

    const bobs = await up(bob, 'avatars', await png(20, 20));
    const stolen = await alice.api.patch('/users/@me', { avatar: bobs });
    t.equal(stolen.status, 404, "another user's upload");
    t.equal(stolen.body.type, 'NotFound');
    t.equal((await bob.api.patch('/users/@me', { avatar: bobs })).status, 200, 'its uploader can still use it');

    const icon = await up(alice, 'icons', await png(20, 20));
    t.equal((await alice.api.patch('/users/@me', { avatar: icon })).status, 404, 'an icons upload is not an avatar');
    t.equal((await alice.api.patch('/users/@me', { profile: { background: icon } })).status, 404, 'nor a background');
    t.equal((await alice.api.patch('/users/@me', { avatar: newId() })).status, 404, 'unknown id');

    const bg = await up(alice, 'backgrounds', await png(1600, 900), 'bg.png');
    const withBg = await alice.api.patch('/users/@me', { profile: { content: 'hi', background: bg } });
    t.equal(withBg.status, 200);
    t.notOk('profile' in withBg.body, 'a User object never carries the profile (Stoat)');
    t.match((await alice.api.get('/users/@me/profile')).body, { content: 'hi', background: { _id: bg, tag: 'backgrounds' } });
    const preview = await get(`${s.mediaUrl}/backgrounds/${bg}`);
    t.same((await sharp(preview.bytes).metadata()).width, 1280, 'background preview fits 1280×720');

    // Replacing and removing the avatar: the user follows, the old file stays served (old messages link it).
    const second = await up(alice, 'avatars', await png(64, 64), 'new.png');
    t.equal((await alice.api.patch('/users/@me', { avatar: second })).body.avatar._id, second);
    const removed = await alice.api.patch('/users/@me', { remove: ['Avatar', 'ProfileBackground'] });
    t.equal(removed.status, 200);
    t.notOk(removed.body.avatar);
    t.same((await alice.api.get('/users/@me/profile')).body, { content: 'hi' });
    t.equal((await get(`${s.mediaUrl}/avatars/${avatar}`)).status, 404, 'a replaced avatar is served no more (issue 17)');
    t.equal((await get(`${s.mediaUrl}/avatars/${second}`)).status, 404, 'nor a removed one');
    t.equal((await alice.api.patch('/users/@me', { avatar: second })).status, 404, 'a removed avatar is still used');
    // Nothing else of the edit lands when a file is refused (one atomic append).
    const refused = await alice.api.patch('/users/@me', { display_name: 'Changed', avatar: second });
    t.equal(refused.status, 404);
    t.not((await alice.api.get('/users/@me')).body.display_name, 'Changed');
  });

  t.test('a file is served only once something used it', async (t) => {
    const id = await up(alice, 'avatars', await png(256, 256), 'face.png');
    t.equal((await get(`${s.mediaUrl}/avatars/${id}`)).status, 404, 'preview before use');
    t.equal((await get(`${s.mediaUrl}/avatars/${id}/face.png`)).status, 404, 'original before use');
    await alice.api.patch('/users/@me', { avatar: id });
    const preview = await get(`${s.mediaUrl}/avatars/${id}`);
    t.equal(preview.status, 200);
    t.equal(preview.headers.get('content-type'), 'image/webp');
    t.match(preview.headers.get('content-disposition'), /^inline;/);
    t.equal(preview.headers.get('x-content-type-options'), 'nosniff');
    t.equal(preview.headers.get('cache-control'), 'public, max-age=604800, must-revalidate');
    t.match(await sharp(preview.bytes).metadata(), { format: 'webp', width: 128, height: 128 });
    const original = await get(`${s.mediaUrl}/avatars/${id}/face.png`);
    t.equal(original.status, 200);
    t.equal(original.headers.get('content-type'), 'image/png');
    t.match(original.headers.get('content-disposition'), /^inline; filename="face.png"/);
    t.equal(original.headers.get('x-content-type-options'), 'nosniff');
    t.equal(original.headers.get('cache-control'), 'public, max-age=604800, must-revalidate');
    t.match(await sharp(original.bytes).metadata(), { format: 'png', width: 256, height: 256 });
    t.same((await get(`${s.mediaUrl}/avatars/${id}/original`)).bytes, original.bytes, '`original` names it too');
    t.equal((await get(`${s.mediaUrl}/avatars/${id}/other.png`)).status, 404, 'another filename');
    t.equal((await get(`${s.mediaUrl}/icons/${id}`)).status, 404, 'another tag');
    t.equal((await get(`${s.mediaUrl}/videos/${id}`)).status, 404, 'not a tag');
    const head = await get(`${s.mediaUrl}/avatars/${id}/face.png`, {}, 'HEAD');
    t.equal(head.status, 200);
    t.equal(head.headers.get('content-length'), String(original.bytes.length));
    const etag = original.headers.get('etag')!;
    // fetch adds `Cache-Control: no-cache` to a conditional request unless told otherwise; a browser revalidates with max-age=0.
    t.equal((await get(`${s.mediaUrl}/avatars/${id}/face.png`, { 'If-None-Match': etag, 'Cache-Control': 'max-age=0' })).status, 304);
  });

  t.test('only raster images are inline; everything else is an attachment; non-images and animations redirect', async (t) => {
    const cases = [
      { name: 'notes.txt', bytes: Buffer.from('plain text\n'), type: 'text/plain', inline: false, meta: 'Text' },
      { name: 'page.html', bytes: Buffer.from('<!doctype html><html><body><script>alert(1)</script></body></html>'), type: 'text/plain', inline: false, meta: 'Text' },
      { name: 'logo.svg', bytes: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'), type: 'image/svg+xml', inline: false, meta: 'File' },
      { name: 'blob.bin', bytes: Buffer.from([0, 1, 2, 3, 0, 255]), type: 'application/octet-stream', inline: false, meta: 'File' },
      { name: 'photo.jpg', bytes: await jpeg(40, 30), type: 'image/jpeg', inline: true, meta: 'Image' },
    ];
    for (const c of cases) {
      const id = await up(alice, 'attachments', c.bytes, c.name);
      const file = await useFile(s, alice.userId, id, 'attachments');
      t.equal(file.metadata.type, c.meta, `${c.name} metadata`);
      const original = await get(`${s.mediaUrl}/attachments/${id}/${c.name}`);
      t.equal(original.status, 200);
      t.equal(original.headers.get('content-type')?.split(';')[0], c.type, `${c.name} content type`);
      t.match(original.headers.get('content-disposition'), c.inline ? /^inline;/ : /^attachment; filename="/, `${c.name} disposition`);
      t.equal(original.headers.get('x-content-type-options'), 'nosniff');
      t.match(original.headers.get('content-security-policy'), /sandbox/);
      const preview = await get(`${s.mediaUrl}/attachments/${id}`);
      if (c.inline) {
        t.equal(preview.status, 200);
        t.equal(preview.headers.get('content-type'), 'image/webp');
      } else {
        t.equal(preview.status, 308, `${c.name}: the preview route redirects`);
        t.equal(preview.headers.get('location'), `${s.mediaUrl}/attachments/${id}/${encodeURIComponent(c.name)}`);
      }
    }
    const frames = await Promise.all([0, 1, 2].map((i) => sharp({ create: { width: 30, height: 20, channels: 3, background: { r: 80 * i, g: 50, b: 0 } } }).png().toBuffer()));
    const gif = await sharp(frames, { join: { animated: true } }).gif().toBuffer();
    const id = await up(alice, 'attachments', gif, 'dance.gif');
    await useFile(s, alice.userId, id, 'attachments');
    const preview = await get(`${s.mediaUrl}/attachments/${id}`);
    t.equal(preview.status, 308, 'an animated image redirects to its original');
    const original = await get(preview.headers.get('location')!);
    t.equal(original.headers.get('content-type'), 'image/gif');
    t.equal((await sharp(original.bytes).metadata()).pages, 3);
  });

  t.test('a JPEG with GPS EXIF is served without it', async (t) => {
    const input = await sharp(await jpeg(200, 100))
      .withExif({ IFD0: { Make: 'EXIFMARKER', Copyright: 'EXIFMARKER' }, IFD3: { GPSLatitudeRef: 'N', GPSMapDatum: 'GPSMARKER' } })
      .jpeg()
      .toBuffer();
    t.ok(input.includes('GPSMARKER') && (await sharp(input).metadata()).exif, 'the upload carries GPS EXIF');
    const id = await up(alice, 'attachments', input, 'holiday.jpg');
    await useFile(s, alice.userId, id, 'attachments');
    const original = await get(`${s.mediaUrl}/attachments/${id}/holiday.jpg`);
    t.equal(original.status, 200);
    t.equal(original.headers.get('content-type'), 'image/jpeg');
    t.notOk(original.bytes.includes('GPSMARKER'), 'no GPS value');
    t.notOk(original.bytes.includes('EXIFMARKER'), 'no EXIF value');
    t.notOk(original.bytes.includes('Exif\0\0'), 'no EXIF block at all');
    const m = await sharp(original.bytes).metadata();
    t.notOk(m.exif, 'sharp finds no EXIF');
    t.match(m, { width: 200, height: 100 });
  });

  t.test('masquerade avatars: referenced without being consumed', async (t) => {
    const base = s.config.mediaPublicUrl;
    const id = await up(alice, 'avatars', await png(50, 50), 'bot.png');
    const by = { type: 'Message' as const, id: newId() };
    t.same(parseAvatarUrl(`${base}/avatars/${id}`, base), { fileId: id });
    t.same(parseAvatarUrl(`${base}/avatars/${id}/bot.png`, base), { fileId: id, filename: 'bot.png' });
    for (const url of [`https://elsewhere.example/avatars/${id}`, `${base}/icons/${id}`, `${base}/avatars/${id}?x=1`, `${base}/avatars/${id}/a/b`, 'not a url', `${base}/avatars/`]) {
      t.same(await refusal(referenceFile(s.deps, { url, userId: alice.userId, by })), { status: 400, type: 'FailedValidation' }, url);
    }
    await notFound(t, referenceFile(s.deps, { url: `${base}/avatars/${newId()}`, userId: alice.userId, by }), 'unknown id');
    await notFound(t, referenceFile(s.deps, { url: `${base}/avatars/${id}/wrong.png`, userId: alice.userId, by }), 'wrong filename');
    await notFound(t, referenceFile(s.deps, { url: `${base}/avatars/${id}`, userId: bob.userId, by }), "another user's unused upload");

    t.equal((await get(`${base}/avatars/${id}`)).status, 404, 'not servable yet');
    const first = await referenceFile(s.deps, { url: `${base}/avatars/${id}/bot.png`, userId: alice.userId, by });
    t.match(first, { file: { _id: id }, write: { stream: fileStream(id), expected: 0, events: [{ type: 'FileReferenced' }] } });
    await s.deps.executor.execute({ actor: alice.userId, requestId: 'test' }, [fileStream(id)], async () => ({ writes: [first.write!], result: undefined }));
    t.equal((await get(`${base}/avatars/${id}`)).status, 200, 'servable once referenced');
    const again = await referenceFile(s.deps, { url: `${base}/avatars/${id}`, userId: alice.userId, by });
    t.notOk(again.write, 'later references write nothing');
    t.notOk((await referenceFile(s.deps, { url: `${base}/avatars/${id}`, userId: bob.userId, by })).write, 'anyone may reuse a public avatar');
    t.equal((await alice.api.patch('/users/@me', { avatar: id })).status, 200, 'a referenced avatar is not consumed');
  });
});

