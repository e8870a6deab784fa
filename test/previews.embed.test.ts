/**
 * January's `GET /embed?url=` on the media server (issue 20): the link preview of one URL as an Embed, from
 * the same preview code and per-URL cache as the preview worker; `{"type": "None"}` when there is nothing to
 * show; bad URLs are clear JSON errors; the SSRF guard holds (an address the policy refuses is 400, a name
 * resolving to one is fetched never); the route counts in the proxy bucket.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { request } from './helpers/http.ts';
import { png } from './helpers/media.ts';
import { startTestService } from './helpers/service.ts';

t.test('GET /embed', async (t) => {
  const image = await png(40, 30);
  let hits = 0;
  const server = http.createServer((req, res) => {
    hits++;
    if (req.url === '/page') {
      return void res
        .writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
        .end('<html><head><meta property="og:title" content="Embedded"><meta property="og:description" content="One URL"><meta property="og:site_name" content="Loopback"></head><body></body></html>');
    }
    if (req.url === '/image.png') return void res.writeHead(200, { 'Content-Type': 'image/png' }).end(image);
    if (req.url === '/bare') return void res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html><body>nothing</body></html>');
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => server.close());
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const s = await startTestService(t, { RATE_LIMITS: 'on', OUTBOUND_ALLOW_PRIVATE: '127.0.0.0/8' });
  const embed = (url: string) => request(s.mediaUrl!, 'GET', `/embed?url=${encodeURIComponent(url)}`, { skipOpenApi: true });

  const page = await embed(`${base}/page`);
  t.equal(page.status, 200);
  t.match(page.body, { type: 'Website', title: 'Embedded', description: 'One URL', site_name: 'Loopback' });
  t.equal(page.headers.get('x-ratelimit-bucket'), 'proxy', 'counted in the proxy bucket');
  const before = hits;
  t.same((await embed(`${base}/page`)).body, page.body, 'the same embed again');
  t.equal(hits, before, 'from the per-URL cache: the page was not fetched again');

  const img = await embed(`${base}/image.png`);
  t.match(img.body, { type: 'Image', width: 40, height: 30 });
  t.same((await embed(`${base}/bare`)).body, { type: 'None' }, 'nothing to show: None');
  t.same((await embed(`${base}/missing`)).body, { type: 'None' }, 'a 404 page: None');

  for (const bad of ['', 'not a url', 'ftp://example.com/x', `http://${'a'.repeat(2100)}.test/`]) {
    const r = await request(s.mediaUrl!, 'GET', `/embed?url=${encodeURIComponent(bad)}`, { skipOpenApi: true });
    t.equal(r.status, 400, `bad url ${bad.slice(0, 30)}: 400`);
    t.equal(r.body.type, 'ProxyError');
  }
  const noParam = await request(s.mediaUrl!, 'GET', '/embed', { skipOpenApi: true });
  t.equal(noParam.status, 400);
  t.equal(noParam.body.type, 'ProxyError');
  const creds = await embed(`http://user:pw@127.0.0.1:1/x`);
  t.equal(creds.status, 400, 'credentials in the URL are refused');
});

t.test('GET /embed without OUTBOUND_ALLOW_PRIVATE: loopback is out of reach', async (t) => {
  let hits = 0;
  const server = http.createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html><head><meta property="og:title" content="secret"></head></html>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => server.close());
  const port = (server.address() as AddressInfo).port;
  const s = await startTestService(t, {});
  const literal = await request(s.mediaUrl!, 'GET', `/embed?url=${encodeURIComponent(`http://127.0.0.1:${port}/`)}`, { skipOpenApi: true });
  t.equal(literal.status, 400, 'a loopback address: 400');
  t.equal(literal.body.type, 'InvalidOperation');
  const named = await request(s.mediaUrl!, 'GET', `/embed?url=${encodeURIComponent(`http://localhost:${port}/`)}`, { skipOpenApi: true });
  t.same(named.body, { type: 'None' }, 'a name resolving to loopback: None');
  const metadata = await request(s.mediaUrl!, 'GET', `/embed?url=${encodeURIComponent('http://169.254.169.254/latest/meta-data/')}`, { skipOpenApi: true });
  t.equal(metadata.status, 400, 'the metadata address: 400');
  t.equal(hits, 0, 'the loopback server was never reached');
});
