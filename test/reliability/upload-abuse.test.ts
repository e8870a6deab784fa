/**
 * Upload abuse against the real media server and workers: decompression bombs, polyglots, mislabelled files,
 * truncated images, slow-loris bodies and oversize bodies. For each refusal: the right status and a JSON
 * `{type}`, the worker keeps serving (a normal upload right after succeeds) and NOTHING is stored — no blob
 * under `DATA_DIR/files`, no `file-…` event, no BullMQ job in any state.
 *
 * Polyglots whose bytes are a valid image (PNG/JPEG/WebP/GIF with HTML or a JAR appended, a GIF/JS header, a
 * BMP with a payload after or inside it) are not refused: the pipeline decodes and re-encodes every raster
 * image, so the payload is not stored and what is served is the re-encoded image (inline, sniffed type,
 * `nosniff`). Refusing "data after the image" would refuse ordinary phone photos (motion photos append a
 * video after the JPEG). Whatever is not a raster image — an HTML file named `.png`, SVG, a ZIP named `.gif`
 * — is refused on image-only tags and, as an attachment, served only as `Content-Disposition: attachment`
 * with `nosniff` and the type sniffed from its bytes.
 */
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import t from 'tap';
import sharp from 'sharp';
import { Queue } from 'bullmq';
import { loadFile } from '../../src/files.ts';
import { bullConnection, bullPrefix, queueName } from '../../workers/media/jobs.ts';
import { processUpload } from '../../workers/media/pipeline.ts';
import { POLICIES, TAGS, type Tag } from '../../workers/media/policy.ts';
import { signup, type Res, type TestUser } from '../helpers/http.ts';
import { blackPng, bmp24, get, jpeg, png, upload, useFile } from '../helpers/media.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const HTML = Buffer.from('<!DOCTYPE html><html><body><script>alert(document.cookie)</script></body></html>\n');

// ---- crafted files ------------------------------------------------------------------------------------------

/** A small JPEG whose frame header claims `width` × `height` (the decoder would allocate for that). */
async function bombJpeg(width: number, height: number): Promise<Buffer> {
  const j = Buffer.from(await jpeg(16, 16));
  for (let i = 2; i < j.length - 9; i++) {
    if (j[i] === 0xff && j[i + 1]! >= 0xc0 && j[i + 1]! <= 0xc2) {
      j.writeUInt16BE(height, i + 5);
      j.writeUInt16BE(width, i + 7);
      return j;
    }
  }
  throw new Error('no SOF marker');
}

/** An animated GIF of `frames` copies of one w×h frame: every frame within the side limit, all of them over the pixel budget. */
async function framesGif(w: number, h: number, frames: number): Promise<Buffer> {
  const one = await sharp({ create: { width: w, height: h, channels: 3, background: { r: 9, g: 9, b: 9 } } }).gif().toBuffer();
  let pos = 13;
  if (one[10]! & 0x80) pos += 3 * (1 << ((one[10]! & 7) + 1));
  const head = one.subarray(0, pos);
  let image: Buffer | undefined;
  while (pos < one.length && one[pos] !== 0x3b) {
    const start = pos;
    if (one[pos] === 0x21) pos += 2;
    else if (one[pos] === 0x2c) {
      const flags = one[pos + 9]!;
      pos += 10 + (flags & 0x80 ? 3 * (1 << ((flags & 7) + 1)) : 0) + 1;
    } else throw new Error(`unexpected GIF block ${one[pos]}`);
    while (one[pos] !== 0) pos += one[pos]! + 1;
    pos += 1;
    if (one[start] === 0x2c) image = one.subarray(start, pos);
  }
  const loop = Buffer.from([0x21, 0xff, 0x0b, ...Buffer.from('NETSCAPE2.0'), 0x03, 0x01, 0x00, 0x00, 0x00]);
  const gce = Buffer.from([0x21, 0xf9, 0x04, 0x00, 0x0a, 0x00, 0x00, 0x00]);
  return Buffer.concat([head, loop, ...Array.from({ length: frames }, () => Buffer.concat([gce, image!])), Buffer.from([0x3b])]);
}

