// The media server's upload route: tags and their limits (decimal bytes, at N and N+1), the size limit
// enforced while streaming, what the bytes may be, the form's shape, authentication, unknown tags and the
// missing delete route, and the rate-limit headers on every media response.
import fs from 'node:fs';
import http from 'node:http';
import t from 'tap';
import { loadFile } from '../src/files.ts';
import { POLICIES, TAGS } from '../workers/media/policy.ts';
import { signup } from './helpers/http.ts';
import { blackPng, jpeg, padTo, png, upload, useFile } from './helpers/media.ts';
import { startTestService } from './helpers/service.ts';

/** Streams a chunked multipart body of `total` bytes as fast as the socket takes it; reports the answer and how much was written. */
function chunkedUpload(url: string, token: string, total: number): Promise<{ status: number; body: string; written: number }> {
  const u = new URL(url);
  const boundary = 'b0undary';
  return new Promise((resolve, reject) => {
    let written = 0;
    const req = http.request(
      { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'X-Session-Token': token, 'Content-Type': `multipart/form-data; boundary=${boundary}`, 'Transfer-Encoding': 'chunked' } },
      (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body, written }));
      },
    );
    // The server closes the socket after answering: later writes fail, which is the point.
    req.on('error', (err) => (written >= total ? reject(err) : undefined));
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="huge.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
    const chunk = Buffer.alloc(256 * 1024, 7);
    const pump = () => {
      while (written < total && !req.destroyed) {
        written += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      if (!req.destroyed) req.end(`\r\n--${boundary}--\r\n`);
    };
    pump();
  });
}

