/**
 * The media pipeline: a pure function of (bytes, tag policy) → the blob to store, its Revolt metadata and its
 * WebP preview (DESIGN §1 "Media", §4 "media server"/"security"; reference §7). No IO but sharp and file-type
 * on the buffer; the BullMQ wrapper and the HTTP server around it hold no rules of their own.
 *
 * Decisions (where Revolt's autumn is silent or cannot be copied):
 * - Type: sniffed from the bytes only (file-type; then SVG by its root element; then UTF-8 text without NUL
 *   → `text/plain`; else `application/octet-stream`). The filename and the client's content type are never
 *   consulted. Raster images are jpeg, png (and APNG), webp, avif, gif, tiff and bmp; SVG is never an image
 *   (it can run script): on image-only tags it is refused, on attachments it is a `File`.
 * - Refusals are 4xx `MediaRejection`s, never a 500: empty → 422 `FileTooSmall`; over the cap → 422
 *   `FileTooLarge {max}`; not a raster image on an image-only tag → 400 `FileTypeNotAllowed`.
 * - Decompression bombs (over `maxPixels`, all frames of an animation together, or a side over `maxSide`) are
 *   refused from the header (sharp `metadata()`, no pixel decoded) with 400 `FileTypeNotAllowed`, on every
 *   tag: `FileTooLarge` would name a byte limit the file does not break, and storing it as a plain `File` on
 *   attachments would keep its EXIF/GPS and still hand the bomb to every browser. `limitInputPixels` is passed
 *   to every decode as a second guard.
 * - A truncated or corrupt image (sharp fails with `failOn: 'error'`) is refused with 400
 *   `FileTypeNotAllowed` on every tag, attachments included: what cannot be decoded cannot be re-encoded, so
 *   its EXIF/GPS could not be removed. (Plain libjpeg warnings such as extraneous bytes do not refuse.)
 * - Metadata: JPEG, PNG, WebP, AVIF, TIFF and GIF are decoded, auto-oriented by EXIF, converted to sRGB and
 *   re-encoded in their own format with no metadata at all (EXIF, GPS, XMP, IPTC, ICC, PNG text and GIF
 *   comment blocks are gone). Animated GIF/WebP are re-encoded with every frame, their delays and loop count,
 *   and are stripped the same way. Exceptions: APNG (libvips cannot encode it) keeps its bytes minus every
 *   ancillary chunk that is not needed to draw it (eXIf, tEXt, zTXt, iTXt, iCCP, tIME, private chunks…);
 *   BMP (libvips cannot read it; the format has no EXIF/XMP/GPS fields) is decoded by our own decoder and
 *   stored re-encoded from its pixels (so no appended or hidden bytes survive); a multi-page TIFF keeps its first page. Video, audio and other files are stored as
 *   uploaded: there is no ffmpeg here to remux away their container metadata. Image formats this sharp build
 *   cannot decode (HEIC, JPEG XL, ICO, PSD, camera raw) are plain `File`s, likewise stored as uploaded.
 * - Image `width`/`height` are the stored image's, after orientation (one frame of an animation).
 * - Video: `width`/`height` come from the first video track header of MP4/MOV/M4V/3GP (rotation matrix
 *   applied, like ffprobe's display size); for other containers (WebM, AVI…) they are absent (no ffprobe).
 * - Preview: WebP quality 80 of the (oriented) first frame, fitted inside the tag's box, never enlarged;
 *   `null` for everything that is not a raster image.
 * - The image proxy (`proxyImage`) never re-encodes an animation: it checks the header and passes the bytes on;
 *   a still image is decoded once (first frame, `limitInputPixels` at the proxy's pixel budget) into a WebP.
 */
import { isUtf8 } from 'node:buffer';
import { fileTypeFromBuffer } from 'file-type';
import sharp, { type Metadata, type Sharp, type SharpOptions } from 'sharp';
import { AppError, type ErrorBody } from '../../src/errors.ts';
import type { TagPolicy } from './policy.ts';

/** Revolt's file metadata (reference §7.4), tagged by `type`. */
export type FileMetadata =
  | { type: 'File' }
  | { type: 'Text' }
  | { type: 'Image'; width: number; height: number; animated: boolean }
  | { type: 'Video'; width?: number; height?: number }
  | { type: 'Audio' };

