// POST /:tag — multipart upload, the file in field `file` → {id} once processed (one route per tag).
//
// Size limit while streaming: the file part is streamed by multer (a storage engine of ours) straight into
// `DATA_DIR/files/incoming/<id>` with `limits.fileSize` = the tag's maximum, so neither memory nor disk ever
// holds more than that (plus a few KB of capped text fields). When the part passes the limit the request
// is answered 422 at once with `Connection: close`, the socket is closed after the answer (nothing more is
// read) and the partial file is removed. A `Content-Length` that cannot fit the limit is refused before
// a byte of the body is read.
import fs from 'node:fs';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import type { Readable } from 'node:stream';
import multer from '@koa/multer';
import type Koa from 'koa';
import { AppError } from '../../errors.ts';
import { newId } from '../../ids.ts';
import { POLICIES, TAGS, type Tag, type TagPolicy } from '../../../workers/media/policy.ts';
import type { MediaRoute } from '../route.ts';
import type { MediaDeps } from '../deps.ts';

/** Multipart overhead allowed on top of the file: 8 parts × (16 KiB of headers + boundary) + 7 fields × 4 KiB. */
const MULTIPART_SLACK = 256 * 1024;

/** Caps on everything in the form that is not the file (busboy limits). */
const FORM_LIMITS = { files: 1, parts: 8, fields: 7, fieldNameSize: 100, fieldSize: 4096, headerPairs: 16 };

/** Longest stored filename, in code points. */
const MAX_FILENAME = 128;

/**
 * The client's filename as stored and served: no path, no control characters, at most 128 code points
 * (the extension kept when it is short); `file` when nothing is left.
 */
export function cleanFilename(raw: string | undefined): string {
  let name = (raw ?? '').normalize('NFC');
  name = name.slice(Math.max(name.lastIndexOf('/'), name.lastIndexOf('\\')) + 1);
  name = name.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '').trim();
  const chars = [...name];
  if (chars.length > MAX_FILENAME) {
    const dot = name.lastIndexOf('.');
    const ext = dot > 0 && name.length - dot <= 16 ? [...name.slice(dot)] : [];
    name = chars.slice(0, MAX_FILENAME - ext.length).join('') + ext.join('');
  }
  return name === '' || name === '.' || name === '..' ? 'file' : name;
}

type StorageEngine = NonNullable<multer.Options['storage']>;

/**
 * multer storage engine streaming a file part into `incoming/<new id>`. When the part passes
 * `limits.fileSize` it stops writing, removes the partial file itself (multer's disk storage would wait for
 * a stream that never ends once the socket is closed) and then reports the cut-off.
 */
class IncomingStorage implements StorageEngine {
  constructor(
    private readonly dir: string,
    private readonly onLimit: (req: IncomingMessage) => void,
  ) {}
  _handleFile(req: IncomingMessage, file: multer.File, cb: (error?: unknown, info?: multer.File) => void): void {
    const source = (file as multer.File & { stream: Readable }).stream;
    const fileId = newId();
    const target = path.join(this.dir, fileId);
    const out = fs.createWriteStream(target, { flags: 'wx' });
    let settled = false;
    const fail = (err: unknown, cutOff: boolean) => {
      if (settled) return;
      settled = true;
      // Stop writing; busboy skips the rest of the part on its own, multer drains whatever still arrives.
      source.unpipe(out);
      source.resume();
      out.destroy();
      // The partial file is gone before the request is answered.
      const unlink = () =>
        fs.rm(target, { force: true }, () => {
          if (cutOff) this.onLimit(req);
          cb(err);
        });
      if (out.closed) unlink();
      else out.once('close', unlink);
    };
    source.once('limit', () => fail(new Error('file size limit'), true));
    source.once('error', (err) => fail(err, false));
    out.once('error', (err) => fail(err, false));
    out.once('finish', () => {
      if (settled) return;
      settled = true;
      cb(null, { filename: fileId, path: target, size: out.bytesWritten } as multer.File);
    });
    source.pipe(out);
  }
  _removeFile(_req: IncomingMessage, file: multer.File, cb: (error: Error) => void): void {
    fs.rm(file.path, { force: true }, (err) => cb(err as Error));
  }
}

