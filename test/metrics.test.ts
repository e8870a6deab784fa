/**
 * Prometheus metrics: `GET /metrics` on METRICS_PORT (loopback by default, nothing without the variable), and
 * every metric moving when its thing happens — scraped over HTTP, the series compared before and after.
 * (The slow-socket counter is asserted in test/gateway.scale.test.ts, where a socket really gets too slow.)
 */
import net from 'node:net';
import t from 'tap';
import { countQuarantinedEvent } from '../src/metrics/registry.ts';
import { client, request, signup } from './helpers/http.ts';
import { uploadImage } from './helpers/messages.ts';
import { createServer } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';
import { connectReady } from './helpers/ws.ts';
import { until } from './helpers/wait.ts';

/** One scrape: every sample as [name, labels, value]. */
async function scrape(url: string): Promise<Array<{ name: string; labels: Record<string, string>; value: number }>> {
  const res = await fetch(`${url}/metrics`);
  if (res.status !== 200) throw new Error(`scrape: ${res.status}`);
  const out: Array<{ name: string; labels: Record<string, string>; value: number }> = [];
  for (const line of (await res.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** Sum of the samples of `name` whose labels include `want` (0 when there is none). */
async function value(url: string, name: string, want: Record<string, string> = {}): Promise<number> {
  const all = await scrape(url);
  return all
    .filter((s) => s.name === name && Object.entries(want).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);
}

/** Whether a sample of `name` with those labels exists. */
async function has(url: string, name: string, want: Record<string, string> = {}): Promise<boolean> {
  return (await scrape(url)).some((s) => s.name === name && Object.entries(want).every(([k, v]) => s.labels[k] === v));
}

t.test('nothing listens without METRICS_PORT', async (t) => {
  const s = await startTestService(t);
  t.equal(s.metricsServer, undefined);
  t.equal(s.metricsUrl, undefined);
  const r = await request(s.apiUrl, 'GET', '/metrics', { skipOpenApi: true });
  t.equal(r.status, 404, 'not on the API port either');
  t.same(r.body.type, 'NotFound');
});

t.test('metrics listener: loopback by default, GET /metrics only', async (t) => {
  const s = await startTestService(t, { METRICS_PORT: '0' });
  t.ok(s.metricsUrl?.startsWith('http://127.0.0.1:'), 'bound to 127.0.0.1 by default');
  t.equal((s.metricsServer!.address() as net.AddressInfo).address, '127.0.0.1');
  const other = await fetch(`${s.metricsUrl}/other`);
  t.equal(other.status, 404);
  t.same(await other.json(), { type: 'NotFound' });
  const post = await fetch(`${s.metricsUrl}/metrics`, { method: 'POST' });
  t.equal(post.status, 404);
  const ok = await fetch(`${s.metricsUrl}/metrics`);
  t.match(ok.headers.get('content-type'), /text\/plain/);
  t.ok(await has(s.metricsUrl!, 'process_cpu_user_seconds_total'), 'Node default metrics');
  t.ok(await has(s.metricsUrl!, 'nodejs_eventloop_lag_seconds'), 'event loop lag');
});

t.test('every metric moves when its thing happens', async (t) => {
  const s = await startTestService(t, { METRICS_PORT: '0' });
  const url = s.metricsUrl!;

  t.test('HTTP durations by route pattern and status, never raw paths', async (t) => {
    const owner = await signup(s);
    const srv = await createServer(owner);
    const before = await value(url, 'http_request_duration_seconds_count', { app: 'api', route: '/servers/:server_id', status: '200', method: 'GET' });
    await owner.api.get(`/servers/${srv.id}`);
    await owner.api.get(`/servers/${srv.id}`);
    t.equal(await value(url, 'http_request_duration_seconds_count', { app: 'api', route: '/servers/:server_id', status: '200', method: 'GET' }), before + 2);
    const nf = await value(url, 'http_request_duration_seconds_count', { route: '*', status: '404' });
    await request(s.apiUrl, 'GET', `/no/such/${Date.now()}`, { skipOpenApi: true });
    t.equal(await value(url, 'http_request_duration_seconds_count', { route: '*', status: '404' }), nf + 1, 'unmatched paths share one label');
    const all = await scrape(url);
    t.notOk(all.some((x) => x.name.startsWith('http_request') && (x.labels.route ?? '').includes(srv.id)), 'no raw id in any route label');
    const forbidden = await value(url, 'http_request_duration_seconds_count', { route: '/servers/:server_id', status: '404' });
    const stranger = await signup(s);
    await stranger.api.get(`/servers/${srv.id}`);
    t.equal(await value(url, 'http_request_duration_seconds_count', { route: '/servers/:server_id', status: '404' }), forbidden + 1, 'status label');
  });

  t.test('requests in flight', async (t) => {
    t.equal(await value(url, 'http_requests_in_flight', { app: 'api' }), 0);
    // A request whose body has not fully arrived is in flight until it has.
    const port = Number(new URL(s.apiUrl).port);
    const sock = net.connect(port, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    sock.write('POST /auth/session/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"email"');
    await until('the request is in flight', async () => (await value(url, 'http_requests_in_flight', { app: 'api' })) === 1);
    const answered = new Promise<string>((r) => sock.on('data', (d) => r(String(d))));
    sock.write(':"a@b.c"}   ');
    t.match(await answered, /^HTTP\/1.1 \d{3}/);
    sock.destroy();
    await until('nothing in flight', async () => (await value(url, 'http_requests_in_flight', { app: 'api' })) === 0);
    t.pass('back to 0');
  });

  t.test('rate-limit refusals per bucket', async (t) => {
    const before = await value(url, 'ratelimit_refusals_total', { bucket: 'catch-all' });
    let refused = 0;
    for (let i = 0; i < 22; i++) if ((await request(s.apiUrl, 'GET', '/onboard/hello', { skipOpenApi: true })).status === 429) refused++;
    t.ok(refused >= 2);
    t.equal(await value(url, 'ratelimit_refusals_total', { bucket: 'catch-all' }), before + refused);
  });

  t.test('event store appends and projector batches', async (t) => {
    const appended = await value(url, 'eventstore_events_appended_total');
    const appends = await value(url, 'eventstore_append_duration_seconds_count', { outcome: 'ok' });
    const applied = await value(url, 'projector_events_applied_total', { partition: '0' });
    const batches = await value(url, 'projector_batch_events_count', { partition: '0' });
    const u = await signup(s); // account, email claim, session, onboarding, username claim
    await u.api.patch('/users/@me', { display_name: 'Metered' });
    t.ok((await value(url, 'eventstore_events_appended_total')) >= appended + 5, 'events appended');
    t.ok((await value(url, 'eventstore_append_duration_seconds_count', { outcome: 'ok' })) >= appends + 4, 'append latency observed');
    t.ok((await value(url, 'projector_events_applied_total', { partition: '0' })) >= applied + 3, 'events applied');
    t.ok((await value(url, 'projector_batch_events_count', { partition: '0' })) > batches, 'batch sizes observed');
    // Caught up (the writes answered after their projection): no lag, not rebuilding.
    t.equal(await value(url, 'projector_lag_events', { partition: '0' }), 0);
    t.equal(await value(url, 'projector_lag_seconds', { partition: '0' }), 0);
    t.equal(await value(url, 'projector_rebuild_progress_ratio', { partition: '0' }), 1);
  });

  t.test('the fact cache', async (t) => {
    const u = await signup(s);
    // Onboarding wrote the session last: the first request reads it from Redis and caches it.
    await u.api.get('/users/@me');
    const hits = await value(url, 'fact_cache', { what: 'hits' });
    for (let i = 0; i < 3; i++) await u.api.get('/users/@me');
    const after = await value(url, 'fact_cache', { what: 'hits' });
    t.ok(after >= hits + 3, `each request finds its session in the cache (${hits} → ${after}; misses ${await value(url, 'fact_cache', { what: 'misses' })}, flushes ${await value(url, 'fact_cache', { what: 'flushes' })})`);
    t.ok((await value(url, 'fact_cache', { what: 'entries' })) > 0, 'entries held');
    t.ok((await value(url, 'fact_cache', { what: 'bytes' })) > 0, 'bytes held');
    const invalidated = await value(url, 'fact_cache', { what: 'invalidations' });
    await u.api.patch('/users/@me', { display_name: 'Cached' });
    t.ok((await value(url, 'fact_cache', { what: 'invalidations' })) > invalidated, 'a write invalidates');
  });

  t.test('quarantined events', async (t) => {
    const before = await value(url, 'projector_quarantined_events_total', { partition: '3' });
    countQuarantinedEvent(3);
    t.equal(await value(url, 'projector_quarantined_events_total', { partition: '3' }), before + 1);
  });
});

t.test('projector lag in events and seconds, and rebuild progress', async (t) => {
  const s = await startTestService(t, { METRICS_PORT: '0', ROLES: 'api,projector' });
  const url = s.metricsUrl!;
  await signup(s);
  t.equal(await value(url, 'projector_lag_events', { partition: '0' }), 0);
  // Stop the projector, append three events dated 5 s ago, start it again after looking.
  const runner = s.projector!;
  await runner.stop();
  const { Projector } = await import('../projections/projector.ts');
  const { PROJECTIONS } = await import('../projections/index.ts');
  const { trackProjector } = await import('../src/metrics/registry.ts');
  const at = new Date(Date.now() - 5000).toISOString();
  for (let i = 0; i < 3; i++) {
    await s.store.append(`file-lag${i}`, [{ id: crypto.randomUUID(), type: 'NotAType', data: {}, metadata: { actor: null, requestId: 'r', at, scope: 'lag' } }], 'no_stream');
  }
  const head = (await s.store.headPosition())!;
  // A stand-in that reports the stopped partition where it stood.
  const cp = head - 3n;
  const untrack = trackProjector({ store: s.store, partitions: () => [{ partition: 9, position: cp, rebuilding: true }] });
  t.teardown(untrack);
  t.equal(await value(url, 'projector_lag_events', { partition: '9' }), 3, 'three events behind');
  t.ok((await value(url, 'projector_lag_seconds', { partition: '9' })) >= 5, 'the oldest unprojected event is 5 s old');
  t.equal(await value(url, 'projector_rebuild_progress_ratio', { partition: '9' }), Number(cp) / Number(head));
  untrack();
  // A real projector catches up: its lag is 0 again.
  const p = new Projector({ store: s.store, redisUrl: s.config.redisUrl, prefix: s.config.redisPrefix, partitions: 1, projections: PROJECTIONS, log: s.log });
  await p.start();
  t.teardown(() => p.stop());
  const untrack2 = trackProjector({ store: s.store, partitions: () => p.runnerStates() });
  t.teardown(untrack2);
  await p.caughtUp();
  await until('lag 0', async () => (await value(url, 'projector_lag_events', { partition: '0' })) === 0 && (await has(url, 'projector_lag_events', { partition: '0' })));
  t.equal(await value(url, 'projector_lag_seconds', { partition: '0' }), 0);
});

t.test('media queues: depth, job durations and failures', async (t) => {
  const s = await startTestService(t, { METRICS_PORT: '0', RATE_LIMITS: 'off' });
  const url = s.metricsUrl!;
  const u = await signup(s);
  t.ok(await has(url, 'queue_jobs', { queue: 'media-attachments', state: 'waiting' }), 'depth per tag');
  const done = await value(url, 'queue_job_duration_seconds_count', { queue: 'media-avatars', outcome: 'completed' });
  await uploadImage(s, u, 'avatars');
  t.equal(await value(url, 'queue_job_duration_seconds_count', { queue: 'media-avatars', outcome: 'completed' }), done + 1);
  const failed = await value(url, 'queue_job_failures_total', { queue: 'media-avatars' });
  const form = new FormData();
  form.append('file', new Blob([new TextEncoder().encode('not an image at all')], { type: 'image/png' }), 'x.png');
  const r = await fetch(`${s.mediaUrl}/avatars`, { method: 'POST', headers: { 'X-Session-Token': u.token }, body: form });
  t.equal(r.status, 400);
  t.equal(await value(url, 'queue_job_failures_total', { queue: 'media-avatars' }), failed + 1);
  t.equal(await value(url, 'queue_job_duration_seconds_count', { queue: 'media-avatars', outcome: 'failed' }) >= 1, true);
  t.ok(await has(url, 'http_request_duration_seconds_count', { app: 'media', route: '/avatars' }), 'media app requests');
});

t.test('gateway: open sockets and events delivered', async (t) => {
  const s = await startTestService(t, { METRICS_PORT: '0' });
  const url = s.metricsUrl!;
  const u = await signup(s);
  const open = await value(url, 'gateway_open_sockets');
  const ws = await connectReady(s, u.token);
  t.equal(await value(url, 'gateway_open_sockets'), open + 1);
  const delivered = await value(url, 'gateway_events_delivered_total');
  await u.api.patch('/users/@me', { display_name: 'Delivered' });
  await ws.waitFor((e) => e.type === 'UserUpdate');
  t.ok((await value(url, 'gateway_events_delivered_total')) >= delivered + 1);
  ws.close();
  await until('socket gone', async () => (await value(url, 'gateway_open_sockets')) === open);
  t.pass('closed sockets are no longer counted');
  void client;
});
