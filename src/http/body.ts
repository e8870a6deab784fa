/**
 * Reading a JSON request body (DESIGN §4 "request bodies", "security"). The API reads a body only for a
 * route that declares one, and only after the route matched, its path ids were validated and the request
 * was counted against its rate limit (`mountRoutes`), so an unmatched path or an exhausted caller costs no
 * parsing. Any content type is read as JSON (revolt.js sends JSON as `text/plain`). Bounds:
 * - at most `JSON_LIMIT_BYTES` after decompression (gzip/deflate/br are inflated while reading and cut at
 *   the cap) → 413 `PayloadTooLarge`;
 * - at most `MAX_JSON_DEPTH` levels of nesting and `MAX_JSON_KEYS` object members / `MAX_JSON_VALUES`
 *   members and array elements in all, checked by a linear scan of the text before `JSON.parse` builds
 *   anything → 400 `FailedValidation`;
 * - no `__proto__` member anywhere → 400 `FailedValidation`.
 */
import zlib from 'node:zlib';
import type { Readable } from 'node:stream';
import type Koa from 'koa';
import { AppError } from '../errors.ts';

/** Largest JSON body, in bytes after decompression (1 MB). */
export const JSON_LIMIT_BYTES = 1_000_000;
/** Deepest nesting of objects and arrays. */
export const MAX_JSON_DEPTH = 32;
/** Most object members in one body. */
export const MAX_JSON_KEYS = 5_000;
/** Most object members plus array elements in one body. */
export const MAX_JSON_VALUES = 20_000;

/** Counts of parsed bodies, per process (tests assert that an unread body was never parsed). */
export const bodyStats = { read: 0 };

/** An error the renderer turns into 413 PayloadTooLarge. */
class TooLarge extends Error {
  readonly status = 413;
  readonly expose = true;
  constructor() {
    super('request body too large');
  }
}

function malformed(error: string): AppError {
  return new AppError({ type: 'FailedValidation', error });
}

/** Reads and parses the request's JSON body under the bounds above; an empty body is `{}`. */
export async function readJsonBody(ctx: Koa.Context, limit = JSON_LIMIT_BYTES): Promise<unknown> {
  bodyStats.read += 1;
  const text = await readText(ctx, limit);
  return parseBoundedJson(text);
}

/**
 * The raw text of the body (at most `limit` bytes, decompressed), read once per request and kept on
 * `ctx.state.rawBody`: for a route that checks a signature over the exact bytes (LiveKit's webhooks).
 */
export async function readRawBody(ctx: Koa.Context, limit: number): Promise<string> {
  const cached = ctx.state.rawBody as string | undefined;
  if (cached !== undefined) return cached;
  bodyStats.read += 1;
  const text = await readText(ctx, limit);
  ctx.state.rawBody = text;
  return text;
}

/** Parses JSON text under the depth, member and `__proto__` bounds; an empty or blank text is `{}`. */
export function parseBoundedJson(text: string): unknown {
  if (text.trim() === '') return {};
  checkShape(text);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw malformed('malformed request body');
  }
  if (typeof value !== 'object' || value === null) throw malformed('request body must be a JSON object or array');
  rejectProtoKeys(value);
  return value;
}

/** One pass over the text: nesting depth, members and elements, outside strings. */
function checkShape(text: string): void {
  let depth = 0;
  let keys = 0;
  let values = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
      continue;
    }
    switch (c) {
      case 34:
        inString = true;
        break;
      case 123: // {
      case 91: // [
        if (++depth > MAX_JSON_DEPTH) throw malformed(`request body is nested deeper than ${MAX_JSON_DEPTH} levels`);
        values++;
        break;
      case 125: // }
      case 93: // ]
        depth--;
        break;
      case 58: // :
        if (++keys > MAX_JSON_KEYS) throw malformed(`request body has more than ${MAX_JSON_KEYS} members`);
        break;
      case 44: // ,
        if (++values > MAX_JSON_VALUES) throw malformed(`request body has more than ${MAX_JSON_VALUES} values`);
        break;
    }
  }
}

function rejectProtoKeys(value: unknown): void {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      for (const x of v) if (typeof x === 'object' && x !== null) stack.push(x);
      continue;
    }
    if (Object.hasOwn(v, '__proto__')) throw malformed('request body has a member named __proto__');
    for (const x of Object.values(v)) if (typeof x === 'object' && x !== null) stack.push(x);
  }
}

/** The body as UTF-8 text, inflated when encoded, cut off with 413 once it passes `limit` bytes. */
function readText(ctx: Koa.Context, limit: number): Promise<string> {
  const req = ctx.req;
  const declared = Number(req.headers['content-length']);
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase().trim();
  if (encoding === 'identity' && Number.isFinite(declared) && declared > limit) return Promise.reject(new TooLarge());
  let source: Readable = req;
  let inflater: zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | undefined;
  if (encoding === 'gzip' || encoding === 'x-gzip') inflater = zlib.createGunzip();
  else if (encoding === 'deflate') inflater = zlib.createInflate();
  else if (encoding === 'br') inflater = zlib.createBrotliDecompress();
  else if (encoding !== 'identity') return Promise.reject(malformed(`unsupported Content-Encoding ${encoding}`));
  if (inflater) source = req.pipe(inflater);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err: Error | null, text?: string) => {
      if (done) return;
      done = true;
      source.removeListener('data', onData);
      if (inflater) {
        req.unpipe(inflater);
        inflater.destroy();
      }
      if (err) reject(err);
      else resolve(text!);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        finish(new TooLarge());
        return;
      }
      chunks.push(chunk);
    };
    source.on('data', onData);
    source.once('end', () => {
      const buf = Buffer.concat(chunks, size);
      let text: string;
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(buf);
      } catch {
        finish(malformed('request body is not valid UTF-8'));
        return;
      }
      finish(null, text);
    });
    source.once('error', () => finish(malformed('malformed request body')));
    req.once('aborted', () => finish(malformed('request body aborted')));
  });
}
