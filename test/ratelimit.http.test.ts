import type * as Tap from 'tap';
import t from 'tap';
import type { Server } from 'node:http';
import { createApiApp } from '../src/http/app.ts';
import { API_ROUTES } from '../src/http/routes/index.ts';
import { defineRoute } from '../src/http/route.ts';
import { startTestService } from './helpers/service.ts';
import { request } from './helpers/http.ts';

const HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset-after', 'x-ratelimit-bucket'];

t.test('rate limits over HTTP', async (t) => {
  let clock = 1_000_000;
  const s = await startTestService(t, {}, { now: () => clock });
  const base = s.apiUrl;

  const hasHeaders = (t: Tap.Test, r: { headers: Headers; status: number }, what: string) => {
    for (const h of HEADERS) t.ok(r.headers.get(h) !== null, `${what} (${r.status}) carries ${h}`);
  };

  t.test('every kind of response carries the four headers', async (t) => {
    hasHeaders(t, await request(base, 'GET', '/'), '200');
    const nf = await request(base, 'GET', '/no/such/route');
    t.equal(nf.status, 404);
    t.equal(nf.body.type, 'NotFound');
    hasHeaders(t, nf, 'unknown path');
    const wm = await request(base, 'PATCH', '/');
    t.equal(wm.status, 404, 'wrong method is 404 NotFound');
    hasHeaders(t, wm, 'wrong method');
    const na = await request(base, 'GET', '/users/@me');
    t.equal(na.status, 401);
    hasHeaders(t, na, 'unauthenticated');
    const bad = await request(base, 'POST', '/auth/session/login', { rawBody: '{"email": ', contentType: 'application/json' });
    t.equal(bad.status, 400);
    t.equal(bad.body.type, 'FailedValidation');
    hasHeaders(t, bad, 'malformed JSON');
    const pre = await request(base, 'OPTIONS', '/servers/create', {
      headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'x-session-token' },
    });
    t.ok(pre.status < 300, 'preflight answered');
    hasHeaders(t, pre, 'CORS preflight');
    const exposed = (await request(base, 'GET', '/', { headers: { Origin: 'https://app.example' } })).headers.get('access-control-expose-headers') ?? '';
    for (const h of HEADERS) t.ok(exposed.toLowerCase().includes(h), `CORS exposes ${h}`);
  });

  t.test('a crash is a JSON 500 with the headers and no stack', async (t) => {
    const crash = defineRoute({
      method: 'GET',
      path: '/test/crash',
      auth: 'none',
      async handler() {
        throw new Error('boom: secret internals');
      },
    });
    const app = createApiApp(s.deps, [...API_ROUTES, crash]);
    const server: Server = await new Promise((r) => {
      const srv = app.listen(0, '127.0.0.1', () => r(srv));
    });
    t.teardown(() => new Promise<void>((r) => server.close(() => r())));
    const res = await request(`http://127.0.0.1:${(server.address() as { port: number }).port}`, 'GET', '/test/crash');
    t.equal(res.status, 500);
    t.same(Object.keys(res.body).sort(), ['location', 'type']);
    t.equal(res.body.type, 'InternalError');
    t.notOk(res.text.includes('boom'), 'no internals leak');
    t.match(res.headers.get('content-type'), /application\/json/);
    hasHeaders(t, res, 'crash');
  });

  t.test('catch-all window: 20 allowed, the 21st refused, allowed again at reset', async (t) => {
    clock += 60_000;
    const ip = { headers: {} };
    for (let i = 1; i <= 20; i++) {
      const r = await request(base, 'GET', '/', ip);
      t.equal(r.status, 200);
      t.equal(r.headers.get('x-ratelimit-remaining'), String(20 - i));
      t.equal(r.headers.get('x-ratelimit-bucket'), 'catch-all');
      t.equal(r.headers.get('x-ratelimit-limit'), '20');
    }
    clock += 4_000;
    const refused = await request(base, 'GET', '/', ip);
    t.equal(refused.status, 429);
    t.same(refused.body, { retry_after: 6_000 }, 'exactly {retry_after: ms}');
    t.equal(refused.headers.get('x-ratelimit-reset-after'), '6000', 'reset-after in milliseconds');
    t.equal(refused.headers.get('x-ratelimit-remaining'), '0');
    // Another route of the catch-all bucket has its own budget (keyed by method + route).
    t.equal((await request(base, 'GET', '/no/such/thing')).status, 404);
    clock += 6_000;
    const again = await request(base, 'GET', '/', ip);
    t.equal(again.status, 200);
    t.equal(again.headers.get('x-ratelimit-remaining'), '19');
    t.equal(again.headers.get('x-ratelimit-reset-after'), '10000');
  });

  t.test('a refused request does nothing', async (t) => {
    clock += 60_000;
    for (let i = 0; i < 20; i++) await request(base, 'POST', '/auth/account/create', { body: { email: `x${i}@example.test`, password: 'short' } });
    const email = `refused${Date.now()}@example.test`;
    const r = await request(base, 'POST', '/auth/account/create', { body: { email, password: 'long enough password' } });
    t.equal(r.status, 429);
    clock += 10_000;
    const login = await request(base, 'POST', '/auth/session/login', { body: { email, password: 'long enough password' } });
    t.equal(login.status, 401, 'the refused account creation left no account behind');
  });
});
