// GET /proxy?url= — a remote image through this server (Stoat's January proxy; revolt.js `proxyFile`).
import type { MediaRoute } from '../route.ts';
import { callerKey } from '../../http/middleware/rateLimit.ts';
import { RateLimited } from '../../http/middleware/errors.ts';
import { proxyTarget, type ImageProxy } from '../proxy.ts';

/** The route over one process's proxy (its cache lives as long as the media app). */
export function proxyRoute(proxy: ImageProxy): MediaRoute {
  return {
    method: 'GET',
    path: '/proxy',
    auth: 'none',
    counted: true,
    async handle(ctx) {
      const url = proxyTarget(ctx.query.url);
      let image;
      try {
        image = await proxy.get(url, callerKey(ctx));
      } catch (err) {
        // Every slot busy: answered at once, like a rate limit (429 `{retry_after}`, plus Retry-After for browsers).
        if (err instanceof RateLimited) ctx.set('Retry-After', String(Math.ceil(err.retryAfterMs / 1000)));
        throw err;
      }
      ctx.set('Content-Type', image.contentType);
      ctx.set('Cache-Control', 'public, max-age=600');
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.set('Content-Security-Policy', "default-src 'none'; sandbox");
      ctx.body = image.body;
    },
  };
}
