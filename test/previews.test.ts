// Link previews and the image proxy through the service: a message with URLs gets a MessageAppend with its
// embeds (fetched by the worker role from a page server on loopback), `<url>` and a missing SendEmbeds
// suppress them, edits re-run them, a conflicting write retries the job, a re-run appends nothing twice,
// rebuild equals live; GET /proxy re-encodes images with size and type limits; GET / advertises January.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue } from 'bullmq';
import fc from 'fast-check';
import sharp from 'sharp';
import t from 'tap';
import { messageStream } from '../src/domain/message/events.ts';
import { ImageProxy } from '../src/media/proxy.ts';
import { outboundPolicy } from '../src/outbound/policy.ts';
import { PREVIEW_QUEUE } from '../src/previews/queue.ts';
import { Permission as P } from '../src/permissions/bits.ts';
import { generationPrefix } from '../src/readmodel/keys.ts';
import { bullConnection, bullPrefix } from '../workers/media/jobs.ts';
import { runPreviewJob } from '../workers/previews/worker.ts';
import { signup } from './helpers/http.ts';
import { get } from './helpers/media.ts';
import { createServer, dumpGeneration, dumpRebuild, join } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';
import { until } from './helpers/wait.ts';
import { connectReady } from './helpers/ws.ts';

t.test('link previews and the image proxy', async (t) => {
  const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#0f0' } }).png().toBuffer();
  const hits = new Map<string, number>();
  let release: (() => void) | undefined;
  const page = (title: string) => `<html><head><meta property="og:title" content="${title}"><meta property="og:description" content="About ${title}"><meta name="theme-color" content="#abcdef"></head><body></body></html>`;
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path === '/pic.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(png);
    if (path === '/big.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.concat([png, Buffer.alloc(5000)]));
    if (path === '/slow') {
      release = () => res.writeHead(200, { 'content-type': 'text/html' }).end(page('Slow'));
      return;
    }
    if (path.startsWith('/page')) return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page(path.slice(1)));
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const s = await startTestService(t, { RATE_LIMITS: 'off', OUTBOUND_ALLOW_PRIVATE: '127.0.0.0/8', PROXY_MAX_BYTES: String(png.length + 1000) });
  const [owner, member] = await Promise.all([signup(s), signup(s)]);
  const srv = await createServer(owner, 'Previews');
  await join(owner, srv.general, member);
  const ws = await connectReady(s, member.token);
  t.teardown(() => ws.close());
  const C = `/channels/${srv.general}/messages`;
  const appendOf = (id: string) => ws.waitFor((e) => e.type === 'MessageAppend' && e.id === id);
  const queue = new Queue(PREVIEW_QUEUE, { connection: bullConnection(s.config.redisUrl), prefix: bullPrefix(s.prefix) });
  t.teardown(() => queue.close());
  const drained = () => until('the preview queue to drain', async () => {
    const c = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    return Object.values(c).every((n) => n === 0);
  });

  t.test('GET / advertises January at the media server', async (t) => {
    const root = await owner.api.get('/');
    t.same(root.body.features.january, { enabled: true, url: s.mediaUrl });
  });

  t.test('a message with URLs gets a MessageAppend with Website and Image embeds', async (t) => {
    const sent = await owner.api.post(C, { content: `look ${base}/page-one and ${base}/pic.png and \`${base}/page-code\`` });
    t.equal(sent.status, 200);
    t.notOk(sent.body.embeds, 'the send answers at once, without previews');
    const frame = await appendOf(sent.body._id);
    t.same(frame, {
      type: 'MessageAppend',
      id: sent.body._id,
      channel: srv.general,
      append: {
        embeds: [
          { type: 'Website', title: 'page-one', description: 'About page-one', colour: '#abcdef', url: `${base}/page-one`, original_url: `${base}/page-one` },
          { type: 'Image', url: `${base}/pic.png`, width: 40, height: 30, size: 'Large' },
        ],
      },
    });
    const stored = await owner.api.get(`${C}/${sent.body._id}`);
    t.same(stored.body.embeds, frame.append.embeds, 'the stored message has them');
    t.notOk(hits.has('/page-code'), 'a URL in code is not fetched');
  });

  t.test('suppression: <url>, and a sender without SendEmbeds', async (t) => {
    const quiet = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'quiet' })).body._id as string;
    await owner.api.put(`/channels/${quiet}/permissions/default`, { permissions: { allow: 0, deny: Number(P.SendEmbeds) } });
    const wrapped = await member.api.post(C, { content: `quiet <${base}/page-wrapped>` });
    const denied = await member.api.post(`/channels/${quiet}/messages`, { content: `${base}/page-denied` });
    t.equal(denied.status, 200);
    const control = await member.api.post(C, { content: `${base}/page-control` });
    await appendOf(control.body._id);
    await drained();
    t.notOk(hits.has('/page-wrapped'), '<url> is not fetched');
    t.notOk(hits.has('/page-denied'), 'without SendEmbeds nothing is fetched');
    t.notOk((await member.api.get(`${C}/${wrapped.body._id}`)).body.embeds);
    t.notOk((await member.api.get(`/channels/${quiet}/messages/${denied.body._id}`)).body.embeds);
  });

  t.test('an edit drops the old previews and fetches the new ones', async (t) => {
    const sent = await member.api.post(C, { content: `${base}/page-before`, embeds: [{ title: 'mine' }] });
    await appendOf(sent.body._id);
    const from = ws.events.length;
    const edited = await member.api.patch(`${C}/${sent.body._id}`, { content: `now ${base}/page-after` });
    t.equal(edited.status, 200);
    const update = await ws.waitFor((e) => e.type === 'MessageUpdate' && e.id === sent.body._id, undefined, from);
    t.same(update.data.embeds, [{ type: 'Text', title: 'mine' }], 'the update keeps only the sender\'s own embeds');
    const again = await ws.waitFor((e) => e.type === 'MessageAppend' && e.id === sent.body._id, undefined, from);
    t.equal(again.append.embeds[0].title, 'page-after');
    const stored = await member.api.get(`${C}/${sent.body._id}`);
    t.same(stored.body.embeds.map((e: { type: string; title?: string }) => [e.type, e.title]), [['Text', 'mine'], ['Website', 'page-after']]);
  });

  t.test('a write during the fetch fails the append; the job is retried and appends once', async (t) => {
    const sent = await owner.api.post(C, { content: `${base}/slow` });
    await until('the slow page to be requested', () => release);
    // A reaction moves the stream on while the worker waits for the page.
    t.equal((await owner.api.put(`${C}/${sent.body._id}/reactions/%F0%9F%91%8D`, {})).status, 204);
    release!();
    const frame = await appendOf(sent.body._id);
    t.equal(frame.append.embeds[0].title, 'Slow');
    const events = await s.store.readStream(messageStream(sent.body._id));
    t.equal(events.filter((e) => e.type === 'MessageAppended').length, 1, 'appended once');
    // A worker that died after appending runs the job again: nothing more is appended.
    const ctx = { policy: s.config.outbound, limits: s.config.previews, redis: s.redis, prefix: s.prefix };
    t.same(await runPreviewJob({ messageId: sent.body._id, channelId: srv.general }, { store: s.store, ctx, requestId: 'rerun' }), []);
    t.equal((await s.store.readStream(messageStream(sent.body._id))).length, events.length, 'the re-run appended nothing');
  });

  t.test('GET /proxy: re-encoded images, size and type limits, clear errors', async (t) => {
    const ok = await get(`${s.mediaUrl}/proxy?url=${encodeURIComponent(`${base}/pic.png`)}`);
    t.equal(ok.status, 200);
    t.equal(ok.headers.get('content-type'), 'image/webp');
    t.match(await sharp(ok.bytes).metadata(), { format: 'webp', width: 40, height: 30 }, 're-encoded as WebP');
    const cachedHits = hits.get('/pic.png');
    t.equal((await get(`${s.mediaUrl}/proxy?url=${encodeURIComponent(`${base}/pic.png`)}`)).status, 200);
    t.equal(hits.get('/pic.png'), cachedHits, 'served from the cache');
    const json = async (q: string) => {
      const r = await get(`${s.mediaUrl}/proxy${q}`);
      return [r.status, JSON.parse(r.bytes.toString()).type];
    };
    t.same(await json(''), [400, 'ProxyError'], 'no url');
    t.same(await json('?url=not%20a%20url'), [400, 'ProxyError'], 'malformed url');
    t.same(await json(`?url=${encodeURIComponent('file:///etc/passwd')}`), [400, 'ProxyError'], 'another scheme');
    t.same(await json(`?url=${encodeURIComponent(`${base}/page-x`)}`), [400, 'FileTypeNotAllowed'], 'not an image');
    t.same(await json(`?url=${encodeURIComponent(`${base}/missing`)}`), [400, 'ProxyError'], 'an error status');
    t.same(await json(`?url=${encodeURIComponent(`${base}/big.png`)}`), [422, 'FileTooLarge'], 'over PROXY_MAX_BYTES');
    t.same(await json(`?url=${encodeURIComponent('http://169.254.169.254/latest/meta-data/')}`), [400, 'InvalidOperation'], 'metadata address');
    // Without OUTBOUND_ALLOW_PRIVATE the loopback page server is out of reach.
    const strict = new ImageProxy({ ...s.config, outbound: outboundPolicy() });
    const refused = await strict.get(`${base}/pic.png`).then(() => null, (err: { body?: { type: string } }) => err.body?.type);
    t.equal(refused, 'InvalidOperation');
    // Other spellings of loopback normalise to it before the check.
    const port = new URL(base).port;
    for (const host of ['2130706433', '0x7f.0.0.1', '127.1', '[::ffff:127.0.0.1]', '0', '[::1]']) {
      const r = await strict.get(`http://${host}:${port}/pic.png`).then(() => null, (err: { body?: { type: string } }) => err.body?.type);
      t.equal(r, 'InvalidOperation', `http://${host}:${port} refused`);
    }
  });

  t.test('fuzzing the proxy query: never a 5xx, always a JSON type', async (t) => {
    const values = fc.sample(fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.webUrl().map((u) => u.replace(/^https?:\/\/[^/]+/, base)), fc.constantFrom('%', '%zz', 'http://', 'http://[', 'javascript:alert(1)', 'data:image/png;base64,AAAA', 'x'.repeat(5000))), 60);
    for (const v of values) {
      let q: string;
      try {
        q = encodeURIComponent(v);
      } catch {
        continue; // a lone surrogate cannot be sent at all
      }
      const r = await get(`${s.mediaUrl}/proxy?url=${q}`).catch((err: Error) => {
        console.error('FAILED', JSON.stringify(v), err.cause);
        throw err;
      });
      t.ok(r.status < 500, `status ${r.status} for ${JSON.stringify(v).slice(0, 60)}`);
      if (r.status !== 200) t.type(JSON.parse(r.bytes.toString()).type, 'string');
    }
    const raw = await get(`${s.mediaUrl}/proxy?url=%zz&url=x`);
    t.equal(raw.status, 400, 'a repeated or badly escaped parameter');
  });

  t.test('rebuild equals live', async (t) => {
    await drained();
    const live = await dumpGeneration(s.redis, generationPrefix(s.prefix, s.readModels.generation!));
    t.same(await dumpRebuild(t, s.redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions }), live);
  });
});