/** What the pipeline hands back for storage. */
export interface ProcessedFile {
  /** Sniffed MIME type of the stored blob. */
  contentType: string;
  /** Revolt metadata of the stored blob. */
  metadata: FileMetadata;
  /** Bytes of the stored blob (`original.length`). */
  size: number;
  /** The processed bytes to store (stripped and re-encoded for images, as uploaded otherwise). */
  original: Buffer;
  /** WebP preview for raster images, `null` for everything else. */
  preview: Buffer | null;
  /** Whether the stored image is animated (more than one frame). */
  animated: boolean;
}

/** The error bodies an upload can be refused with. */
export type MediaRejectionBody = Extract<ErrorBody, { type: 'FileTooSmall' | 'FileTooLarge' | 'FileTypeNotAllowed' }>;

/** Why an upload was refused, for logs and tests (the client only sees the body). */
export type RejectionReason = 'empty' | 'too-large' | 'not-allowed' | 'too-many-pixels' | 'side-too-long' | 'undecodable';

/** An upload the pipeline refuses: a 4xx `AppError` that no retry can fix (→ BullMQ `UnrecoverableError`). */
export class MediaRejection extends AppError {
  declare readonly body: MediaRejectionBody;
  /** Why the upload was refused. */
  readonly reason: RejectionReason;
  constructor(body: MediaRejectionBody, reason: RejectionReason, cause?: unknown) {
    super(body);
    this.name = 'MediaRejection';
    this.reason = reason;
    if (cause !== undefined) this.cause = cause;
  }
}

/** MIME type of `bytes` judged from the bytes alone. */
export async function sniff(bytes: Uint8Array): Promise<string> {
  const found = await fileTypeFromBuffer(bytes);
  if (found && found.mime !== 'application/xml') return found.mime;
  if (isSvg(bytes)) return 'image/svg+xml';
  if (found) return found.mime;
  if (bytes.indexOf(0) === -1 && isUtf8(bytes)) return 'text/plain';
  return 'application/octet-stream';
}

/** Sniffs, checks and processes one upload under its tag's policy; refusals throw `MediaRejection`. */
export async function processUpload(bytes: Buffer, filename: string, policy: TagPolicy): Promise<ProcessedFile> {
  // `filename` is deliberately not used to type the file: the name is the client's claim, the bytes are not.
  void filename;
  if (bytes.length === 0) throw new MediaRejection({ type: 'FileTooSmall' }, 'empty');
  if (bytes.length > policy.maxBytes) {
    throw new MediaRejection({ type: 'FileTooLarge', max: policy.maxBytes }, 'too-large');
  }
  const mime = await sniff(bytes);
  const raster = RASTER[mime];
  if (raster === undefined) {
    if (policy.imageOnly) throw new MediaRejection({ type: 'FileTypeNotAllowed' }, 'not-allowed');
    return { contentType: mime, metadata: otherMetadata(mime, bytes), size: bytes.length, original: bytes, preview: null, animated: false };
  }
  const image = await processImage(bytes, raster, policy);
  return {
    contentType: image.contentType,
    metadata: { type: 'Image', width: image.width, height: image.height, animated: image.animated },
    size: image.original.length,
    original: image.original,
    preview: image.preview,
    animated: image.animated,
  };
}

/** What the image proxy may spend on one remote image: pixels of one frame, a side, and the preview box. */
export interface ProxyLimits {
  /** Most pixels of one frame (a still image is decoded under this; an animation's frame must stay under it). */
  maxPixels: number;
  /** Longest side of one frame. */
  maxSide: number;
  /** Most pixels of all frames of an animation together (what a browser will decode). */
  maxAnimationPixels: number;
  /** Box a still image is fitted in. */
  preview: { width: number; height: number };
}

/** A proxied image: its type and the bytes to send. */
export interface ProxyImage {
  /** Content type to send. */
  contentType: string;
  /** Bytes to send. */
  body: Buffer;
}

