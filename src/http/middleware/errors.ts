/**
 * Renders every failure as JSON (DESIGN §4 "errors"): an AppError as `{type, ...fields, location}` with
 * its status; the two bodies the spec fixes exactly (429 `{"retry_after": ms}`, 409
 * `{"type":"DuplicateNonce"}`); anything else as 500 `InternalError`, logged with the request id and
 * never with a stack for the client.
 */
import type Koa from 'koa';
import { AppError } from '../../errors.ts';
import { isStorageUnavailable } from '../../storageErrors.ts';

/** Thrown by the rate limiter when a bucket is exhausted. */
export class RateLimited extends Error {
  constructor(readonly retryAfterMs: number) {
    super('rate limited');
  }
}

/** Answers whether the read models can serve right now (uncached). */
export type ServingCheck = () => Promise<boolean>;

/**
 * Koa middleware rendering errors; place it outside every other middleware except logging and headers.
 * With `serving`, a "not found" or "unknown session" answer is double-checked: if the read models are
 * gone (Redis lost its data) the truth is "cannot tell now", 503, not a 404 or a 401 that would make a
 * client drop its session.
 */
export function errorRenderer(serving?: ServingCheck): Koa.Middleware {
  return async function renderErrors(ctx, next) {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new AppError({ type: 'NotFound' });
    } catch (err) {
      if (serving && err instanceof AppError && (err.status === 404 || err.status === 401) && ctx.state.routePattern !== '*') {
        const ok = await serving().catch(() => false);
        if (!ok) {
          render(ctx, new AppError({ type: 'InternalError' }, 503));
          return;
        }
      }
      render(ctx, err);
    }
  };
}

function render(ctx: Koa.Context, err: unknown): void {
  const location = (ctx.state.routePattern as string | undefined) ?? ctx.path;
  ctx.type = 'application/json';
  if (err instanceof RateLimited) {
    ctx.status = 429;
    ctx.body = { retry_after: err.retryAfterMs };
    return;
  }
  if (err instanceof AppError) {
    ctx.status = err.status;
    ctx.body = err.body.type === 'DuplicateNonce' ? { type: 'DuplicateNonce' } : { ...err.body, location };
    if (err.status >= 500) ctx.state.log?.warn({ type: err.body.type, status: err.status }, 'request failed');
    return;
  }
  const e = err as { status?: number; statusCode?: number; type?: string; expose?: boolean; message?: string };
  const status = e.status ?? e.statusCode;
  // Errors of the body parser (co-body / raw-body) and other http-errors from libraries.
  if (status === 413 || e.type === 'entity.too.large') {
    ctx.status = 413;
    ctx.body = { type: 'PayloadTooLarge', location };
    return;
  }
  if (status === 400 || status === 415 || e.type === 'entity.parse.failed' || e.type === 'encoding.unsupported') {
    ctx.status = 400;
    ctx.body = { type: 'FailedValidation', error: 'malformed request body', location };
    return;
  }
  if (status === 404) {
    ctx.status = 404;
    ctx.body = { type: 'NotFound', location };
    return;
  }
  if (isStorageUnavailable(err)) {
    // Redis (or the event store) is unreachable: the service cannot serve now, it is not a bug.
    ctx.state.log?.warn({ err: (err as Error).message }, 'storage unavailable');
    ctx.status = 503;
    ctx.body = { type: 'InternalError', location };
    return;
  }
  ctx.state.log?.error({ err }, 'unhandled error');
  ctx.status = 500;
  ctx.body = { type: 'InternalError', location };
}
