// The media pipeline and the tag policy table, without Redis: every image is made by sharp (or by hand, byte by
// byte, for formats sharp cannot write) at test time.
import t from 'tap';
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { ERROR_STATUS } from '../src/errors.ts';
import { MediaRejection, processUpload, sniff, type ProcessedFile } from '../workers/media/pipeline.ts';
import { blackPng, bmp24, PNG_SIGNATURE, pngChunk, pngHeader } from './helpers/media.ts';
import { IMAGE_LIMITS, isTag, POLICIES, TAGS, type TagPolicy } from '../workers/media/policy.ts';

const IMAGE_ONLY = TAGS.filter((tag) => tag !== 'attachments');

/** Awaits a promise that must reject with a MediaRejection, and returns it. */
async function rejection(p: Promise<unknown>): Promise<MediaRejection> {
  try {
    await p;
  } catch (err) {
    if (err instanceof MediaRejection) return err;
    throw err;
  }
  throw new Error('expected a MediaRejection, the upload was accepted');
}

function image(width: number, height: number, colour = { r: 200, g: 30, b: 30 }) {
  return sharp({ create: { width, height, channels: 3, background: colour } });
}

/** Inserts chunks right after IHDR. */
function withChunks(png: Buffer, ...chunks: Buffer[]): Buffer {
  const afterIhdr = 8 + 12 + png.readUInt32BE(8);
  return Buffer.concat([png.subarray(0, afterIhdr), ...chunks, png.subarray(afterIhdr)]);
}

/** Tag numbers in IFD0 of a raw EXIF block ("Exif\0\0" + TIFF). */
function ifd0Tags(exif: Buffer): number[] {
  const tiff = exif.subarray(exif.indexOf('Exif\0\0') + 6);
  const le = tiff.toString('latin1', 0, 2) === 'II';
  const u16 = (o: number) => (le ? tiff.readUInt16LE(o) : tiff.readUInt16BE(o));
  const u32 = (o: number) => (le ? tiff.readUInt32LE(o) : tiff.readUInt32BE(o));
  const ifd = u32(4);
  return Array.from({ length: u16(ifd) }, (_, i) => u16(ifd + 2 + i * 12));
}

const GPS_IFD_POINTER = 0x8825;

type Test = Pick<typeof t, 'ok' | 'same' | 'equal'>;

/** Whether two RGB triples are within `tolerance` per channel (lossy WebP previews shift colours a little). */
function near(actual: number[], expected: number[], tolerance = 16): boolean {
  return expected.every((v, i) => Math.abs((actual[i] ?? -999) - v) <= tolerance);
}

async function pixel(png: Buffer, x: number, y: number): Promise<number[]> {
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  const o = (y * info.width + x) * info.channels;
  return [data[o] ?? -1, data[o + 1] ?? -1, data[o + 2] ?? -1];
}

function expectImage(t: Test, out: ProcessedFile, contentType: string, width: number, height: number, animated = false) {
  t.equal(out.contentType, contentType);
  t.same(out.metadata, { type: 'Image', width, height, animated });
  t.equal(out.animated, animated);
  t.equal(out.size, out.original.length);
}

/** CPU time (user + system, every thread of this process) used since `from` (a `process.cpuUsage()`), in ms. */
function cpuMsSince(from: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(from);
  return (used.user + used.system) / 1000;
}

t.test('policy table', async (t) => {
  t.same(
    Object.fromEntries(TAGS.map((tag) => [tag, POLICIES[tag].maxBytes])),
    { attachments: 20_000_000, avatars: 4_000_000, backgrounds: 6_000_000, icons: 2_500_000, banners: 6_000_000, emojis: 500_000 },
  );
  t.same(TAGS.filter((tag) => !POLICIES[tag].imageOnly), ['attachments']);
  t.same(
    Object.fromEntries(TAGS.map((tag) => [tag, [POLICIES[tag].preview.width, POLICIES[tag].preview.height]])),
    { attachments: [1280, 1280], avatars: [128, 128], backgrounds: [1280, 720], icons: [128, 128], banners: [480, 480], emojis: [128, 128] },
  );
  for (const tag of TAGS) {
    t.equal(POLICIES[tag].tag, tag);
    t.same([POLICIES[tag].maxPixels, POLICIES[tag].maxSide], [40_000_000, 10_000]);
  }
  t.ok(TAGS.every(isTag));
  t.notOk(isTag('evil'));
  t.notOk(isTag('toString'));
  t.notOk(isTag('Avatars'));
});