t.test('uploads', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const alice = await signup(s);
  const small = await jpeg(64, 48);

  t.test('GET / greets; the API advertises this server as autumn', async (t) => {
    const r = await fetch(`${s.mediaUrl}/`);
    t.equal(r.status, 200);
    t.same(await r.json(), { autumn: 'Hello, I am a file server!', version: '0.15.7' });
    t.equal((await alice.api.get('/')).body.features.autumn.url, s.mediaUrl);
  });

  t.test('each tag at its limit passes and one byte over is 422 FileTooLarge {max}', async (t) => {
    for (const tag of TAGS) {
      const max = POLICIES[tag].maxBytes;
      // Attachments take any bytes; every other tag needs an image, padded after its end marker.
      const at = tag === 'attachments' ? Buffer.alloc(max, 0) : padTo(small, max);
      const ok = await upload(s, alice.token, tag, at, { filename: 'at-limit.jpg' });
      t.equal(ok.status, 200, `${tag}: ${max} bytes`);
      t.match(ok.body, { id: tag === 'emojis' ? /^[0-9A-Z]{26}$/ : /^[A-Za-z0-9_-]{42}$/ });
      const over = await upload(s, alice.token, tag, Buffer.concat([at, Buffer.from([0x20])]), { filename: 'over.jpg' });
      t.equal(over.status, 422, `${tag}: ${max + 1} bytes`);
      t.same(over.body, { type: 'FileTooLarge', max, location: `/${tag}` });
    }
    t.same(fs.readdirSync(s.blobs.incomingDir), [], 'no upload left behind');
  });

  t.test('a huge chunked upload is cut off while streaming: answered at once, never stored', async (t) => {
    const r = await chunkedUpload(`${s.mediaUrl}/emojis`, alice.token, 1_000_000_000);
    t.equal(r.status, 422);
    t.same(JSON.parse(r.body), { type: 'FileTooLarge', max: 500_000, location: '/emojis' });
    t.ok(r.written < 64_000_000, `the client could only write ${r.written} bytes before the socket closed`);
    t.same(fs.readdirSync(s.blobs.incomingDir), [], 'the partial file is gone');
  });

  t.test('a Content-Length that cannot fit is refused before the body is read', async (t) => {
    const r = await upload(s, alice.token, 'emojis', Buffer.alloc(5_000_000, 1));
    t.equal(r.status, 422);
    t.equal(r.body.type, 'FileTooLarge');
    t.equal(r.headers.get('connection'), 'close');
  });

  t.test('an empty file is 422 FileTooSmall', async (t) => {
    for (const tag of ['attachments', 'avatars'] as const) {
      const r = await upload(s, alice.token, tag, Buffer.alloc(0), { filename: 'empty.png' });
      t.equal(r.status, 422, tag);
      t.equal(r.body.type, 'FileTooSmall');
    }
  });

  t.test('the form must carry one file in field "file"', async (t) => {
    const onlyUrl = new FormData();
    onlyUrl.append('url', 'https://example.com/cat.png');
    const a = await upload(s, alice.token, 'attachments', undefined, { form: onlyUrl });
    t.equal(a.status, 400, 'a url instead of bytes');
    t.equal(a.body.type, 'FailedValidation');
    const b = await upload(s, alice.token, 'attachments', small, { field: 'image' });
    t.equal(b.status, 400, 'a file in another field');
    t.equal(b.body.type, 'FailedValidation');
    const two = new FormData();
    two.append('file', new Blob([small]), 'a.jpg');
    two.append('file', new Blob([small]), 'b.jpg');
    const c = await upload(s, alice.token, 'attachments', undefined, { form: two });
    t.equal(c.status, 400, 'two files');
    t.equal(c.body.type, 'FailedValidation');
    const many = new FormData();
    for (let i = 0; i < 20; i++) many.append(`f${i}`, 'x');
    many.append('file', new Blob([small]), 'a.jpg');
    const d = await upload(s, alice.token, 'attachments', undefined, { form: many });
    t.equal(d.status, 400, 'too many fields');
    const json = await fetch(`${s.mediaUrl}/attachments`, { method: 'POST', body: '{"file":"x"}', headers: { 'X-Session-Token': alice.token, 'Content-Type': 'application/json' } });
    t.equal(json.status, 400, 'not multipart');
    t.equal(((await json.json()) as { type: string }).type, 'FailedValidation');
  });

  t.test('image-only tags judge the bytes, not the name or the declared type', async (t) => {
    const text = Buffer.from('just some text, not an image\n');
    const r = await upload(s, alice.token, 'emojis', text, { filename: 'smile.png', contentType: 'image/png' });
    t.equal(r.status, 400);
    t.equal(r.body.type, 'FileTypeNotAllowed');
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>');
    t.equal((await upload(s, alice.token, 'avatars', svg, { filename: 'a.svg', contentType: 'image/svg+xml' })).body.type, 'FileTypeNotAllowed');
    // A real image named and typed as text is still an image.
    const named = await upload(s, alice.token, 'emojis', await png(32, 32), { filename: 'notes.txt', contentType: 'text/plain' });
    t.equal(named.status, 200);
    // Attachments take anything.
    t.equal((await upload(s, alice.token, 'attachments', text, { filename: 'smile.png' })).status, 200);
  });

  t.test('a PNG bomb is refused and the worker keeps serving', async (t) => {
    const bomb = blackPng(20_000, 20_000);
    t.ok(bomb.length < 100_000, `the bomb is ${bomb.length} bytes`);
    for (const tag of ['attachments', 'emojis'] as const) {
      const r = await upload(s, alice.token, tag, bomb, { filename: 'bomb.png' });
      t.equal(r.status, 400, tag);
      t.equal(r.body.type, 'FileTypeNotAllowed');
    }
    const next = await upload(s, alice.token, 'emojis', await png(40, 40), { filename: 'fine.png' });
    t.equal(next.status, 200, 'the next upload is processed');
  });

  t.test('the stored File: cleaned UTF-8 filename, sniffed type, image metadata, uploader', async (t) => {
    const r = await upload(s, alice.token, 'attachments', await png(30, 20), { filename: 'Grüße 🐱.png', contentType: 'application/octet-stream' });
    t.equal(r.status, 200);
    const rec = await loadFile(s.deps, r.body.id);
    t.same(rec?.file.filename, 'Grüße 🐱.png');
    t.match(rec, { uploaderId: alice.userId, tag: 'attachments', file: { _id: r.body.id, tag: 'attachments', content_type: 'image/png', metadata: { type: 'Image', width: 30, height: 20, animated: false } } });
    t.notOk(rec?.usedFor, 'not used yet');
    const file = await useFile(s, alice.userId, r.body.id, 'attachments');
    t.equal(file.filename, 'Grüße 🐱.png');
  });

  t.test('authentication: X-Session-Token of an onboarded user', async (t) => {
    const none = await upload(s, undefined, 'attachments', small);
    t.equal(none.status, 401);
    t.equal(none.body.type, 'NotAuthenticated');
    const bad = await upload(s, 'not-a-token', 'attachments', small);
    t.equal(bad.status, 401);
    t.equal(bad.body.type, 'InvalidSession');
  });

  t.test('unknown tags and the missing delete route are 404 JSON', async (t) => {
    const r = await upload(s, alice.token, 'videos', small);
    t.equal(r.status, 404);
    t.equal(r.body.type, 'NotFound');
    const ok = await upload(s, alice.token, 'attachments', small);
    for (const path of [`/attachments/${ok.body.id}`, '/attachments']) {
      const del = await fetch(`${s.mediaUrl}${path}`, { method: 'DELETE', headers: { 'X-Session-Token': alice.token } });
      t.equal(del.status, 404, `DELETE ${path}`);
      t.equal(((await del.json()) as { type: string }).type, 'NotFound');
    }
  });
});