/** A BMP whose payload sits between its header and its pixels (the pixel offset points past it). */
function bmpWithGap(payload: Buffer): Buffer {
  const b = bmp24(4, 4);
  const out = Buffer.concat([b.subarray(0, 54), payload, b.subarray(54)]);
  out.writeUInt32LE(out.length, 2);
  out.writeUInt32LE(54 + payload.length, 10);
  return out;
}

/** A 32-bit BMP with an alpha mask (V4 header): 2×2, one pixel half transparent. */
function bmp32Alpha(): Buffer {
  const b = Buffer.alloc(14 + 108 + 16);
  b.write('BM', 0, 'latin1');
  b.writeUInt32LE(b.length, 2);
  b.writeUInt32LE(122, 10);
  b.writeUInt32LE(108, 14);
  b.writeInt32LE(2, 18);
  b.writeInt32LE(-2, 22); // top-down
  b.writeUInt16LE(1, 26);
  b.writeUInt16LE(32, 28);
  b.writeUInt32LE(3, 30);
  b.writeUInt32LE(0x00ff0000, 54);
  b.writeUInt32LE(0x0000ff00, 58);
  b.writeUInt32LE(0x000000ff, 62);
  b.writeUInt32LE(0xff000000, 66);
  const px = [
    [10, 20, 30, 255],
    [40, 50, 60, 128],
    [70, 80, 90, 255],
    [100, 110, 120, 0],
  ]; // BGRA
  px.forEach((p, i) => b.set(p, 122 + i * 4));
  return b;
}

/** A minimal ZIP (a "JAR" with a manifest) to append to an image. */
const JAR = Buffer.concat([Buffer.from('504b0304', 'hex'), Buffer.from('META-INF/MANIFEST.MF Main-Class: Evil <script>x</script>'), Buffer.from('504b0506', 'hex'), Buffer.alloc(18)]);
const PDF = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n');
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>');

// ---- what is stored -----------------------------------------------------------------------------------------

/** Everything an upload can leave behind: blobs, `file-…` events and BullMQ jobs of every tag in every state. */
interface Stored {
  blobs: string[];
  fileEvents: number;
  jobs: number;
}

function listFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? listFiles(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

async function stored(s: TestService, queues: Queue[]): Promise<Stored> {
  let fileEvents = 0;
  for await (const e of s.store.readAll()) if (e.stream.startsWith('file-')) fileEvents++;
  const counts = await Promise.all(queues.map((q) => q.getJobCounts()));
  const jobs = counts.reduce((n, c) => n + Object.values(c).reduce((a, b) => a + b, 0), 0);
  return { blobs: listFiles(path.join(s.dataDir, 'files')).map((f) => path.relative(s.dataDir, f)).sort(), fileEvents, jobs };
}

// ---- raw HTTP for slow clients -----------------------------------------------------------------------------

/** The answer of a raw request: status, parsed JSON body, when it came and whether the server closed the socket. */
interface RawAnswer {
  status: number;
  body: any;
  headers: string;
  /** Milliseconds from connecting to the first byte of the answer. */
  ms: number;
  closedByServer: boolean;
  bytesSent: number;
}

/**
 * Sends a multipart upload over a raw socket: the head and the form's preamble at once, then `file` in
 * `chunk`-byte pieces every `everyMs` (stopping after `stopAfter` bytes when given, keeping the socket open),
 * then the closing boundary. Resolves with the server's answer.
 */
function slowUpload(mediaUrl: string, token: string, tag: string, file: Buffer, o: { chunk: number; everyMs: number; stopAfter?: number; giveUpMs: number; connectionClose?: boolean }): Promise<RawAnswer> {
  const u = new URL(mediaUrl);
  const boundary = 'sl0wl0ris';
  const preamble = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.png"\r\nContent-Type: image/png\r\n\r\n`);
  const epilogue = Buffer.from(`\r\n--${boundary}--\r\n`);
  const length = preamble.length + file.length + epilogue.length;
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(Number(u.port), u.hostname);
    let answer = Buffer.alloc(0);
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    let closedByServer = true;
    // A server that never answers or never closes: give up, and say so.
    const giveUp = setTimeout(() => {
      closedByServer = false;
      socket.destroy();
    }, o.giveUpMs);
    const write = (b: Buffer) => {
      if (socket.destroyed || !socket.writable) return;
      socket.write(b);
      sent += b.length;
    };
    socket.on('connect', () => {
      write(Buffer.from(`POST /${tag} HTTP/1.1\r\nHost: ${u.host}\r\nX-Session-Token: ${token}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${length}\r\n${o.connectionClose ? 'Connection: close\r\n' : ''}\r\n`));
      write(preamble);
      let at = 0;
      timer = setInterval(() => {
        if (o.stopAfter !== undefined && at >= o.stopAfter) return; // stalled: the socket stays open, silent
        if (at >= file.length) {
          clearInterval(timer);
          write(epilogue);
          return;
        }
        write(file.subarray(at, at + o.chunk));
        at += o.chunk;
      }, o.everyMs);
    });
    let answeredMs = -1;
    socket.on('data', (d: Buffer) => {
      if (answeredMs < 0) answeredMs = Date.now() - started;
      answer = Buffer.concat([answer, d]);
    });
    socket.on('error', () => {}); // a reset after the answer is fine
    socket.on('close', () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      const text = answer.toString('utf8');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (!m) return reject(new Error(`no HTTP answer after ${Date.now() - started} ms: ${JSON.stringify(text.slice(0, 200))}`));
      const split = text.indexOf('\r\n\r\n');
      let body: unknown;
      try {
        body = JSON.parse(text.slice(split + 4));
      } catch {
        body = undefined;
      }
      resolve({ status: Number(m[1]), body, headers: text.slice(0, split), ms: answeredMs, closedByServer, bytesSent: sent });
    });
  });
}

/** One request through `http.request` (with an agent, so connections are reused); never throws on a reset. */
function postRaw(url: string, body: Buffer | undefined, headers: Record<string, string>, agent: http.Agent, method = 'POST'): Promise<{ status: number; body: any; error?: string }> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method, headers: { ...headers, ...(body ? { 'Content-Length': String(body.length) } : {}) }, agent }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', (e) => resolve({ status: -1, body: undefined, error: e.message }));
    req.end(body);
  });
}

// ---- the tests ----------------------------------------------------------------------------------------------

