/**
 * Sending stored blobs safely (DESIGN §4 "security"): `X-Content-Type-Options: nosniff` always, a sandboxing
 * CSP, raster images inline and everything else (SVG, HTML, text …) as an attachment, so an upload can never
 * run script in a browser; long cache headers (a file id's bytes never change).
 */
import fs from 'node:fs';
import type Koa from 'koa';
import { isServable, type FileRecord } from '../domain/file/state.ts';
import { AppError } from '../errors.ts';
import { isDetached, loadFile } from '../files.ts';
import { isTag } from '../../workers/media/policy.ts';
import type { MediaDeps } from './deps.ts';

/** Cache-Control of every file response (autumn's). */
export const FILE_CACHE_CONTROL = 'public, max-age=604800, must-revalidate';

/**
 * The file a GET names, when it exists under that tag, something used or referenced it and whatever used it
 * still does (not deleted or replaced: `projections/fileUses.ts`); else 404.
 */
export async function servableFile(deps: MediaDeps, tag: string | undefined, fileId: string | undefined): Promise<FileRecord> {
  if (!tag || !fileId || !isTag(tag)) throw new AppError({ type: 'NotFound' });
  const record = await loadFile(deps, fileId);
  if (!record || record.tag !== tag || !isServable(record) || (await isDetached(deps, fileId))) throw new AppError({ type: 'NotFound' });
  return record;
}

/** Headers every file response carries. */
export function fileHeaders(ctx: Koa.Context): void {
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Content-Security-Policy', "default-src 'none'; sandbox");
  ctx.set('Cache-Control', FILE_CACHE_CONTROL);
  ctx.set('Cross-Origin-Resource-Policy', 'cross-origin');
}

/** Streams a blob with its type and disposition; 404 when the blob is missing, 304 when the client has it. */
export async function sendBlob(
  ctx: Koa.Context,
  file: string,
  o: { contentType: string; disposition: 'inline' | 'attachment'; filename: string; etag: string },
): Promise<void> {
  let size: number;
  try {
    size = (await fs.promises.stat(file)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new AppError({ type: 'NotFound' });
    throw err;
  }
  fileHeaders(ctx);
  ctx.set('ETag', `"${o.etag}"`);
  ctx.status = 200;
  if (ctx.fresh) {
    ctx.status = 304;
    return;
  }
  ctx.set('Content-Disposition', contentDisposition(o.disposition, o.filename));
  // koa destroys the stream when the response ends (HEAD included, which sends no body).
  ctx.body = fs.createReadStream(file);
  ctx.type = o.contentType;
  ctx.length = size;
}

/** `inline|attachment; filename="<ASCII fallback>"; filename*=UTF-8''<percent-encoded>` (RFC 6266). */
export function contentDisposition(kind: 'inline' | 'attachment', filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${kind}; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