function tooLarge(ctx: Koa.Context, policy: TagPolicy): AppError {
  // The rest of the body is never read: the socket closes once the answer is out.
  ctx.set('Connection', 'close');
  return new AppError({ type: 'FileTooLarge', max: policy.maxBytes });
}

/** Maps multer/busboy failures: the size limit → 422, a malformed or over-capped form → 400. */
function formError(ctx: Koa.Context, err: unknown, policy: TagPolicy): unknown {
  const e = err as { name?: string; code?: string; syscall?: string };
  if (e.name === 'MulterError') {
    if (e.code === 'LIMIT_FILE_SIZE') return tooLarge(ctx, policy);
    return new AppError({ type: 'FailedValidation', error: `multipart form: ${e.code} (one file, in field "file")` });
  }
  // File-system failures are ours (500); anything else is busboy refusing the body.
  if (e.syscall) return err;
  return new AppError({ type: 'FailedValidation', error: 'malformed multipart form' });
}

function uploadRoute(tag: Tag, deps: MediaDeps): MediaRoute {
  const policy = POLICIES[tag];
  const cutOffs = new WeakMap<IncomingMessage, () => void>();
  const storage = new IncomingStorage(deps.blobs.incomingDir, (req) => cutOffs.get(req)?.());
  const parse = multer({
    storage,
    limits: { ...FORM_LIMITS, fileSize: policy.maxBytes },
    // Browsers send UTF-8 filenames without a charset parameter.
    defParamCharset: 'utf8',
  } as multer.Options).single('file');

  async function receive(ctx: Koa.Context): Promise<multer.File | undefined> {
    let limitHit!: () => void;
    const limit = new Promise<'limit'>((resolve) => (limitHit = () => resolve('limit')));
    cutOffs.set(ctx.req, limitHit);
    const parsed = parse(ctx, async () => {}).then(() => 'parsed' as const);
    // After a cut-off multer settles only once the socket is gone; nobody waits for it then.
    parsed.catch(() => {});
    let r: 'limit' | 'parsed';
    try {
      r = await Promise.race([parsed, limit]);
    } catch (err) {
      throw formError(ctx, err, policy);
    }
    if (r === 'limit') throw tooLarge(ctx, policy);
    return ctx.file as multer.File | undefined;
  }

  return {
    method: 'POST',
    path: `/${tag}`,
    auth: 'user',
    counted: true,
    async handle(ctx, deps, caller) {
      if (!ctx.is('multipart/form-data')) {
        throw new AppError({ type: 'FailedValidation', error: 'expected multipart/form-data with the file in field "file"' });
      }
      if (ctx.request.length !== undefined && ctx.request.length > policy.maxBytes + MULTIPART_SLACK) throw tooLarge(ctx, policy);
      const file = await receive(ctx);
      if (!file) throw new AppError({ type: 'FailedValidation', error: 'no file in field "file"' });
      const fileId = file.filename;
      // A client that leaves before the answer never learns the id: it is abandoned like a missed deadline.
      const gone = new AbortController();
      const onClose = () => {
        if (!ctx.res.writableEnded) gone.abort();
      };
      ctx.res.once('close', onClose);
      try {
        await deps.uploads.process(
          { fileId, tag, filename: cleanFilename(file.originalname), uploaderId: caller!.userId, requestId: ctx.state.requestId as string },
          gone.signal,
        );
      } finally {
        ctx.res.off('close', onClose);
      }
      ctx.body = { id: fileId };
    },
  };
}

/** The upload route of every tag. */
export function uploadRoutes(deps: MediaDeps): MediaRoute[] {
  return TAGS.map((tag) => uploadRoute(tag, deps));
}
