/**
 * The API's router dispatch (`routesBySegment` in src/http/app.ts): one router per first path segment must
 * answer every request exactly as one router holding every route does. The same app is built twice on the
 * same service: as shipped, and with the dispatch replaced by one router of every route; each route's path
 * (and variants of it: other case, trailing slash, extra segments) and a set of odd paths get the same status
 * and error type from both.
 */
import type { Server } from 'node:http';
import t from 'tap';
import Router from '@koa/router';
import type Koa from 'koa';
import { createApiApp, mountRoutes } from '../src/http/app.ts';
import { API_ROUTES } from '../src/http/routes/index.ts';
import { newId } from '../src/ids.ts';
import { RateLimiter } from '../src/ratelimit/limiter.ts';
import { startTestService } from './helpers/service.ts';
import { request } from './helpers/http.ts';

function listen(app: Koa): Promise<{ url: string; server: Server }> {
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server }));
  });
}

t.test('per-segment dispatch answers as one router of every route', async (t) => {
  const s = await startTestService(t);
  // No limits here: this compares routing, and ~1,000 requests from one address would hit the global bucket.
  const deps = { ...s.deps, limiter: new RateLimiter({ enabled: false }) };
  const shipped = createApiApp(deps, API_ROUTES);
  const reference = createApiApp(deps, API_ROUTES);
  const at = reference.middleware.findIndex((m) => m.name === 'route');
  t.ok(at > 0, 'the shipped app routes through the per-segment dispatch');
  const one = new Router();
  mountRoutes(one, API_ROUTES, deps);
  reference.middleware[at] = one.routes() as unknown as Koa.Middleware;
  const a = await listen(shipped);
  const b = await listen(reference);
  t.teardown(() => {
    a.server.close();
    b.server.close();
  });

  const id = newId();
  const concrete = (p: string) => p.replace(/:[A-Za-z_]+/g, id);
  const cases: Array<[string, string]> = [];
  for (const r of API_ROUTES) {
    const p = concrete(r.path);
    cases.push([r.method, p], [r.method, p.toUpperCase()], [r.method, `${p}/`], [r.method, `${p}/extra`], [r.method === 'GET' ? 'DELETE' : 'GET', p]);
  }
  for (const p of ['/', '//', '//channels/x', '/channels', '/CHANNELS', '/nope', '/users/@me/', '/%63hannels/x/messages', '/0.8/users/@me', '/users/../channels/x']) {
    cases.push(['GET', p], ['POST', p]);
  }

  let matched = 0;
  let unmatched = 0;
  for (const [method, path] of cases) {
    const x = await request(a.url, method, path, { skipOpenApi: true });
    const y = await request(b.url, method, path, { skipOpenApi: true });
    const got = [x.status, x.body?.type];
    t.same(got, [y.status, y.body?.type], `${method} ${path}`);
    if (x.status === 404 && x.body?.type === 'NotFound') unmatched++;
    else matched++;
  }
  // The comparison is not vacuous: most route paths reach their route (401 without a session), odd ones don't.
  t.ok(matched > API_ROUTES.length, `${matched} requests reached a route`);
  t.ok(unmatched > 20, `${unmatched} requests were unmatched`);
  const r = await request(a.url, 'GET', concrete('/channels/:id'), { skipOpenApi: true });
  t.same([r.status, r.body?.type], [401, 'NotAuthenticated'], 'a channel path reaches its route');
  const r2 = await request(a.url, 'GET', concrete('/CHANNELS/:id'), { skipOpenApi: true });
  t.same([r2.status, r2.body?.type], [401, 'NotAuthenticated'], 'in any case, as the router matches');
});