t.test('a JPEG with GPS EXIF and orientation 6 comes back upright and without any metadata', async (t) => {
  // Left half red, right half blue; orientation 6 means "rotate 90° clockwise to display", so red ends on top.
  const left = await image(100, 100, { r: 255, g: 0, b: 0 }).png().toBuffer();
  const input = await image(200, 100, { r: 0, g: 0, b: 255 })
    .composite([{ input: left, left: 0, top: 0 }])
    .jpeg({ quality: 95 })
    .withMetadata({ orientation: 6 })
    .withExif({ IFD0: { Make: 'AcmeCam', Copyright: 'EXIFMARKER' }, IFD3: { GPSLatitudeRef: 'N', GPSMapDatum: 'GPSMARKER' } })
    .withIccProfile('p3')
    .toBuffer();
  const before = await sharp(input).metadata();
  t.equal(before.orientation, 6, 'input carries orientation 6');
  t.ok(before.exif && ifd0Tags(before.exif).includes(GPS_IFD_POINTER), 'input has a GPS IFD');
  t.ok(input.includes('GPSMARKER') && input.includes('EXIFMARKER'), 'input carries the GPS and EXIF values');
  t.ok(before.icc, 'input carries an ICC profile');

  const out = await processUpload(input, 'photo.jpg', POLICIES.attachments);
  expectImage(t, out, 'image/jpeg', 100, 200);
  const after = await sharp(out.original).metadata();
  t.equal(after.format, 'jpeg');
  t.same([after.width, after.height], [100, 200], 'stored pixels are upright');
  t.equal(after.orientation, undefined);
  t.equal(after.exif, undefined, 'no EXIF');
  t.equal(after.icc, undefined, 'no ICC profile');
  t.equal(after.xmp, undefined, 'no XMP');
  t.notOk(out.original.includes('GPSMARKER'), 'no GPS value anywhere in the bytes');
  t.notOk(out.original.includes('EXIFMARKER') || out.original.includes('AcmeCam'), 'no EXIF value anywhere in the bytes');
  const [top, bottom] = [await pixel(out.original, 50, 20), await pixel(out.original, 50, 180)];
  t.ok(top[0]! > 200 && top[2]! < 60, `rotated clockwise: top is red (${top})`);
  t.ok(bottom[2]! > 200 && bottom[0]! < 60, `rotated clockwise: bottom is blue (${bottom})`);

  t.ok(out.preview);
  const preview = await sharp(out.preview!).metadata();
  t.same([preview.format, preview.width, preview.height], ['webp', 100, 200], 'preview is upright WebP');
  t.equal(preview.exif, undefined);
});

t.test('PNG round trip drops EXIF and text chunks', async (t) => {
  const png = await image(64, 48).png().withExif({ IFD0: { Make: 'PNGEXIFMARK' } }).toBuffer();
  const input = withChunks(png, pngChunk('tEXt', Buffer.from('Comment\0PNGTEXTMARK', 'latin1')));
  t.ok(input.includes('PNGEXIFMARK') && input.includes('PNGTEXTMARK'), 'input carries EXIF and text');
  t.ok((await sharp(input).metadata()).exif, 'sharp still reads the input');
  const out = await processUpload(input, 'a.png', POLICIES.banners);
  expectImage(t, out, 'image/png', 64, 48);
  t.notOk(out.original.includes('PNGEXIFMARK') || out.original.includes('PNGTEXTMARK'));
  t.equal((await sharp(out.original).metadata()).format, 'png');
  t.same(await pixel(out.original, 10, 10), [200, 30, 30], 'lossless');
});

t.test('WebP round trips: lossy stays WebP without EXIF, lossless stays lossless', async (t) => {
  const lossy = await image(120, 80).webp({ quality: 80 }).withExif({ IFD0: { Make: 'WEBPMARK' } }).toBuffer();
  t.ok(lossy.includes('WEBPMARK'));
  const out = await processUpload(lossy, 'a.webp', POLICIES.icons);
  expectImage(t, out, 'image/webp', 120, 80);
  t.notOk(out.original.includes('WEBPMARK'));
  t.equal((await sharp(out.original).metadata()).exif, undefined);

  const lossless = await image(120, 80).webp({ lossless: true }).toBuffer();
  t.ok(lossless.includes('VP8L'), 'input is lossless');
  const again = await processUpload(lossless, 'b.webp', POLICIES.icons);
  t.ok(again.original.includes('VP8L'), 'stored lossless');
  t.notOk(again.original.includes('VP8 '), 'not lossy');
});

