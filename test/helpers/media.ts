/** Helpers for media tests: real multipart uploads with fetch + FormData, images made by sharp, using a file. */
import { crc32, deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { claimFile, type FileUsedFor } from '../../src/files.ts';
import type { FileObject } from '../../src/domain/shared.ts';
import { newId } from '../../src/ids.ts';
import type { Service } from '../../src/service.ts';
import type { Tag } from '../../workers/media/policy.ts';
import type { Res } from './http.ts';

/** Uploads bytes as the `file` field of a multipart form (or a custom form) to `POST {media}/{tag}`. */
export async function upload(
  s: Pick<Service, 'mediaUrl'>,
  token: string | undefined,
  tag: string,
  bytes: Uint8Array | undefined,
  o: { filename?: string; contentType?: string; field?: string; form?: FormData } = {},
): Promise<Res> {
  let form = o.form;
  if (!form) {
    form = new FormData();
    if (bytes) form.append(o.field ?? 'file', new Blob([bytes], { type: o.contentType ?? 'application/octet-stream' }), o.filename ?? 'upload.bin');
  }
  const res = await fetch(`${s.mediaUrl}/${tag}`, { method: 'POST', body: form, headers: token ? { 'X-Session-Token': token } : {} });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, body, headers: res.headers, text };
}

/** A JPEG of w×h pixels (noise, so it does not compress to nothing). */
export async function jpeg(width: number, height: number, quality = 85): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = Math.imul(i, 2654435761) >>> 24;
  return sharp(raw, { raw: { width, height, channels: 3 } }).jpeg({ quality }).toBuffer();
}

/** A plain one-colour PNG. */
export function png(width: number, height: number, colour = { r: 20, g: 120, b: 220 }): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: colour } }).png().toBuffer();
}

/**
 * A bottom-up 24-bit BMP (rows padded to 4 bytes); `bgr(x, y)` gives each pixel's blue, green and red, with
 * y = 0 the top row.
 */
export function bmp24(width: number, height: number, bgr: (x: number, y: number) => [number, number, number] = (x, y) => [x * 20, y * 20, (x + y) * 10]): Buffer {
  const stride = Math.ceil((width * 3) / 4) * 4;
  const b = Buffer.alloc(54 + stride * height);
  b.write('BM', 0, 'latin1');
  b.writeUInt32LE(b.length, 2);
  b.writeUInt32LE(54, 10);
  b.writeUInt32LE(40, 14);
  b.writeInt32LE(width, 18);
  b.writeInt32LE(height, 22);
  b.writeUInt16LE(1, 26);
  b.writeUInt16LE(24, 28);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) b.set(bgr(x, y), 54 + (height - 1 - y) * stride + x * 3);
  return b;
}

/** A PNG chunk: length, type, data, CRC. */
export function pngChunk(type: string, data: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])));
  return Buffer.concat([head, data, crc]);
}

/** The PNG signature. */
export const PNG_SIGNATURE = Buffer.from('89504e470d0a1a0a', 'hex');

/** A PNG's IHDR chunk. */
export function pngHeader(width: number, height: number, bitDepth: number, colourType: number): Buffer {
  const d = Buffer.alloc(13);
  d.writeUInt32BE(width, 0);
  d.writeUInt32BE(height, 4);
  d[8] = bitDepth;
  d[9] = colourType;
  return pngChunk('IHDR', d);
}

/** A valid black 1-bit greyscale PNG of any size: all-zero rows deflate to almost nothing (a decompression bomb when large). */
export function blackPng(width: number, height: number): Buffer {
  const raw = Buffer.alloc((1 + Math.ceil(width / 8)) * height);
  return Buffer.concat([PNG_SIGNATURE, pngHeader(width, height, 1, 0), pngChunk('IDAT', deflateSync(raw, { level: 9 })), pngChunk('IEND')]);
}

/** The bytes with filler appended up to exactly `size` (a JPEG still sniffs and decodes: data after EOI is ignored). */
export function padTo(bytes: Buffer, size: number): Buffer {
  if (bytes.length > size) throw new Error(`${bytes.length} bytes do not fit in ${size}`);
  return Buffer.concat([bytes, Buffer.alloc(size - bytes.length, 0x20)]);
}

/** Uses a file the way a feature does (claimFile + the executor), as a message attachment by default. */
export async function useFile(
  s: Pick<Service, 'deps'>,
  userId: string,
  fileId: string,
  tag: Tag,
  usedFor: FileUsedFor = { type: 'Message', id: newId() },
): Promise<FileObject> {
  const { result } = await s.deps.executor.execute({ actor: userId, requestId: 'test' }, [`file-${fileId}`], async () => {
    const claim = await claimFile(s.deps, { fileId, tag, userId, usedFor });
    return { writes: [claim.write], result: claim.file };
  });
  return result;
}

/** Fetches a media URL without following redirects. */
export async function get(url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const res = await fetch(url, { method, headers, redirect: 'manual' });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}