t.test('upload abuse', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const alice = await signup(s);
  const queues = TAGS.map((tag) => new Queue(queueName(tag), { connection: bullConnection(s.config.redisUrl), prefix: bullPrefix(s.prefix) }));
  t.teardown(() => Promise.all(queues.map((q) => q.close())));
  const normal = await png(24, 24, { r: 200, g: 10, b: 10 });

  /** Sends one abusive upload; expects the refusal, then nothing stored, then a normal upload to pass. */
  const refused = async (t: Tap, what: string, send: () => Promise<Res | RawAnswer>, status: number, type: string) => {
    const before = await stored(s, queues);
    const r = await send();
    t.same([r.status, r.body?.type], [status, type], `${what}: ${status} ${type}`);
    t.same(await stored(s, queues), before, `${what}: nothing stored (no blob, no file event, no job)`);
    const next = await upload(s, alice.token, 'avatars', normal, { filename: 'fine.png', contentType: 'image/png' });
    t.equal(next.status, 200, `${what}: a normal upload right after succeeds`);
  };
  /** Uploads, uses the file (so it is served) and fetches its original. */
  const storeAndServe = async (tag: Tag, bytes: Buffer, filename: string, contentType: string) => {
    const r = await upload(s, alice.token, tag, bytes, { filename, contentType });
    if (r.status !== 200) throw new Error(`upload ${filename}: ${r.status} ${r.text}`);
    const record = await loadFile(s.deps, r.body.id);
    await useFile(s, alice.userId, r.body.id, tag);
    const served = await get(`${s.mediaUrl}/${tag}/${r.body.id}/original`);
    return { id: r.body.id as string, record: record!, served };
  };

  t.test('decompression bombs are refused on every tag', async (t) => {
    const bombs: Array<[string, Buffer]> = [
      ['PNG 20,000 × 20,000 (a side over 10,000)', blackPng(20_000, 20_000)],
      ['PNG 8,000 × 8,000 (64 megapixels, sides allowed)', blackPng(8_000, 8_000)],
      ['JPEG claiming 30,000 × 30,000', await bombJpeg(30_000, 30_000)],
      ['GIF of 60 frames of 1,000 × 1,000 (60 megapixels in all)', await framesGif(1_000, 1_000, 60)],
    ];
    for (const [what, bytes] of bombs) {
      t.ok(bytes.length < 500_000, `${what}: ${bytes.length} bytes`);
      for (const tag of ['emojis', 'attachments'] as const) {
        await refused(t, `${what} as ${tag}`, () => upload(s, alice.token, tag, bytes, { filename: 'bomb.png', contentType: 'image/png' }), 400, 'FileTypeNotAllowed');
      }
    }
  });

  t.test('a compressed request body is bounded by what it inflates to', async (t) => {
    // 200 MB of JSON whitespace in a 200 KB gzip: the API inflates while reading and stops at its 1 MB cap.
    const bomb = gzipSync(Buffer.alloc(200_000_000, 0x20), { level: 9 });
    t.ok(bomb.length < 1_000_000, `the gzip is ${bomb.length} bytes`);
    const head = await s.store.headPosition();
    const api = await fetch(`${s.apiUrl}/servers/create`, {
      method: 'POST',
      headers: { 'X-Session-Token': alice.token, 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
      body: bomb,
    });
    const apiBody = (await api.json()) as { type?: string };
    t.same([api.status, apiBody.type], [413, 'PayloadTooLarge'], 'API: 413 PayloadTooLarge');
    t.equal(api.headers.get('connection'), 'close', 'the connection, with the rest of the body unread, is closed after the answer');
    // Again and again over a keep-alive agent: every answer arrives (no reset, no poisoned connection).
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    t.teardown(() => agent.destroy());
    for (let i = 0; i < 5; i++) {
      const r = await postRaw(`${s.apiUrl}/servers/create`, bomb, { 'X-Session-Token': alice.token, 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }, agent);
      t.same([r.status, r.body?.type], [413, 'PayloadTooLarge'], `API, request ${i + 2}: 413`);
    }
    const after = await postRaw(`${s.apiUrl}/users/@me`, undefined, { 'X-Session-Token': alice.token }, agent, 'GET');
    t.equal(after.status, 200, 'and the agent goes on working');
    t.equal(await s.store.headPosition(), head, 'API: nothing appended');
    // The media server does not inflate: a gzip-encoded form is not a form.
    const form = Buffer.from('--b\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\n' + 'x'.repeat(1000) + '\r\n--b--\r\n');
    await refused(
      t,
      'gzip-encoded multipart form',
      async () => {
        const r = await fetch(`${s.mediaUrl}/avatars`, {
          method: 'POST',
          headers: { 'X-Session-Token': alice.token, 'Content-Type': 'multipart/form-data; boundary=b', 'Content-Encoding': 'gzip' },
          body: gzipSync(form),
        });
        return { status: r.status, body: await r.json(), headers: r.headers, text: '' };
      },
      400,
      'FailedValidation',
    );
  });

  t.test('polyglots that are valid images are stored re-encoded: the payload is gone, the image is served inline', async (t) => {
    const base = {
      png: await png(16, 16),
      jpeg: Buffer.from(await jpeg(16, 16)),
      webp: await sharp({ create: { width: 16, height: 16, channels: 3, background: { r: 1, g: 2, b: 3 } } }).webp().toBuffer(),
      gif: await sharp({ create: { width: 16, height: 16, channels: 3, background: { r: 1, g: 2, b: 3 } } }).gif().toBuffer(),
    };
    const gifJs = Buffer.concat([Buffer.from('GIF89a/*'), base.gif.subarray(8), Buffer.from('*/=1;alert(document.cookie)//')]);
    const cases: Array<[string, Buffer, string, Tag]> = [
      ['PNG + HTML', Buffer.concat([base.png, HTML]), 'image/png', 'avatars'],
      ['JPEG + HTML', Buffer.concat([base.jpeg, HTML]), 'image/jpeg', 'icons'],
      ['WebP + HTML', Buffer.concat([base.webp, HTML]), 'image/webp', 'banners'],
      ['GIF + JAR (GIFAR)', Buffer.concat([base.gif, JAR]), 'image/gif', 'emojis'],
      ['GIF/JS polyglot', gifJs, 'image/gif', 'avatars'],
      ['PNG + HTML as an attachment', Buffer.concat([base.png, HTML]), 'image/png', 'attachments'],
      ['BMP + HTML', Buffer.concat([bmp24(4, 4), HTML]), 'image/bmp', 'icons'],
      ['BMP with HTML between header and pixels', bmpWithGap(HTML), 'image/bmp', 'attachments'],
    ];
    for (const [what, bytes, type, tag] of cases) {
      const { record, served } = await storeAndServe(tag, bytes, 'polyglot.html', 'text/html');
      t.equal(record.file.content_type, type, `${what}: stored as ${type}, sniffed (not the claimed text/html)`);
      t.equal(record.file.metadata.type, 'Image');
      t.equal(served.status, 200);
      t.equal(served.headers.get('content-type'), type, `${what}: served as ${type}`);
      t.equal(served.headers.get('x-content-type-options'), 'nosniff');
      t.match(served.headers.get('content-security-policy'), /sandbox/);
      t.match(served.headers.get('content-disposition'), /^inline;/, `${what}: inline (a re-encoded raster image)`);
      t.notOk(served.bytes.includes('<script') || served.bytes.includes('alert(') || served.bytes.includes('PK\u0003\u0004'), `${what}: the payload is not served`);
      const blob = fs.readFileSync(s.blobs.originalPath(record.file._id));
      t.notOk(blob.includes('<script') || blob.includes('alert(') || blob.includes('PK\u0003\u0004'), `${what}: nor stored`);
    }
  });

  t.test('BMP is stored re-encoded from its pixels: 24-bit and 32-bit with alpha survive exactly', async (t) => {
    const plain = bmp24(5, 3);
    const out24 = await processUpload(plain, 'a.bmp', POLICIES.icons);
    t.ok(out24.original.equals(plain), 'a canonical 24-bit BMP comes back byte for byte');
    const out32 = await processUpload(Buffer.concat([bmp32Alpha(), HTML]), 'a.bmp', POLICIES.icons);
    t.equal(out32.original.readUInt16LE(28), 32, '32 bits per pixel');
    t.equal(out32.original.readUInt32LE(66), 0xff000000, 'an alpha mask');
    t.notOk(out32.original.includes('<script'), 'the appended HTML is gone');
    const offset = out32.original.readUInt32LE(10);
    // Stored bottom-up: the last row first.
    const rows = [out32.original.subarray(offset + 8, offset + 16), out32.original.subarray(offset, offset + 8)];
    t.same([...Buffer.concat(rows)], [10, 20, 30, 255, 40, 50, 60, 128, 70, 80, 90, 255, 100, 110, 120, 0], 'every BGRA pixel, alpha included');
  });

  t.test('files that are not images: refused on image-only tags, served only as attachments with the sniffed type', async (t) => {
    const cases: Array<[string, Buffer, string, string, string]> = [
      ['HTML named .png', HTML, 'evil.png', 'image/png', 'text/plain'],
      ['SVG with a script named .png', SVG, 'logo.png', 'image/png', 'image/svg+xml'],
      ['ZIP named .gif', JAR, 'cat.gif', 'image/gif', 'application/zip'],
      ['PDF named .jpg', PDF, 'photo.jpg', 'image/jpeg', 'application/pdf'],
    ];
    for (const [what, bytes, filename, claimed, sniffed] of cases) {
      for (const tag of ['avatars', 'emojis', 'icons', 'banners', 'backgrounds'] as const) {
        await refused(t, `${what} as ${tag}`, () => upload(s, alice.token, tag, bytes, { filename, contentType: claimed }), 400, 'FileTypeNotAllowed');
      }
      const { record, served, id } = await storeAndServe('attachments', bytes, filename, claimed);
      t.equal(record.file.content_type, sniffed, `${what}: stored as ${sniffed}, not the claimed ${claimed}`);
      t.not(record.file.metadata.type, 'Image');
      t.equal(served.status, 200);
      t.match(served.headers.get('content-type'), new RegExp(`^${sniffed.replace('+', '\\+')}`), `${what}: served as ${sniffed}`);
      t.match(served.headers.get('content-disposition'), /^attachment;/, `${what}: only as an attachment`);
      t.equal(served.headers.get('x-content-type-options'), 'nosniff');
      t.match(served.headers.get('content-security-policy'), /sandbox/);
      const preview = await get(`${s.mediaUrl}/attachments/${id}`);
      t.equal(preview.status, 308, `${what}: no inline preview, a redirect to the original`);
    }
  });

  t.test('mislabelled images are typed by their bytes', async (t) => {
    const jpg = Buffer.from(await jpeg(20, 10));
    const { record, served } = await storeAndServe('avatars', jpg, 'photo.png', 'image/png');
    t.equal(record.file.content_type, 'image/jpeg', 'a JPEG named .png and sent as image/png is a JPEG');
    t.equal(served.headers.get('content-type'), 'image/jpeg');
    t.same(record.file.metadata, { type: 'Image', width: 20, height: 10, animated: false });
  });

  t.test('truncated images are refused on every tag, attachments included', async (t) => {
    const whole = {
      PNG: await png(40, 40, { r: 1, g: 200, b: 3 }),
      JPEG: Buffer.from(await jpeg(64, 64)),
      GIF: await sharp({ create: { width: 40, height: 40, channels: 3, background: { r: 9, g: 90, b: 200 } } }).gif().toBuffer(),
      WebP: await sharp({ create: { width: 40, height: 40, channels: 3, background: { r: 9, g: 90, b: 200 } } }).webp().toBuffer(),
      BMP: bmp24(8, 8),
    };
    for (const [kind, bytes] of Object.entries(whole)) {
      const cut = bytes.subarray(0, Math.floor(bytes.length * 0.6));
      for (const tag of ['avatars', 'attachments'] as const) {
        await refused(t, `${kind} cut at 60% as ${tag}`, () => upload(s, alice.token, tag, cut, { filename: `cut.${kind.toLowerCase()}` }), 400, 'FileTypeNotAllowed');
      }
    }
  });

  t.test('oversize bodies', async (t) => {
    await refused(t, 'Content-Length over the emojis limit', () => upload(s, alice.token, 'emojis', Buffer.alloc(5_000_000, 1)), 422, 'FileTooLarge');
    await refused(t, 'one byte over the icons limit', () => upload(s, alice.token, 'icons', Buffer.alloc(POLICIES.icons.maxBytes + 1, 1)), 422, 'FileTooLarge');
    await refused(
      t,
      'a chunked body that never ends',
      async () => {
        const answer = await chunkedForever(`${s.mediaUrl}/avatars`, alice.token, 2_000_000_000);
        t.ok(answer.written < 64_000_000, `cut off after ${answer.written} bytes`);
        return answer;
      },
      422,
      'FileTooLarge',
    );
    for (let i = 0; i < 3; i++) {
      await refused(t, `a raw client writing without pause (${i + 1})`, () => rawChunkedForever(`${s.mediaUrl}/avatars`, alice.token, 2_000_000_000), 422, 'FileTooLarge');
    }
    const many = new FormData();
    for (let i = 0; i < 20; i++) many.append(`f${i}`, 'x');
    many.append('file', new Blob([normal]), 'a.png');
    await refused(t, 'a form with 20 fields', () => upload(s, alice.token, 'avatars', undefined, { form: many }), 400, 'FailedValidation');
    const bigField = new FormData();
    bigField.append('note', 'x'.repeat(100_000));
    bigField.append('file', new Blob([normal]), 'a.png');
    await refused(t, 'a 100 KB text field', () => upload(s, alice.token, 'avatars', undefined, { form: bigField }), 400, 'FailedValidation');
    const head = await s.store.headPosition();
    const json = await fetch(`${s.apiUrl}/servers/create`, {
      method: 'POST',
      headers: { 'X-Session-Token': alice.token, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'x', description: 'y'.repeat(2_000_000) }),
    });
    t.same([json.status, ((await json.json()) as { type?: string }).type], [413, 'PayloadTooLarge'], 'a 2 MB JSON body to the API: 413');
    t.equal(await s.store.headPosition(), head, 'nothing appended');
  });
});