t.test('AVIF round trip drops EXIF', async (t) => {
  const input = await image(96, 64).avif({ effort: 0 }).withExif({ IFD0: { Make: 'AVIFMARK' } }).toBuffer();
  t.ok(input.includes('AVIFMARK'));
  const out = await processUpload(input, 'a.avif', POLICIES.avatars);
  expectImage(t, out, 'image/avif', 96, 64);
  t.notOk(out.original.includes('AVIFMARK'));
  const m = await sharp(out.original).metadata();
  t.same([m.format, m.compression, m.exif], ['heif', 'av1', undefined]);
});

t.test('TIFF round trip', async (t) => {
  const input = await image(30, 20).tiff().toBuffer();
  const out = await processUpload(input, 'a.tiff', POLICIES.attachments);
  expectImage(t, out, 'image/tiff', 30, 20);
  t.equal((await sharp(out.original).metadata()).format, 'tiff');
  t.same(await pixel(out.original, 5, 5), [200, 30, 30], 'lossless');
});

/** Puts a GIF comment extension block after the header, logical screen descriptor and global colour table. */
function withGifComment(gif: Buffer, text: string): Buffer {
  const packed = gif[10] ?? 0;
  const at = 13 + (packed & 0x80 ? 3 * 2 ** ((packed & 7) + 1) : 0);
  const body = Buffer.from(text, 'latin1');
  return Buffer.concat([gif.subarray(0, at), Buffer.from([0x21, 0xfe, body.length]), body, Buffer.from([0]), gif.subarray(at)]);
}

async function frames(n: number, width: number, height: number): Promise<Buffer[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => image(width, height, { r: 60 * i, g: 100, b: 0 }).png().toBuffer()));
}

t.test('still GIF round trip drops comments', async (t) => {
  const input = withGifComment(await image(40, 30).gif().toBuffer(), 'GIFCOMMENTMARK');
  t.equal((await sharp(input).metadata()).width, 40, 'commented input still decodes');
  t.ok(input.includes('GIFCOMMENTMARK'));
  const out = await processUpload(input, 'a.gif', POLICIES.emojis);
  expectImage(t, out, 'image/gif', 40, 30);
  t.notOk(out.original.includes('GIFCOMMENTMARK'));
});

t.test('animated GIF keeps every frame, its delays and loop; the preview is the first frame', async (t) => {
  const gif = await sharp(await frames(3, 40, 30), { join: { animated: true } }).gif({ delay: [100, 200, 300], loop: 2 }).toBuffer();
  const input = withGifComment(gif, 'ANIMCOMMENTMARK');
  t.equal((await sharp(input).metadata()).pages, 3);
  const out = await processUpload(input, 'a.gif', POLICIES.emojis);
  expectImage(t, out, 'image/gif', 40, 30, true);
  t.notOk(out.original.includes('ANIMCOMMENTMARK'));
  const m = await sharp(out.original).metadata();
  t.same([m.pages, m.delay, m.loop, m.width, m.height], [3, [100, 200, 300], 2, 40, 30]);
  const p = await sharp(out.preview!).metadata();
  t.same([p.format, p.pages ?? 1, p.width, p.height], ['webp', 1, 40, 30]);
});

t.test('animated WebP keeps animation and loses EXIF', async (t) => {
  const input = await sharp(await frames(4, 50, 20), { join: { animated: true } })
    .webp({ delay: [50, 50, 50, 80] })
    .withExif({ IFD0: { Make: 'ANIMWEBPMARK' } })
    .toBuffer();
  t.ok(input.includes('ANIMWEBPMARK'));
  const out = await processUpload(input, 'a.webp', POLICIES.attachments);
  expectImage(t, out, 'image/webp', 50, 20, true);
  t.notOk(out.original.includes('ANIMWEBPMARK'));
  const m = await sharp(out.original).metadata();
  t.same([m.pages, m.delay], [4, [50, 50, 50, 80]]);
  t.equal((await sharp(out.preview!).metadata()).pages ?? 1, 1);
});

