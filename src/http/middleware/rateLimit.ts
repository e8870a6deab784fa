/**
 * Rate limiting in the request pipeline (spec "Rate limiting", DESIGN §4). `countRequest` classifies the
 * matched route and counts it (429 when exhausted, before anything else happens); `rateLimitHeaders`
 * puts the four headers on every response, errors and 404s included (a request that was not counted,
 * such as a CORS preflight, gets the numbers of its catch-all counter without spending anything).
 */
import type Koa from 'koa';
import { classify, type RateLimiter, type RateLimitResult } from '../../ratelimit/limiter.ts';
import { RateLimited } from './errors.ts';
import { countRefusal } from '../../metrics/registry.ts';

/** The headers, in the order clients read them. */
export const RATE_LIMIT_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset-After', 'X-RateLimit-Bucket'];

/**
 * The key of the caller: its user (every session of one user shares one budget, so logging in again — or
 * uploading from several sessions — never resets or multiplies the limits), or its IP without a session.
 */
export function callerKey(ctx: Koa.Context): string {
  const userId = ctx.state.caller?.userId as string | undefined;
  return userId ? `u:${userId}` : `ip:${ctx.ip}`;
}

/** Outermost: writes the headers once the response is known. */
export function rateLimitHeaders(limiter: RateLimiter): Koa.Middleware {
  return async function headers(ctx, next) {
    try {
      await next();
    } finally {
      let r = ctx.state.rateLimit as RateLimitResult | undefined;
      if (!r) {
        const c = classify(ctx.method, '*', {}, undefined, callerKey(ctx));
        r = limiter.peek(callerKey(ctx), c.bucket, c.resource);
      }
      ctx.set('X-RateLimit-Limit', String(r.limit));
      ctx.set('X-RateLimit-Remaining', String(r.remaining));
      ctx.set('X-RateLimit-Reset-After', String(r.resetAfterMs));
      ctx.set('X-RateLimit-Bucket', r.bucket);
    }
  };
}

/** Counts the request against its bucket; throws RateLimited when exhausted. */
export function countRequest(ctx: Koa.Context, limiter: RateLimiter, pattern: string): void {
  const caller = callerKey(ctx);
  const c = classify(ctx.method, pattern, (ctx.params ?? {}) as Record<string, string>, ctx.request.body, caller);
  const r = limiter.hit(caller, c.bucket, c.resource);
  ctx.state.rateLimit = r;
  if (!r.allowed) {
    countRefusal(r.bucket);
    throw new RateLimited(r.retryAfterMs ?? r.resetAfterMs);
  }
}