t.test('slow-loris uploads are cut off (UPLOAD_IDLE_TIMEOUT_MS, UPLOAD_BODY_TIMEOUT_MS)', async (t) => {
  const idleMs = 600;
  const bodyMs = 4000;
  const giveUpMs = bodyMs + 10_000;
  const s = await startTestService(t, { RATE_LIMITS: 'off', UPLOAD_IDLE_TIMEOUT_MS: String(idleMs), UPLOAD_BODY_TIMEOUT_MS: String(bodyMs) });
  const bob = await signup(s);
  const queues = TAGS.map((tag) => new Queue(queueName(tag), { connection: bullConnection(s.config.redisUrl), prefix: bullPrefix(s.prefix) }));
  t.teardown(() => Promise.all(queues.map((q) => q.close())));
  const file = await png(32, 32, { r: 50, g: 60, b: 70 });

  t.test('a body that stops: 408 after the idle timeout, nothing stored', async (t) => {
    const before = await stored(s, queues);
    const r = await slowUpload(s.mediaUrl, bob.token, 'avatars', file, { chunk: 40, everyMs: 50, stopAfter: 80, giveUpMs });
    t.equal(r.status, 408);
    t.equal(r.body?.type, 'FailedValidation');
    t.match(r.body?.error, /stalled/);
    t.ok(r.ms >= idleMs && r.ms < bodyMs, `answered after ${r.ms} ms (idle ${idleMs} ms)`);
    t.match(r.headers, /connection: close/i, 'Connection: close');
    t.ok(r.closedByServer, 'the server closed the connection (the client never did)');
    t.same(await stored(s, queues), before, 'nothing stored');
    t.same(fs.readdirSync(s.blobs.incomingDir), [], 'no partial upload');
  });

  t.test('a body that trickles a few bytes at a time: 408 at the body timeout, while other uploads pass', async (t) => {
    const before = await stored(s, queues);
    const slow = slowUpload(s.mediaUrl, bob.token, 'avatars', Buffer.alloc(100_000, 1), { chunk: 4, everyMs: 100, giveUpMs });
    // Meanwhile the media server and its workers serve everyone else.
    await new Promise((r) => setTimeout(r, 300));
    const other = await upload(s, bob.token, 'emojis', await png(8, 8), { filename: 'quick.png' });
    t.equal(other.status, 200, 'a normal upload during the slow one succeeds');
    const r = await slow;
    t.same([r.status, r.body?.type], [408, 'FailedValidation']);
    t.match(r.body?.error, /not received within/);
    t.ok(r.ms >= bodyMs && r.ms < bodyMs + 2000, `answered after ${r.ms} ms (body timeout ${bodyMs} ms)`);
    t.ok(r.bytesSent < 1000, `the client got ${r.bytesSent} bytes in`);
    const after = await stored(s, queues);
    t.equal(after.jobs, before.jobs + 1, 'only the normal upload made a job');
    t.equal(after.fileEvents, before.fileEvents + 1, 'and an event');
    t.same(fs.readdirSync(s.blobs.incomingDir), [], 'no partial upload');
  });

  t.test('a slow but steady upload within both limits passes', async (t) => {
    // 13 writes 150 ms apart: never idle for 600 ms, done in about 2 s (body timeout 4 s).
    const r = await slowUpload(s.mediaUrl, bob.token, 'avatars', file, { chunk: Math.ceil(file.length / 12), everyMs: 150, giveUpMs, connectionClose: true });
    t.equal(r.status, 200, `${r.ms} ms, ${JSON.stringify(r.body)}`);
    t.match(r.body, { id: /^[A-Za-z0-9_-]{42}$/ }, "an unguessable 42-character file id");
  });
});

