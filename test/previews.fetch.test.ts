// Link previews below the service: the guarded fetch (redirects re-checked, caps on bytes and time), the SSRF
// refusals without OUTBOUND_ALLOW_PRIVATE, URL extraction, hostile HTML, the embeds and the per-URL cache.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import sharp from 'sharp';
import t from 'tap';
import { fetchGuarded, FetchFailed } from '../src/outbound/fetch.ts';
import { OutboundRefused, outboundPolicy } from '../src/outbound/policy.ts';
import { cachedEmbed, generateEmbed, previewOf, type PreviewContext } from '../src/previews/generate.ts';
import { previewUrls } from '../src/previews/urls.ts';
import { decodeHtml, readHead, specialOf, websiteEmbed } from '../src/previews/website.ts';
import { deletePrefix, TEST_REDIS_URL, uniquePrefix } from './helpers/service.ts';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A page server on loopback; `routes` by path. */
async function pageServer(t: { teardown(fn: () => void): void }, routes: Record<string, Handler>) {
  const hits = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const h = routes[path];
    if (!h) {
      res.writeHead(404).end();
      return;
    }
    h(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, hits };
}

const html = (body: string, type = 'text/html; charset=utf-8'): Handler => (_q, res) => res.writeHead(200, { 'content-type': type }).end(body);
const loopback = outboundPolicy('127.0.0.0/8');
const none = outboundPolicy();
const limits = { timeoutMs: 5000, maxBytes: 1000, maxRedirects: 3 };

t.test('fetchGuarded: allowed loopback, redirects re-checked and capped, bytes cut', async (t) => {
  const srv = await pageServer(t, {
    '/ok': html('hello'),
    '/exact': html('x'.repeat(1000)),
    '/over': html('x'.repeat(1001)),
    '/huge': (_q, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      const chunk = Buffer.alloc(64 * 1024, 97);
      let sent = 0;
      const pump = () => {
        // An endless body: the fetch must cut it, not read it all.
        while (sent < 200 && res.write(chunk)) sent++;
        if (sent < 200) res.once('drain', pump);
        else res.end();
      };
      pump();
    },
    '/to-metadata': (_q, res) => res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end(),
    '/to-v6-loopback': (_q, res) => res.writeHead(301, { location: 'http://[::1]:9/' }).end(),
    '/to-localhost-name': (_q, res) => res.writeHead(302, { location: `http://localhost.:1/` }).end(),
    '/to-file': (_q, res) => res.writeHead(302, { location: 'file:///etc/passwd' }).end(),
    '/r1': (_q, res) => res.writeHead(302, { location: '/r2' }).end(),
    '/r2': (_q, res) => res.writeHead(302, { location: '/r3' }).end(),
    '/r3': (_q, res) => res.writeHead(302, { location: '/ok' }).end(),
    '/r0': (_q, res) => res.writeHead(302, { location: '/r1' }).end(),
    '/hang': () => {},
  });
  const ok = await fetchGuarded(`${srv.base}/ok`, loopback, limits);
  t.same([ok.status, ok.body.toString(), ok.truncated, ok.contentType], [200, 'hello', false, 'text/html; charset=utf-8']);
  const exact = await fetchGuarded(`${srv.base}/exact`, loopback, limits);
  t.same([exact.body.length, exact.truncated], [1000, false], 'maxBytes accepted');
  const over = await fetchGuarded(`${srv.base}/over`, loopback, limits);
  t.same([over.body.length, over.truncated], [1000, true], 'maxBytes + 1 cut');
  const huge = await fetchGuarded(`${srv.base}/huge`, loopback, { ...limits, maxBytes: 100_000 });
  t.same([huge.body.length, huge.truncated], [100_000, true], 'a 13 MB body is cut at the cap');

  const three = await fetchGuarded(`${srv.base}/r1`, loopback, limits);
  t.equal(three.body.toString(), 'hello', 'three redirects followed (the cap)');
  t.equal(three.url.pathname, '/ok');
  await t.rejects(fetchGuarded(`${srv.base}/r0`, loopback, limits), FetchFailed, 'four redirects refused');

  await t.rejects(fetchGuarded(`${srv.base}/to-metadata`, loopback, limits), OutboundRefused, 'redirect to the metadata address');
  await t.rejects(fetchGuarded(`${srv.base}/to-v6-loopback`, loopback, limits), OutboundRefused, 'redirect to ::1 (outside the allowed range)');
  await t.rejects(fetchGuarded(`${srv.base}/to-file`, loopback, limits), OutboundRefused, 'redirect to another scheme');
  await t.rejects(fetchGuarded(`${srv.base}/hang`, loopback, { ...limits, timeoutMs: 300 }), FetchFailed, 'deadline');

  // Without OUTBOUND_ALLOW_PRIVATE: the literal, a name resolving to loopback, and a redirect there.
  t.equal(srv.hits.get('/ok'), 2);
  await t.rejects(fetchGuarded(`${srv.base}/ok`, none, limits), OutboundRefused, 'loopback literal refused');
  const port = new URL(srv.base).port;
  await t.rejects(fetchGuarded(`http://localhost:${port}/ok`, none, limits), OutboundRefused, 'a name resolving to loopback refused');
  t.equal(srv.hits.get('/ok'), 2, 'nothing reached the server');
  await t.rejects(fetchGuarded(`${srv.base}/to-localhost-name`, loopback, limits), /./, 'redirect to a name is resolved again and checked');
  await t.rejects(fetchGuarded('http://user:pw@example.com/', none, limits), OutboundRefused, 'credentials');
  await t.rejects(fetchGuarded('ftp://example.com/', none, limits), OutboundRefused, 'scheme');
});