t.test('the pixel budget counts every frame of an animation (N passes, N+1 fails)', async (t) => {
  const gif = await sharp(await frames(3, 40, 30), { join: { animated: true } }).gif().toBuffer();
  const fits: TagPolicy = { ...POLICIES.avatars, maxPixels: 3 * 40 * 30 };
  t.equal((await processUpload(gif, 'a.gif', fits)).animated, true);
  const r = await rejection(processUpload(gif, 'a.gif', { ...fits, maxPixels: 3 * 40 * 30 - 1 }));
  t.same(r.body, { type: 'FileTypeNotAllowed' });
  t.equal(r.reason, 'too-many-pixels');
});

t.test('APNG keeps its frames and loses its metadata chunks', async (t) => {
  const fctl = (seq: number) => {
    const d = Buffer.alloc(26);
    d.writeUInt32BE(seq, 0);
    d.writeUInt32BE(1, 4);
    d.writeUInt32BE(1, 8);
    d.writeUInt16BE(1, 20);
    d.writeUInt16BE(10, 22);
    return pngChunk('fcTL', d);
  };
  const actl = Buffer.alloc(8);
  actl.writeUInt32BE(2, 0);
  const frame = (r: number) => deflateSync(Buffer.from([0, r, 0, 0]));
  const seq2 = Buffer.alloc(4);
  seq2.writeUInt32BE(2);
  const input = Buffer.concat([
    PNG_SIGNATURE,
    pngHeader(1, 1, 8, 2),
    pngChunk('acTL', actl),
    pngChunk('tEXt', Buffer.from('Comment\0APNGMARK', 'latin1')),
    fctl(0),
    pngChunk('IDAT', frame(255)),
    fctl(1),
    pngChunk('fdAT', Buffer.concat([seq2, frame(7)])),
    pngChunk('IEND'),
  ]);
  t.equal(await sniff(input), 'image/apng');
  const out = await processUpload(input, 'a.png', POLICIES.emojis);
  expectImage(t, out, 'image/apng', 1, 1, true);
  t.notOk(out.original.includes('APNGMARK'), 'text chunk dropped');
  t.ok(out.original.includes('acTL') && out.original.includes('fdAT'), 'animation kept');
  t.equal(await sniff(out.original), 'image/apng');
  const first = await pixel(out.preview!, 0, 0);
  t.ok(near(first, [255, 0, 0]), `preview is the first frame (${first})`);
});

t.test('BMP is an image: stored as uploaded, previewed by our own decoder', async (t) => {
  const input = bmp24(17, 8, (_x, y) => (y < 4 ? [0, 0, 255] : [255, 0, 0])); // top half red, bottom half blue; 17 px: rows need padding
  t.equal(await sniff(input), 'image/bmp');
  const out = await processUpload(input, 'a.bmp', POLICIES.icons);
  expectImage(t, out, 'image/bmp', 17, 8);
  t.ok(out.original.equals(input));
  const [top, bottom] = [await pixel(out.preview!, 8, 1), await pixel(out.preview!, 8, 6)];
  t.ok(near(top, [255, 0, 0]), `top half red (${top})`);
  t.ok(near(bottom, [0, 0, 255]), `bottom half blue (${bottom})`);
  const cut = await rejection(processUpload(input.subarray(0, input.length - 4), 'a.bmp', POLICIES.icons));
  t.same([cut.body, cut.reason], [{ type: 'FileTypeNotAllowed' }, 'undecodable'], 'truncated BMP refused');
});

