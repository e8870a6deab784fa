/**
 * The media server (DESIGN §1, §4 "media server"; reference §7): `createMediaApp(deps)` builds the koa app
 * without listening. It shares the API's pipeline pieces (`src/http/app.ts`): request id and log → lingering
 * close of a request answered before its body was read → rate-limit headers on every response → JSON error renderer → CORS exposing those headers → serving check →
 * routes (session → rate limit for uploads → authentication → handler) → 404 for everything else (so
 * DELETE, like any unknown path or method, is 404 NotFound).
 */
import { httpMetrics } from '../metrics/http.ts';
import Koa from 'koa';
import Router from '@koa/router';
import { corsMiddleware, notFoundFallback, requestLog, requireCaller, resolveSession, servingCheck } from '../http/app.ts';
import { errorRenderer } from '../http/middleware/errors.ts';
import { closeUnreadRequests } from '../http/middleware/linger.ts';
import { countRequest, rateLimitHeaders } from '../http/middleware/rateLimit.ts';
import { clientAddressMiddleware } from '../http/clientAddress.ts';
import type { MediaDeps } from './deps.ts';
import { paramsValid } from '../http/params.ts';
import { mediaRoutes } from './routes/index.ts';

/** Builds the media app. */
export function createMediaApp(deps: MediaDeps): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true;
  const router = new Router();
  for (const route of mediaRoutes(deps)) {
    router.register(route.path, [route.method], async (ctx) => {
      if (!paramsValid(ctx.params as Record<string, string>, route.params)) {
        ctx.params = {};
        await notFoundFallback(deps)(ctx, async () => {});
        return;
      }
      ctx.state.routePattern = route.path;
      await deps.readModels.fence();
      await resolveSession(ctx, deps);
      if (route.counted) countRequest(ctx, deps.limiter, route.path);
      const caller = await requireCaller(ctx, deps, route.auth);
      await route.handle(ctx, deps, caller);
    });
  }
  app.use(clientAddressMiddleware(deps.config.trustProxy));
  app.use(httpMetrics('media'));
  app.use(requestLog(deps));
  app.use(closeUnreadRequests());
  app.use(rateLimitHeaders(deps.limiter));
  app.use(errorRenderer(() => deps.readModels.serving(true)));
  app.use(corsMiddleware());
  app.use(servingCheck(deps, new Set(['/'])));
  app.use(router.routes());
  app.use(notFoundFallback(deps));
  return app;
}