t.test('previewUrls: Stoat extraction rules', async (t) => {
  t.same(previewUrls('see https://a.example/x, and (https://b.example/y) ok'), ['https://a.example/x', 'https://b.example/y']);
  t.same(previewUrls('`https://code.example/` ```\nhttps://block.example/\n``` <https://quiet.example/> https://loud.example/'), ['https://loud.example/']);
  t.same(previewUrls('https://a.example/ https://a.example/ https://w.example/wiki/A_(b)'), ['https://a.example/', 'https://w.example/wiki/A_(b)'], 'distinct; balanced brackets kept');
  t.same(previewUrls('ftp://x.example/ javascript:alert(1) mailto:a@b.c'), []);
  const six = Array.from({ length: 6 }, (_, i) => `https://u${i}.example/`).join(' ');
  t.equal(previewUrls(six).length, 5, 'at most 5 (N accepted, N+1 dropped)');
  t.same(previewUrls(`https://x.example/${'a'.repeat(2100)}`), [], 'overlong URL skipped');
});

t.test('hostile HTML: huge, deeply nested, bogus encodings', async (t) => {
  const deep = '<html><head><meta property="og:title" content="Deep">' + '<div>'.repeat(200_000) + '</head>';
  t.equal(readHead(deep).meta.get('og:title'), 'Deep', 'nesting builds nothing');
  const late = '<html><head><title>x</title></head><body>' + '<p>'.repeat(100_000) + '<meta property="og:title" content="Late"></body>';
  t.notOk(readHead(late).meta.has('og:title'), 'parsing stops at the body');
  const many = '<head>' + '<meta name="a" content="b">'.repeat(50_000) + '<meta property="og:title" content="After"></head>';
  t.notOk(readHead(many).meta.has('og:title'), 'the tag count is capped');
  t.equal(decodeHtml(Buffer.from([0x63, 0x61, 0x66, 0xe9]), 'text/html; charset=windows-1252'), 'café', 'declared charset');
  t.equal(decodeHtml(Buffer.from('héllo'), 'text/html; charset=x-bogus-9000'), 'héllo', 'unknown label → UTF-8');
  t.equal(decodeHtml(Buffer.from([0xff, 0xfe, 0x41]), 'text/html'), '\ufffd\ufffdA', 'invalid bytes → U+FFFD, no throw');
  const unclosed = '<head><meta property="og:title" content="Unclosed' + 'x'.repeat(100_000);
  t.doesNotThrow(() => readHead(unclosed));
});