t.test('decompression bombs are refused from the header, without decoding', async (t) => {
  const bomb = blackPng(10_000, 10_000); // 100 megapixels, both sides allowed
  t.ok(bomb.length < 100_000, `bomb is small (${bomb.length} bytes)`);
  const header = await sharp(bomb, { limitInputPixels: false }).metadata();
  t.same([header.format, header.width, header.height], ['png', 10_000, 10_000], 'a real PNG header');
  global.gc?.();
  const rss = process.memoryUsage().rss;
  // CPU time, not wall-clock time, bounds the refusal: a decode of 100 megapixels costs seconds of CPU (libvips
  // threads count in the process's usage), while a loaded machine can hold a cheap refusal off the cores for
  // longer than 300 ms of wall-clock time.
  const started = performance.now();
  const cpu = process.cpuUsage();
  const r = await rejection(processUpload(bomb, 'bomb.png', POLICIES.attachments));
  const cpuMs = cpuMsSince(cpu);
  const elapsed = performance.now() - started;
  const grown = process.memoryUsage().rss - rss;
  t.same(r.body, { type: 'FileTypeNotAllowed' });
  t.equal(r.status, ERROR_STATUS.FileTypeNotAllowed);
  t.equal(r.status, 400);
  t.equal(r.reason, 'too-many-pixels', 'refused by the header check, not by a failed decode');
  t.ok(cpuMs < 300, `refused in ${cpuMs.toFixed(1)} ms of CPU (${elapsed.toFixed(1)} ms wall-clock)`);
  t.ok(grown < 64_000_000, `rss grew by ${(grown / 1e6).toFixed(1)} MB`);

  const huge = blackPng(20_000, 20_000);
  const cpu2 = process.cpuUsage();
  const r2 = await rejection(processUpload(huge, 'huge.png', POLICIES.avatars));
  const cpuMs2 = cpuMsSince(cpu2);
  t.same([r2.body, r2.reason], [{ type: 'FileTypeNotAllowed' }, 'side-too-long']);
  t.ok(cpuMs2 < 300, `refused in ${cpuMs2.toFixed(1)} ms of CPU`);
});

t.test('40 megapixels: at the limit passes, one pixel more fails', async (t) => {
  t.equal(IMAGE_LIMITS.maxPixels, 40_000_000);
  // Same boundary with a scaled-down budget, so the passing case stays cheap to decode.
  const policy: TagPolicy = { ...POLICIES.attachments, maxPixels: 100 * 100 };
  t.equal((await processUpload(blackPng(100, 100), 'a.png', policy)).metadata.type, 'Image');
  const r = await rejection(processUpload(blackPng(101, 100), 'a.png', policy));
  t.same([r.body, r.reason], [{ type: 'FileTypeNotAllowed' }, 'too-many-pixels']);
  const real = await rejection(processUpload(blackPng(8000, 5001), 'a.png', POLICIES.attachments));
  t.equal(real.reason, 'too-many-pixels', '40,008,000 pixels refused');
});

t.test('a side of 10,000 px passes, 10,001 px fails', async (t) => {
  const ok = await processUpload(blackPng(10_000, 4), 'wide.png', POLICIES.attachments);
  t.same(ok.metadata, { type: 'Image', width: 10_000, height: 4, animated: false });
  for (const [w, h] of [
    [10_001, 4],
    [4, 10_001],
  ] as const) {
    const r = await rejection(processUpload(blackPng(w, h), 'long.png', POLICIES.attachments));
    t.same([r.body, r.reason], [{ type: 'FileTypeNotAllowed' }, 'side-too-long'], `${w}×${h}`);
  }
});

t.test('text named x.png: refused on image-only tags, Text on attachments', async (t) => {
  const text = Buffer.from('hello, this is not a picture — ünïcödé\n');
  for (const tag of IMAGE_ONLY) {
    const r = await rejection(processUpload(text, 'x.png', POLICIES[tag]));
    t.same([r.body, r.reason, r.status], [{ type: 'FileTypeNotAllowed' }, 'not-allowed', 400], tag);
  }
  const out = await processUpload(text, 'x.png', POLICIES.attachments);
  t.same([out.contentType, out.metadata, out.preview, out.animated], ['text/plain', { type: 'Text' }, null, false]);
  t.ok(out.original.equals(text));
  t.equal(out.size, text.length);
});

t.test('a real PNG named notes.txt is an image', async (t) => {
  const out = await processUpload(await image(10, 10).png().toBuffer(), 'notes.txt', POLICIES.emojis);
  expectImage(t, out, 'image/png', 10, 10);
});

t.test('SVG is never an image', async (t) => {
  const svgs = [
    '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>',
    '<?xml version="1.0" encoding="UTF-8"?>\n<!-- made by hand -->\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n<svg xmlns="http://www.w3.org/2000/svg"><rect width="5" height="5"/></svg>',
  ].map((s) => Buffer.from(s));
  for (const svg of svgs) {
    t.equal(await sniff(svg), 'image/svg+xml');
    for (const tag of IMAGE_ONLY) {
      const r = await rejection(processUpload(svg, 'a.svg', POLICIES[tag]));
      t.same(r.body, { type: 'FileTypeNotAllowed' }, tag);
    }
    const out = await processUpload(svg, 'a.svg', POLICIES.attachments);
    t.same([out.contentType, out.metadata, out.preview], ['image/svg+xml', { type: 'File' }, null]);
  }
  t.equal(await sniff(Buffer.from('<?xml version="1.0"?><note>hi</note>')), 'application/xml', 'other XML is not SVG');
});

