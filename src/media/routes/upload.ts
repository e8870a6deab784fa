// POST /:tag — multipart upload, the file in field `file` → {id} once processed (one route per tag).
//
// Size limit while streaming: the file part is streamed by multer (a storage engine of ours) straight into
// `DATA_DIR/files/incoming/<id>` with `limits.fileSize` = the tag's maximum, so neither memory nor disk ever
// holds more than that (plus a few KB of capped text fields). When the part passes the limit the request
// is answered 422 at once with `Connection: close`, the socket is closed after the answer (nothing more is
// read) and the partial file is removed. A `Content-Length` that cannot fit the limit is refused before
// a byte of the body is read.
//
// Slow bodies (slow-loris): a body that goes `UPLOAD_IDLE_TIMEOUT_MS` without a byte, or has not fully
// arrived after `UPLOAD_BODY_TIMEOUT_MS`, is answered 408 `{"type":"FailedValidation","error":…}` with
// `Connection: close`; the parser is stopped and the partial file removed before the answer, so nothing of it
// is stored and nothing is queued. (408 Request Timeout tells the client to retry on a new connection;
// the type is Revolt's closed list's, which has no timeout type.)
import fs from 'node:fs';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import multer from '@koa/multer';
import type Koa from 'koa';
import { AppError } from '../../errors.ts';
import { newFileId } from '../../ids.ts';
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
  /** Per request: the file being written (settles once it is complete or removed) and its path. */
  private readonly writes = new WeakMap<IncomingMessage, { settled: Promise<void>; target: string }>();

  constructor(
    private readonly dir: string,
    private readonly tag: Tag,
    private readonly onLimit: (req: IncomingMessage) => void,
  ) {}
  _handleFile(req: IncomingMessage, file: multer.File, cb: (error?: unknown, info?: multer.File) => void): void {
    const source = (file as multer.File & { stream: Readable }).stream;
    const fileId = newFileId(this.tag);
    const target = path.join(this.dir, fileId);
    const out = fs.createWriteStream(target, { flags: 'wx' });
    let settle!: () => void;
    this.writes.set(req, { settled: new Promise((resolve) => (settle = resolve)), target });
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
          settle();
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
      settle();
      cb(null, { filename: fileId, path: target, size: out.bytesWritten } as multer.File);
    });
    source.pipe(out);
  }
  /** Removes whatever this request wrote, once its write has stopped (the parser must be stopped first). */
  async discard(req: IncomingMessage): Promise<void> {
    const w = this.writes.get(req);
    if (!w) return;
    await w.settled;
    await fs.promises.rm(w.target, { force: true });
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
  const { uploadIdleTimeoutMs: idleMs, uploadBodyTimeoutMs: bodyMs } = deps.config;
  const cutOffs = new WeakMap<IncomingMessage, () => void>();
  /** Per request: the parser it is piped into, and a callback for each chunk of its body. */
  const feeds = new WeakMap<IncomingMessage, { onData: () => void; parser?: Writable }>();
  const storage = new IncomingStorage(deps.blobs.incomingDir, tag, (req) => cutOffs.get(req)?.());
  const parse = multer({
    storage,
    limits: { ...FORM_LIMITS, fileSize: policy.maxBytes },
    // Browsers send UTF-8 filenames without a charset parameter.
    defParamCharset: 'utf8',
    // multer's own `req.pipe(busboy)`, remembering the parser (to stop it) and watching the body arrive.
    streamHandler(req: IncomingMessage, parser: Writable) {
      req.pipe(parser);
      const feed = feeds.get(req);
      if (!feed) return;
      feed.parser = parser;
      req.on('data', feed.onData);
    },
  } as multer.Options).single('file');

  async function receive(ctx: Koa.Context): Promise<multer.File | undefined> {
    let limitHit!: () => void;
    const limit = new Promise<'limit'>((resolve) => (limitHit = () => resolve('limit')));
    cutOffs.set(ctx.req, limitHit);
    // Slow-loris: no byte for `idleMs`, or the body still incomplete after `bodyMs`.
    let idle: NodeJS.Timeout | undefined;
    let whole: NodeJS.Timeout | undefined;
    const slow = new Promise<'idle' | 'slow'>((resolve) => {
      idle = setTimeout(() => resolve('idle'), idleMs);
      whole = setTimeout(() => resolve('slow'), bodyMs);
    });
    const feed: { onData: () => void; parser?: Writable } = { onData: () => idle?.refresh() };
    feeds.set(ctx.req, feed);
    const parsed = parse(ctx, async () => {}).then(() => 'parsed' as const);
    // After a cut-off multer settles only once the socket is gone; nobody waits for it then.
    parsed.catch(() => {});
    let r: 'limit' | 'parsed' | 'idle' | 'slow';
    try {
      r = await Promise.race([parsed, limit, slow]);
    } catch (err) {
      throw formError(ctx, err, policy);
    } finally {
      clearTimeout(idle);
      clearTimeout(whole);
      ctx.req.off('data', feed.onData);
    }
    if (r === 'limit') throw tooLarge(ctx, policy);
    if (r === 'idle' || r === 'slow') {
      // Stop parsing; the connection closes once the answer is out (lingering, `middleware/linger.ts`).
      ctx.set('Connection', 'close');
      if (feed.parser) {
        ctx.req.unpipe(feed.parser);
        feed.parser.destroy(new Error('upload body timed out'));
      }
      await storage.discard(ctx.req);
      const error = r === 'idle' ? `upload body stalled: no data for ${idleMs} ms` : `upload body not received within ${bodyMs} ms`;
      throw new AppError({ type: 'FailedValidation', error }, 408);
    }
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