t.test('website embeds: OpenGraph, Twitter cards and Stoat specials', async (t) => {
  const page = new URL('https://site.example/a/b');
  const e = websiteEmbed(
    'https://site.example/a/b',
    page,
    `<html><head>
      <meta property="og:title" content="  The  title ">
      <meta name="twitter:description" content="Desc &amp; more">
      <meta property="og:site_name" content="Site">
      <meta name="theme-color" content="#123456">
      <meta property="og:image" content="/img.png"><meta property="og:image:width" content="640"><meta property="og:image:height" content="480">
      <meta name="twitter:card" content="summary_large_image">
      <link rel="icon" href="favicon.ico">
      <meta property="og:url" content="javascript:alert(1)">
    </head><body></body></html>`,
  );
  t.same(e, {
    type: 'Website',
    title: 'The title',
    description: 'Desc & more',
    image: { url: 'https://site.example/img.png', width: 640, height: 480, size: 'Large' },
    icon_url: 'https://site.example/a/favicon.ico',
    colour: '#123456',
    site_name: 'Site',
    url: 'https://site.example/a/b',
    original_url: 'https://site.example/a/b',
  });
  t.equal(websiteEmbed('https://x.example/', new URL('https://x.example/'), '<head></head>'), null, 'a page that says nothing');
  t.same(specialOf('https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42', 'x'), { type: 'YouTube', id: 'dQw4w9WgXcQ', timestamp: '42' });
  t.same(specialOf('https://youtu.be/dQw4w9WgXcQ', 'x'), { type: 'YouTube', id: 'dQw4w9WgXcQ' });
  t.same(specialOf('https://www.twitch.tv/somechannel', 'x'), { type: 'Twitch', content_type: 'Channel', id: 'somechannel' });
  t.same(specialOf('https://www.twitch.tv/videos/123', 'x'), { type: 'Twitch', content_type: 'Video', id: '123' });
  t.same(specialOf('https://open.spotify.com/track/abc123', 'x'), { type: 'Spotify', content_type: 'track', id: 'abc123' });
  t.same(specialOf('https://soundcloud.com/artist/song', 'x'), { type: 'Soundcloud' });
  t.same(specialOf('https://band.bandcamp.com/album/a', 'x', { url: 'https://bandcamp.com/EmbeddedPlayer/album=77/' }), { type: 'Bandcamp', content_type: 'Album', id: '77' });
  t.same(specialOf('https://tenor.com/view/cat-123', 'x'), { type: 'GIF' });
  t.same(specialOf('https://streamable.com/abc', 'x'), { type: 'Streamable', id: 'abc' });
  t.equal(specialOf('https://example.com/', 'https://example.com/'), undefined);
  const yt = websiteEmbed('https://www.youtube.com/watch?v=dQw4w9WgXcQ', new URL('https://www.youtube.com/watch?v=dQw4w9WgXcQ'), '<head><meta property="og:title" content="Song"></head>');
  t.match(yt, { special: { type: 'YouTube', id: 'dQw4w9WgXcQ' }, colour: '#FF424F', title: 'YouTube' }, 'YouTube without a video: Stoat\'s fallback card');
});

t.test('generateEmbed and the per-URL cache', async (t) => {
  const redis = new Redis(TEST_REDIS_URL);
  const prefix = uniquePrefix();
  t.teardown(async () => {
    await deletePrefix(TEST_REDIS_URL, prefix);
    redis.disconnect();
  });
  const png = await sharp({ create: { width: 30, height: 20, channels: 3, background: '#f00' } }).png().toBuffer();
  const srv = await pageServer(t, {
    '/page': html('<head><meta property="og:title" content="Page"><meta property="og:image" content="/pic.png"></head>'),
    '/pic.png': (_q, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(png),
    '/not-an-image': (_q, res) => res.writeHead(200, { 'content-type': 'image/png' }).end('nope'),
    '/text': (_q, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('plain'),
    '/gone': (_q, res) => res.writeHead(404).end(),
  });
  const ctx: PreviewContext = {
    policy: loopback,
    limits: { timeoutMs: 5000, maxBytes: 100_000, maxRedirects: 3, cacheTtlSeconds: 60, cacheMax: 2, concurrency: 1, attempts: 1, jobLockMs: 30_000 },
    redis,
    prefix,
  };
  t.match(await generateEmbed(`${srv.base}/page`, ctx), {
    type: 'Website',
    title: 'Page',
    image: { url: `${srv.base}/pic.png`, width: 30, height: 20, size: 'Preview' },
  }, 'image size looked up');
  t.same(await generateEmbed(`${srv.base}/pic.png`, ctx), { type: 'Image', url: `${srv.base}/pic.png`, width: 30, height: 20, size: 'Large' });
  t.equal(await generateEmbed(`${srv.base}/not-an-image`, ctx), null);
  t.equal(await generateEmbed(`${srv.base}/text`, ctx), null);
  t.equal(await generateEmbed(`${srv.base}/gone`, ctx), null);
  t.equal(await generateEmbed(`${srv.base}/page`, { ...ctx, policy: none }), null, 'refused by the policy: no preview');

  const before = srv.hits.get('/page');
  await previewOf(`${srv.base}/page`, ctx);
  await previewOf(`${srv.base}/page`, ctx);
  t.equal(srv.hits.get('/page'), before! + 1, 'second preview from the cache');
  await previewOf(`${srv.base}/text`, ctx);
  t.not(await cachedEmbed(`${srv.base}/page`, ctx), undefined, 'two URLs kept (the bound)');
  await previewOf(`${srv.base}/gone`, ctx);
  t.equal(await cachedEmbed(`${srv.base}/page`, ctx), undefined, 'the third evicts the oldest');
  t.equal(await cachedEmbed(`${srv.base}/gone`, ctx), null, 'a failure is cached as "no preview"');
});