t.test('a truncated JPEG is refused on every tag (it could not be stripped)', async (t) => {
  const full = await sharp({ create: { width: 400, height: 300, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 128, sigma: 30 } } })
    .jpeg()
    .withExif({ IFD3: { GPSMapDatum: 'TRUNCGPS' } })
    .toBuffer();
  const truncated = full.subarray(0, Math.floor(full.length / 2));
  t.equal(await sniff(truncated), 'image/jpeg');
  t.equal((await sharp(truncated).metadata()).width, 400, 'header still readable: it is the decode that fails');
  t.equal((await processUpload(full, 'a.jpg', POLICIES.attachments)).metadata.type, 'Image', 'the whole file is fine');
  for (const tag of ['attachments', 'avatars'] as const) {
    const r = await rejection(processUpload(truncated, 'a.jpg', POLICIES[tag]));
    t.same([r.body, r.reason, r.status], [{ type: 'FileTypeNotAllowed' }, 'undecodable', 400], tag);
  }
});

t.test('preview sizes: fitted in the tag box, aspect kept, never enlarged', async (t) => {
  const wide = await image(2000, 1000).jpeg().toBuffer();
  const tall = await image(1000, 2000).jpeg().toBuffer();
  const expected = {
    attachments: [[1280, 640], [640, 1280]],
    avatars: [[128, 64], [64, 128]],
    backgrounds: [[1280, 640], [360, 720]],
    icons: [[128, 64], [64, 128]],
    banners: [[480, 240], [240, 480]],
    emojis: [[128, 64], [64, 128]],
  } as const;
  for (const tag of TAGS) {
    for (const [i, input] of [wide, tall].entries()) {
      const out = await processUpload(input, 'a.jpg', POLICIES[tag]);
      const p = await sharp(out.preview!).metadata();
      t.same([p.format, p.width, p.height], ['webp', ...expected[tag][i]!], `${tag} ${i ? 'tall' : 'wide'}`);
    }
  }
  const small = await processUpload(await image(50, 50).png().toBuffer(), 'a.png', POLICIES.avatars);
  const p = await sharp(small.preview!).metadata();
  t.same([p.width, p.height], [50, 50], 'a 50×50 avatar is not enlarged');
});

t.test('size: empty → FileTooSmall; over the cap → FileTooLarge {max} (N passes, N+1 fails)', async (t) => {
  const empty = await rejection(processUpload(Buffer.alloc(0), 'a.png', POLICIES.attachments));
  t.same([empty.body, empty.status], [{ type: 'FileTooSmall' }, 422]);
  const small: TagPolicy = { ...POLICIES.attachments, maxBytes: 10 };
  t.equal((await processUpload(Buffer.from('0123456789'), 'a.txt', small)).size, 10);
  const over = await rejection(processUpload(Buffer.from('0123456789a'), 'a.txt', small));
  t.same([over.body, over.status], [{ type: 'FileTooLarge', max: 10 }, 422]);
  const emoji = await rejection(processUpload(Buffer.alloc(500_001), 'a.png', POLICIES.emojis));
  t.same(emoji.body, { type: 'FileTooLarge', max: 500_000 });
  t.ok(emoji instanceof Error);
});

function box(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + body.length);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, body]);
}

/** A minimal MP4 whose one video track is `width`×`height`, optionally rotated 90° by its matrix. */
function mp4(width: number, height: number, rotated: boolean): Buffer {
  const tkhd = Buffer.alloc(84);
  const matrix = rotated ? [0, 0x10000, 0, -0x10000, 0, 0, 0, 0, 0x40000000] : [0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000];
  matrix.forEach((v, i) => tkhd.writeInt32BE(v, 40 + i * 4));
  tkhd.writeUInt32BE(width * 65536, 76);
  tkhd.writeUInt32BE(height * 65536, 80);
  const hdlr = Buffer.concat([Buffer.alloc(8), Buffer.from('vide'), Buffer.alloc(13)]);
  return Buffer.concat([
    box('ftyp', Buffer.from('isom'), Buffer.from([0, 0, 2, 0]), Buffer.from('isomiso2avc1mp41')),
    box('moov', box('mvhd', Buffer.alloc(100)), box('trak', box('tkhd', tkhd), box('mdia', box('hdlr', hdlr)))),
    box('mdat', Buffer.alloc(32)),
  ]);
}

