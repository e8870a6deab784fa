/**
 * The HTTP metrics middleware (outermost in both apps): requests in flight, and on the way out one
 * duration observation labelled with the matched route pattern (`ctx.state.routePattern`, set by the
 * router and the 404 fallback) — never the raw path. A request that ended before routing (a 503 while
 * rebuilding, a body the parser refused) is labelled `-`.
 */
import type Koa from 'koa';
import { httpInFlight, observeHttp } from './registry.ts';

/** Middleware recording `http_request_duration_seconds` and `http_requests_in_flight` for `app`. */
export function httpMetrics(app: 'api' | 'media'): Koa.Middleware {
  const inFlight = httpInFlight.labels(app);
  return async function metrics(ctx, next) {
    const started = performance.now();
    inFlight.inc();
    try {
      await next();
    } finally {
      inFlight.dec();
      const route = ctx.state.routePattern as string | undefined;
      observeHttp(app, ctx.method, route ?? '-', ctx.status, (performance.now() - started) / 1000);
    }
  };
}