/**
 * The proxy's rendering of a remote image (Stoat's January: a GIF passes as it is, other images become a
 * WebP thumbnail). Sniffed from the bytes; the header is checked against `limits` before any pixel is
 * decoded. An animation (GIF, WebP, APNG with more than one frame) is passed on as its own bytes, never
 * decoded here; a still image has its first frame decoded (`limitInputPixels`), fitted in the box and sent
 * as WebP. So one request costs at most one bounded decode, whatever the frame count.
 */
export async function proxyImage(bytes: Buffer, limits: ProxyLimits): Promise<ProxyImage> {
  if (bytes.length === 0) throw new MediaRejection({ type: 'FileTypeNotAllowed' }, 'empty');
  const mime = await sniff(bytes);
  const raster = RASTER[mime];
  if (raster === undefined) throw new MediaRejection({ type: 'FileTypeNotAllowed' }, 'not-allowed');
  const frameLimits = { maxPixels: limits.maxPixels, maxSide: limits.maxSide };
  if (raster === 'bmp') {
    const image = await processBmp(bytes, { ...frameLimits, preview: limits.preview });
    return { contentType: 'image/webp', body: image.preview };
  }
  const header = await readHeader(bytes, raster);
  const pages = header.pages ?? 1;
  const frameHeight = header.pageHeight ?? header.height;
  checkBomb(header.width, frameHeight, 1, frameLimits);
  const frames = raster === 'apng' ? apngFrames(bytes) : raster === 'gif' || raster === 'webp' ? pages : 1;
  if (frames > 1) {
    checkBomb(header.width, frameHeight, frames, { maxPixels: limits.maxAnimationPixels, maxSide: limits.maxSide });
    return { contentType: mime, body: bytes };
  }
  try {
    const body = await makePreview(sharp(bytes, { failOn: 'error', limitInputPixels: limits.maxPixels, autoOrient: true, pages: 1 }), limits)
      .timeout({ seconds: 10 })
      .toBuffer();
    return { contentType: 'image/webp', body };
  } catch (err) {
    throw undecodable(err);
  }
}

/** Frame count of an APNG from its `acTL` chunk (1 when it has none). */
function apngFrames(bytes: Buffer): number {
  let pos = 8;
  while (pos + 12 <= bytes.length) {
    const length = bytes.readUInt32BE(pos);
    const type = bytes.toString('latin1', pos + 4, pos + 8);
    if (type === 'acTL' && length >= 4) return bytes.readUInt32BE(pos + 8);
    if (type === 'IDAT' || type === 'IEND') return 1;
    pos += 12 + length;
  }
  return 1;
}

type Raster = 'jpeg' | 'png' | 'apng' | 'webp' | 'avif' | 'gif' | 'tiff' | 'bmp';

const RASTER: Readonly<Record<string, Raster>> = {
  'image/jpeg': 'jpeg',
  'image/png': 'png',
  'image/apng': 'apng',
  'image/webp': 'webp',
  'image/avif': 'avif',
  'image/gif': 'gif',
  'image/tiff': 'tiff',
  'image/bmp': 'bmp',
};

/** The libvips loader each raster type must be read by (a mismatch means the sniff was fooled). */
const LOADER: Readonly<Record<Exclude<Raster, 'bmp'>, string>> = {
  jpeg: 'jpeg',
  png: 'png',
  apng: 'png',
  webp: 'webp',
  avif: 'heif',
  gif: 'gif',
  tiff: 'tiff',
};

function otherMetadata(mime: string, bytes: Buffer): FileMetadata {
  if (mime.startsWith('video/')) return { type: 'Video', ...isoVideoSize(bytes) };
  if (mime.startsWith('audio/')) return { type: 'Audio' };
  if (mime === 'text/plain') return { type: 'Text' };
  return { type: 'File' };
}

interface ProcessedImage {
  contentType: string;
  original: Buffer;
  preview: Buffer;
  width: number;
  height: number;
  animated: boolean;
}

const undecodable = (cause?: unknown) => new MediaRejection({ type: 'FileTypeNotAllowed' }, 'undecodable', cause);