t.test('video, audio and other files: classified, stored as uploaded, refused on image-only tags', async (t) => {
  const video = mp4(640, 360, false);
  const out = await processUpload(video, 'clip.mp4', POLICIES.attachments);
  t.same([out.contentType, out.metadata, out.preview], ['video/mp4', { type: 'Video', width: 640, height: 360 }, null]);
  t.ok(out.original.equals(video));
  t.same((await processUpload(mp4(640, 360, true), 'clip.mp4', POLICIES.attachments)).metadata, { type: 'Video', width: 360, height: 640 });

  const webm = Buffer.concat([Buffer.from('1a45dfa38b428284' + Buffer.from('webm').toString('hex') + '42878104', 'hex'), Buffer.alloc(64)]);
  const w = await processUpload(webm, 'clip.webm', POLICIES.attachments);
  t.same([w.contentType, w.metadata], ['video/webm', { type: 'Video' }], 'no size without ffprobe');

  const mp3 = Buffer.concat([Buffer.from('ID3'), Buffer.from([3, 0, 0, 0, 0, 0, 0]), Buffer.from('fffb9064', 'hex'), Buffer.alloc(400)]);
  const a = await processUpload(mp3, 'song.mp3', POLICIES.attachments);
  t.same([a.contentType, a.metadata, a.preview], ['audio/mpeg', { type: 'Audio' }, null]);

  const binary = Buffer.from([0x00, 0x01, 0x02, 0xfe, 0xff, 0x00, 0x10]);
  const b = await processUpload(binary, 'blob.png', POLICIES.attachments);
  t.same([b.contentType, b.metadata], ['application/octet-stream', { type: 'File' }]);

  for (const input of [video, webm, mp3, binary]) {
    const r = await rejection(processUpload(input, 'a.png', POLICIES.avatars));
    t.same(r.body, { type: 'FileTypeNotAllowed' });
  }
});

t.test('sniff: text needs valid UTF-8 without NUL', async (t) => {
  t.equal(await sniff(Buffer.from('plain words\n')), 'text/plain');
  t.equal(await sniff(Buffer.from('words\0more')), 'application/octet-stream');
  t.equal(await sniff(Buffer.from([0x68, 0x69, 0xc3, 0x28])), 'application/octet-stream', 'invalid UTF-8');
  t.equal(await sniff(await image(4, 4).jpeg().toBuffer()), 'image/jpeg');
});

t.test('a 2000×1500 photo through processUpload', async (t) => {
  // A smooth gradient with mild noise: closer to a photo than flat colour or pure noise.
  const gradient = Buffer.alloc(2000 * 1500 * 3);
  for (let y = 0; y < 1500; y++) {
    for (let x = 0; x < 2000; x++) {
      const o = (y * 2000 + x) * 3;
      gradient[o] = (x * 255) / 2000;
      gradient[o + 1] = (y * 255) / 1500;
      gradient[o + 2] = ((x + y) * 7) % 256;
    }
  }
  const input = await sharp(gradient, { raw: { width: 2000, height: 1500, channels: 3 } })
    .blur(2)
    .jpeg({ quality: 88 })
    .withExif({ IFD3: { GPSMapDatum: 'BENCHGPS' } })
    .toBuffer();
  await processUpload(input, 'warm.jpg', POLICIES.attachments);
  // The bound is on the CPU time this process spent (libvips threads included), not on the wall clock: on a
  // machine loaded by other work the wall clock measures the others too (7 s under load, issue 40).
  const runs: Array<{ wall: number; cpu: number }> = [];
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    const cpu = process.cpuUsage();
    const out = await processUpload(input, 'photo.jpg', POLICIES.attachments);
    const used = process.cpuUsage(cpu);
    runs.push({ wall: performance.now() - started, cpu: (used.user + used.system) / 1000 });
    t.same(out.metadata, { type: 'Image', width: 2000, height: 1500, animated: false });
  }
  t.comment(`2000×1500 JPEG (${input.length} bytes): ${runs.map((r) => `${r.wall.toFixed(0)} ms (${r.cpu.toFixed(0)} ms CPU)`).join(', ')}`);
  t.ok(Math.min(...runs.map((r) => r.cpu)) < 5000, 'under 5 s of CPU');
});