t.test('rate-limit headers on every media response; uploads spend the catch-all bucket of their path', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'on' });
  const bob = await signup(s);
  const img = await png(16, 16);
  const headers = (h: Headers) => ({
    limit: h.get('x-ratelimit-limit'),
    remaining: h.get('x-ratelimit-remaining'),
    reset: h.get('x-ratelimit-reset-after'),
    bucket: h.get('x-ratelimit-bucket'),
  });
  const first = await upload(s, bob.token, 'emojis', img, { filename: 'a.png' });
  t.equal(first.status, 200);
  t.match(headers(first.headers), { limit: '20', remaining: '19', reset: /^\d+$/, bucket: 'catch-all' });
  t.equal(first.headers.get('access-control-expose-headers'), 'X-RateLimit-Limit,X-RateLimit-Remaining,X-RateLimit-Reset-After,X-RateLimit-Bucket');
  // Another tag is another route: its own counter.
  const icons = await upload(s, bob.token, 'icons', img, { filename: 'a.png' });
  t.equal(icons.headers.get('x-ratelimit-remaining'), '19');

  const responses: Array<{ what: string; status: number; h: Headers }> = [{ what: 'upload', status: first.status, h: first.headers }];
  const add = async (what: string, p: Promise<Response>) => {
    const r = await p;
    await r.arrayBuffer();
    responses.push({ what, status: r.status, h: r.headers });
  };
  await add('root', fetch(`${s.mediaUrl}/`));
  await add('unknown file', fetch(`${s.mediaUrl}/emojis/01J00000000000000000000000`));
  await add('unknown path', fetch(`${s.mediaUrl}/nope/a/b/c`));
  await add('preflight', fetch(`${s.mediaUrl}/emojis`, { method: 'OPTIONS', headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'x-session-token' } }));
  const used = await useFile(s, bob.userId, first.body.id, 'emojis');
  await add('served file', fetch(`${s.mediaUrl}/emojis/${used._id}`));
  await add('bad form', fetch(`${s.mediaUrl}/emojis`, { method: 'POST', headers: { 'X-Session-Token': bob.token } }));
  for (const r of responses) {
    t.match(headers(r.h), { limit: /^\d+$/, remaining: /^\d+$/, reset: /^\d+$/, bucket: /^(catch-all)$/ }, `${r.what} (${r.status}) carries the headers`);
  }
  t.equal(responses.find((r) => r.what === 'preflight')?.h.get('access-control-allow-origin'), 'https://app.example');

  // 20 per window on POST /emojis: 2 spent above (upload, bad form), 18 more pass, the next is 429.
  for (let i = 0; i < 18; i++) {
    const r = await fetch(`${s.mediaUrl}/emojis`, { method: 'POST', headers: { 'X-Session-Token': bob.token } });
    t.equal(r.status, 400);
    await r.arrayBuffer();
  }
  const limited = await upload(s, bob.token, 'emojis', img);
  t.equal(limited.status, 429);
  t.same(Object.keys(limited.body), ['retry_after']);
  t.ok(limited.body.retry_after > 0 && limited.body.retry_after <= 10_000);
  t.match(headers(limited.headers), { limit: '20', remaining: '0', bucket: 'catch-all' });
  // Downloads spend nothing, so they still work.
  t.equal((await fetch(`${s.mediaUrl}/emojis/${used._id}`)).status, 200);
});