function checkBomb(width: number, frameHeight: number, frames: number, policy: Pick<TagPolicy, 'maxPixels' | 'maxSide'>): void {
  if (!(width > 0 && frameHeight > 0)) throw undecodable();
  if (width > policy.maxSide || frameHeight > policy.maxSide) {
    throw new MediaRejection({ type: 'FileTypeNotAllowed' }, 'side-too-long');
  }
  if (width * frameHeight * frames > policy.maxPixels) {
    throw new MediaRejection({ type: 'FileTypeNotAllowed' }, 'too-many-pixels');
  }
}

/** The image's header, checked to be the format its bytes were sniffed as (undecodable otherwise). */
async function readHeader(bytes: Buffer, raster: Exclude<Raster, 'bmp'>): Promise<Metadata> {
  let header: Metadata;
  try {
    // Header only: libvips reads dimensions without decoding a pixel, so a bomb costs nothing here.
    header = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (err) {
    throw undecodable(err);
  }
  if (header.format !== LOADER[raster]) throw undecodable();
  return header;
}

async function processImage(bytes: Buffer, raster: Raster, policy: TagPolicy): Promise<ProcessedImage> {
  if (raster === 'bmp') return processBmp(bytes, policy);
  const header = await readHeader(bytes, raster);
  const pages = header.pages ?? 1;
  const animated = (raster === 'gif' || raster === 'webp') && pages > 1;
  checkBomb(header.width, header.pageHeight ?? header.height, animated ? pages : 1, policy);

  const input: SharpOptions = { failOn: 'error', limitInputPixels: policy.maxPixels, autoOrient: true };
  try {
    const [stored, preview] = await Promise.all([
      raster === 'apng' ? storeApng(bytes, header) : storeReencoded(sharp(bytes, { ...input, animated }), raster, bytes, header),
      makePreview(sharp(bytes, { ...input, pages: 1 }), policy).toBuffer(),
    ]);
    return { ...stored, preview };
  } catch (err) {
    if (err instanceof MediaRejection) throw err;
    throw undecodable(err);
  }
}

type StoredImage = Omit<ProcessedImage, 'preview'>;

async function storeReencoded(image: Sharp, raster: Exclude<Raster, 'bmp' | 'apng'>, bytes: Buffer, header: Metadata): Promise<StoredImage> {
  const { data, info } = await encodeOwnFormat(image, raster, bytes, header).toBuffer({ resolveWithObject: true });
  const pages = info.pages ?? 1;
  return {
    contentType: `image/${raster}`,
    original: data,
    width: info.width,
    height: info.pageHeight ?? info.height,
    animated: pages > 1,
  };
}

/** libvips cannot encode APNG: keep its frames, drop its metadata chunks (its size is the IHDR's; no EXIF orientation). */
async function storeApng(bytes: Buffer, header: Metadata): Promise<StoredImage> {
  const { data, frames } = stripPngChunks(bytes);
  return { contentType: 'image/apng', original: data, width: header.width, height: header.height, animated: frames > 1 };
}

/** Re-encodes in the input's own format; sharp writes no metadata unless asked, and converts to sRGB. */
function encodeOwnFormat(image: Sharp, raster: Exclude<Raster, 'bmp' | 'apng'>, bytes: Buffer, header: Metadata): Sharp {
  switch (raster) {
    case 'jpeg':
      return image.jpeg({ quality: 90 });
    case 'png':
      return image.png({ palette: header.isPalette });
    case 'webp':
      return webpIsLossless(bytes) ? image.webp({ lossless: true }) : image.webp({ quality: 90 });
    case 'avif':
      // effort 2: libaom's default (4) takes tens of seconds on a noisy 3-megapixel photo.
      return image.avif({ quality: 70, effort: 2 });
    case 'gif':
      return image.gif();
    case 'tiff':
      return image.tiff({ compression: 'lzw' });
  }
}

function makePreview(image: Sharp, policy: Pick<TagPolicy, 'preview'>): Sharp {
  return image
    .resize({ width: policy.preview.width, height: policy.preview.height, fit: 'inside', withoutEnlargement: true })
    .webp({ quality: 80 });
}

async function processBmp(bytes: Buffer, policy: Pick<TagPolicy, 'maxPixels' | 'maxSide' | 'preview'>): Promise<ProcessedImage> {
  const info = readBmpHeader(bytes);
  checkBomb(info.width, info.height, 1, policy);
  const raw = decodeBmp(bytes, info);
  try {
    const preview = await makePreview(
      sharp(raw.pixels, { raw: { width: info.width, height: info.height, channels: raw.channels }, limitInputPixels: policy.maxPixels }),
      policy,
    ).toBuffer();
    return { contentType: 'image/bmp', original: encodeBmp(raw.pixels, info.width, info.height, raw.channels), preview, width: info.width, height: info.height, animated: false };
  } catch (err) {
    throw undecodable(err);
  }
}

// ---- format details ---------------------------------------------------------------------------------------

function isSvg(bytes: Uint8Array): boolean {
  const head = Buffer.from(bytes.subarray(0, 4096)).toString('utf8').replace(/^\uFEFF/, '');
  return /^\s*(?:<\?xml[^>]*\?>\s*)?(?:(?:<!--[\s\S]*?-->|<!DOCTYPE[^>[]*(?:\[[\s\S]*?\])?\s*>|<\?[\s\S]*?\?>)\s*)*<svg[\s>/]/i.test(head);
}

/** True when the (first) image of a WebP is VP8L, i.e. lossless: re-encode it losslessly too. */
function webpIsLossless(bytes: Buffer): boolean {
  let pos = 12;
  while (pos + 8 <= bytes.length) {
    const fourcc = bytes.toString('latin1', pos, pos + 4);
    const size = bytes.readUInt32LE(pos + 4);
    if (fourcc === 'VP8L') return true;
    if (fourcc === 'VP8 ') return false;
    // An animation frame: 16 bytes of frame header, then its ALPH/VP8/VP8L sub-chunks.
    if (fourcc === 'ANMF') {
      let sub = pos + 8 + 16;
      while (sub + 8 <= Math.min(bytes.length, pos + 8 + size)) {
        const tag = bytes.toString('latin1', sub, sub + 4);
        if (tag === 'VP8L') return true;
        if (tag === 'VP8 ') return false;
        sub += 8 + bytes.readUInt32LE(sub + 4) + (bytes.readUInt32LE(sub + 4) & 1);
      }
      return false;
    }
    pos += 8 + size + (size & 1);
  }
  return false;
}

/** PNG chunks an (A)PNG needs to be drawn as intended; every other ancillary chunk is metadata to drop. */
const PNG_KEEP = new Set(['IHDR', 'PLTE', 'IDAT', 'IEND', 'tRNS', 'acTL', 'fcTL', 'fdAT', 'gAMA', 'cHRM', 'sRGB', 'sBIT', 'bKGD', 'pHYs']);

/** The (A)PNG without its metadata chunks, and its frame count from `acTL`. */
function stripPngChunks(bytes: Buffer): { data: Buffer; frames: number } {
  const parts: Buffer[] = [bytes.subarray(0, 8)];
  let frames = 1;
  let pos = 8;
  while (pos + 12 <= bytes.length) {
    const length = bytes.readUInt32BE(pos);
    const end = pos + 12 + length;
    if (end > bytes.length) throw undecodable();
    const type = bytes.toString('latin1', pos + 4, pos + 8);
    if (type === 'acTL' && length >= 4) frames = bytes.readUInt32BE(pos + 8);
    if (PNG_KEEP.has(type)) parts.push(bytes.subarray(pos, end));
    pos = end;
    if (type === 'IEND') break;
  }
  return { data: Buffer.concat(parts), frames };
}

interface BmpHeader {
  width: number;
  height: number;
  bottomUp: boolean;
  bpp: number;
  compression: number;
  dataOffset: number;
  headerSize: number;
  coloursUsed: number;
}

function readBmpHeader(b: Buffer): BmpHeader {
  if (b.length < 26) throw undecodable();
  const headerSize = b.readUInt32LE(14);
  if (headerSize === 12) {
    return { width: b.readUInt16LE(18), height: b.readUInt16LE(20), bottomUp: true, bpp: b.readUInt16LE(24), compression: 0, dataOffset: b.readUInt32LE(10), headerSize, coloursUsed: 0 };
  }
  if (headerSize < 40 || b.length < 54) throw undecodable();
  const rawHeight = b.readInt32LE(22);
  return {
    width: b.readInt32LE(18),
    height: Math.abs(rawHeight),
    bottomUp: rawHeight > 0,
    bpp: b.readUInt16LE(28),
    compression: b.readUInt32LE(30),
    dataOffset: b.readUInt32LE(10),
    headerSize,
    coloursUsed: b.readUInt32LE(46),
  };
}

/** Decodes uncompressed BMPs (1/4/8-bit palette, 16/24/32-bit, bit-field masks); RLE and embedded JPEG/PNG are refused. */
function decodeBmp(b: Buffer, h: BmpHeader): { pixels: Buffer; channels: 3 | 4 } {
  const { width, height, bpp } = h;
  const stride = Math.floor((bpp * width + 31) / 32) * 4;
  if (h.dataOffset + stride * height > b.length) throw undecodable();
  const paletted = bpp === 1 || bpp === 4 || bpp === 8;
  const bitfields = h.compression === 3 || h.compression === 6;
  if (!(h.compression === 0 || (bitfields && (bpp === 16 || bpp === 32)))) throw undecodable();
  if (!paletted && bpp !== 16 && bpp !== 24 && bpp !== 32) throw undecodable();

  let palette: number[][] = [];
  if (paletted) {
    const entry = h.headerSize === 12 ? 3 : 4;
    const count = h.coloursUsed || 1 << bpp;
    const start = 14 + h.headerSize;
    if (start + count * entry > h.dataOffset) throw undecodable();
    palette = Array.from({ length: count }, (_, i) => {
      const p = start + i * entry;
      return [b[p + 2] ?? 0, b[p + 1] ?? 0, b[p] ?? 0];
    });
  }
  let masks: number[] = bpp === 16 ? [0x7c00, 0x03e0, 0x001f, 0] : [0xff0000, 0xff00, 0xff, 0];
  if (bitfields) {
    // Masks sit inside a V2+ header, or just after a 40-byte header.
    const at = 54;
    if (at + 12 > b.length) throw undecodable();
    const hasAlphaMask = h.compression === 6 || h.headerSize >= 56;
    masks = [b.readUInt32LE(at), b.readUInt32LE(at + 4), b.readUInt32LE(at + 8), hasAlphaMask && at + 16 <= b.length ? b.readUInt32LE(at + 12) : 0];
  }
  const channels: 3 | 4 = masks[3] ? 4 : 3;
  const fields = masks.map((mask) => {
    const shift = mask ? 31 - Math.clz32(mask & -mask) : 0;
    const max = mask ? (mask >>> 0) / 2 ** shift : 1;
    return { mask: mask >>> 0, shift, max };
  });
  const scale = (v: number, f: { mask: number; shift: number; max: number }) =>
    f.mask ? Math.round((((v & f.mask) >>> 0) / 2 ** f.shift / f.max) * 255) : 255;
  const out = Buffer.alloc(width * height * channels);
  for (let y = 0; y < height; y++) {
    const row = h.dataOffset + (h.bottomUp ? height - 1 - y : y) * stride;
    let o = y * width * channels;
    for (let x = 0; x < width; x++, o += channels) {
      if (paletted) {
        const bit = x * bpp;
        const index = ((b[row + (bit >> 3)] ?? 0) >> (8 - bpp - (bit & 7))) & ((1 << bpp) - 1);
        const colour = palette[index];
        if (colour) out.set(colour, o);
      } else if (bpp === 24) {
        const p = row + x * 3;
        out[o] = b[p + 2] ?? 0;
        out[o + 1] = b[p + 1] ?? 0;
        out[o + 2] = b[p] ?? 0;
      } else {
        const v = bpp === 16 ? b.readUInt16LE(row + x * 2) : b.readUInt32LE(row + x * 4);
        for (let c = 0; c < channels; c++) out[o + c] = scale(v, fields[c]!);
      }
    }
  }
  return { pixels: out, channels };
}

/**
 * A canonical BMP of decoded top-down pixels: 24-bit `BI_RGB` with a 40-byte header, or 32-bit BGRA with a
 * V4 header (bit-field masks, alpha) when there is alpha. Nothing of the upload but its pixels survives, so
 * data appended to a BMP or hidden between its header and its pixels (a polyglot) is not stored.
 */
function encodeBmp(pixels: Buffer, width: number, height: number, channels: 3 | 4): Buffer {
  const bpp = channels * 8;
  const stride = Math.floor((bpp * width + 31) / 32) * 4;
  const headerSize = channels === 4 ? 108 : 40;
  const offset = 14 + headerSize;
  const out = Buffer.alloc(offset + stride * height);
  out.write('BM', 0, 'latin1');
  out.writeUInt32LE(out.length, 2);
  out.writeUInt32LE(offset, 10);
  out.writeUInt32LE(headerSize, 14);
  out.writeInt32LE(width, 18);
  out.writeInt32LE(height, 22); // positive: rows bottom-up
  out.writeUInt16LE(1, 26);
  out.writeUInt16LE(bpp, 28);
  if (channels === 4) {
    out.writeUInt32LE(3, 30); // BI_BITFIELDS
    out.writeUInt32LE(stride * height, 34);
    out.writeUInt32LE(0x00ff0000, 54);
    out.writeUInt32LE(0x0000ff00, 58);
    out.writeUInt32LE(0x000000ff, 62);
    out.writeUInt32LE(0xff000000, 66);
    out.writeUInt32LE(0x73524742, 70); // LCS_sRGB
  }
  for (let y = 0; y < height; y++) {
    const row = offset + (height - 1 - y) * stride;
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * channels;
      const o = row + x * channels;
      out[o] = pixels[i + 2]!;
      out[o + 1] = pixels[i + 1]!;
      out[o + 2] = pixels[i]!;
      if (channels === 4) out[o + 3] = pixels[i + 3]!;
    }
  }
  return out;
}

/** Display size of the first video track of an ISO-BMFF file (MP4, MOV, M4V, 3GP), if it has one. */
function isoVideoSize(b: Buffer): { width?: number; height?: number } {
  const moov = childBoxes(b, 0, b.length).find((box) => box.type === 'moov');
  if (!moov) return {};
  for (const trak of childBoxes(b, moov.start, moov.end).filter((box) => box.type === 'trak')) {
    const children = childBoxes(b, trak.start, trak.end);
    const tkhd = children.find((box) => box.type === 'tkhd');
    const mdia = children.find((box) => box.type === 'mdia');
    const hdlr = mdia && childBoxes(b, mdia.start, mdia.end).find((box) => box.type === 'hdlr');
    if (!tkhd || !hdlr || hdlr.end - hdlr.start < 12 || b.toString('latin1', hdlr.start + 8, hdlr.start + 12) !== 'vide') continue;
    const base = tkhd.start + (b[tkhd.start] === 1 ? 36 : 24);
    if (base + 60 > tkhd.end) continue;
    const matrixA = b.readInt32BE(base + 16);
    const matrixD = b.readInt32BE(base + 32);
    let width = Math.round(b.readUInt32BE(base + 52) / 65536);
    let height = Math.round(b.readUInt32BE(base + 56) / 65536);
    // A 90° or 270° rotation matrix (a = d = 0) turns the coded size on its side for display.
    if (matrixA === 0 && matrixD === 0) [width, height] = [height, width];
    if (width > 0 && height > 0) return { width, height };
  }
  return {};
}

function childBoxes(b: Buffer, start: number, end: number): { type: string; start: number; end: number }[] {
  const boxes: { type: string; start: number; end: number }[] = [];
  let pos = start;
  while (pos + 8 <= end) {
    let size = b.readUInt32BE(pos);
    let header = 8;
    if (size === 1) {
      if (pos + 16 > end) break;
      size = Number(b.readBigUInt64BE(pos + 8));
      header = 16;
    } else if (size === 0) {
      size = end - pos;
    }
    if (size < header || pos + size > end) break;
    boxes.push({ type: b.toString('latin1', pos + 4, pos + 8), start: pos + header, end: pos + size });
    pos += size;
  }
  return boxes;
}