/** The assertions `refused` makes, on the subtest that calls it. */
type Tap = Pick<typeof t, 'same' | 'equal' | 'ok'>;

/**
 * The worst client: writes a chunked multipart body in a tight loop over a raw socket and never looks at the
 * answer until the socket closes. It still reads the answer only if the server does not reset the connection
 * while bytes are in flight (the lingering close of `src/http/middleware/linger.ts`).
 */
function rawChunkedForever(url: string, token: string, total: number): Promise<RawAnswer> {
  const u = new URL(url);
  const boundary = 'b0undary';
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let written = 0;
    let answeredMs = -1;
    const socket = net.connect(Number(u.port), u.hostname);
    let answer = Buffer.alloc(0);
    socket.on('connect', () => {
      socket.write(`POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nX-Session-Token: ${token}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nTransfer-Encoding: chunked\r\n\r\n`);
      const first = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="huge.bin"\r\n\r\n`);
      socket.write(`${first.length.toString(16)}\r\n`);
      socket.write(first);
      socket.write('\r\n');
      const chunk = Buffer.concat([Buffer.from(`${(256 * 1024).toString(16)}\r\n`), Buffer.alloc(256 * 1024, 7), Buffer.from('\r\n')]);
      const pump = () => {
        while (written < total && !socket.destroyed) {
          written += chunk.length;
          if (!socket.write(chunk)) return void socket.once('drain', pump);
        }
      };
      pump();
    });
    socket.on('data', (d: Buffer) => {
      if (answeredMs < 0) answeredMs = Date.now() - started;
      answer = Buffer.concat([answer, d]);
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      const text = answer.toString('utf8');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (!m) return reject(new Error(`the connection closed without an answer after ${written} bytes`));
      const split = text.indexOf('\r\n\r\n');
      resolve({ status: Number(m[1]), body: JSON.parse(text.slice(split + 4)), headers: text.slice(0, split), ms: answeredMs, closedByServer: true, bytesSent: written });
    });
  });
}

/**
 * Streams a multipart body of up to `total` bytes (chunked: no Content-Length) as fast as the server takes
 * it, as a real HTTP client does (fetch with a stream body); reports the answer and how much was sent.
 */
async function chunkedForever(url: string, token: string, total: number): Promise<Res & { written: number }> {
  let written = 0;
  const chunk = new Uint8Array(256 * 1024).fill(7);
  const head = new TextEncoder().encode('--b\r\nContent-Disposition: form-data; name="file"; filename="huge.bin"\r\n\r\n');
  const body = new ReadableStream<Uint8Array>({
    start: (c) => c.enqueue(head),
    pull: (c) => {
      if (written >= total) return c.close();
      written += chunk.length;
      c.enqueue(chunk);
    },
  });
  const r = await fetch(url, {
    method: 'POST',
    body,
    duplex: 'half',
    headers: { 'X-Session-Token': token, 'Content-Type': 'multipart/form-data; boundary=b' },
  } as RequestInit & { duplex: 'half' });
  const text = await r.text();
  return { status: r.status, body: JSON.parse(text), headers: r.headers, text, written };
}
