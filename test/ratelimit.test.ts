import t from 'tap';
import {
  BUCKET_LIMITS,
  RateLimiter,
  WINDOW_MS,
  classify,
  type Bucket,
  type Classification,
} from '../src/ratelimit/limiter.ts';

/** A clock the test moves by hand. */
function clock(start: number) {
  const c = { now: start, fn: () => c.now };
  return c;
}

const BUCKETS = Object.keys(BUCKET_LIMITS) as Bucket[];
const SMALL_BUCKETS = BUCKETS.filter((b) => BUCKET_LIMITS[b] <= 20);
/** The spec's four buckets (the bots and webhooks buckets are the same code with Stoat's and issue 22's limits). */
const SPEC_BUCKETS: Bucket[] = ['servers', 'channels', 'messaging', 'catch-all'];

t.test('bucket names and limits are the spec table', async (t) => {
  t.same(BUCKET_LIMITS, { servers: 5, channels: 15, messaging: 10, 'catch-all': 20, default_avatar: 255, proxy: 120, bots: 10, webhooks: 10, compliance_export: 3, account_export: 3 });
  t.equal(WINDOW_MS, 10_000);
});

for (const bucket of BUCKETS) {
  const limit = BUCKET_LIMITS[bucket];
  t.test(`${bucket}: ${limit} allowed per window, then refused until exactly the reset`, async (t) => {
    // Not on a 10 s boundary: the window starts with the first request.
    const start = 1_234_567;
    const c = clock(start);
    // Every request of the window inside the 10 s (255 default_avatar requests at 100 ms would outlast it).
    const step = Math.min(100, Math.floor(WINDOW_MS / (limit + 10)));
    const rl = new RateLimiter({ now: c.fn });
    for (let i = 0; i < limit; i++) {
      c.now = start + i * step;
      const r = rl.hit('caller', bucket, 'res');
      t.equal(r.allowed, true, `request ${i + 1} allowed`);
      t.equal(r.bucket, bucket);
      t.equal(r.limit, limit);
      t.equal(r.remaining, limit - 1 - i, `remaining after request ${i + 1}`);
      t.equal(r.resetAfterMs, WINDOW_MS - i * step, 'reset-after counts down from the first request');
      t.equal(r.retryAfterMs, undefined);
    }
    const reset = start + WINDOW_MS;
    c.now = start + limit * step;
    const refused = rl.hit('caller', bucket, 'res');
    t.equal(refused.allowed, false, `request ${limit + 1} refused`);
    t.equal(refused.remaining, 0);
    t.equal(refused.limit, limit);
    t.equal(refused.resetAfterMs, reset - c.now);
    t.equal(refused.retryAfterMs, reset - c.now, 'retry_after is the ms until reset');
    t.ok(Number.isInteger(refused.retryAfterMs));

    // More refusals neither count (remaining stays 0, not negative) nor push the reset back.
    for (let i = 0; i < 5; i++) rl.hit('caller', bucket, 'res');
    c.now = reset - 1;
    const last = rl.hit('caller', bucket, 'res');
    t.equal(last.allowed, false, 'still refused 1 ms before the reset');
    t.equal(last.remaining, 0);
    t.equal(last.retryAfterMs, 1);
    const seen = rl.peek('caller', bucket, 'res');
    t.equal(seen.remaining, 0, 'refusals were not counted past the limit');
    t.equal(seen.resetAfterMs, 1);

    c.now = reset;
    const again = rl.hit('caller', bucket, 'res');
    t.equal(again.allowed, true, 'allowed at exactly the reset instant');
    t.equal(again.remaining, limit - 1, 'a new window starts with this request');
    t.equal(again.resetAfterMs, WINDOW_MS);
    for (let i = 1; i < limit; i++) {
      c.now = reset + i;
      t.equal(rl.hit('caller', bucket, 'res').allowed, true);
    }
    c.now = reset + WINDOW_MS - 1;
    const edge = rl.hit('caller', bucket, 'res');
    t.equal(edge.allowed, false, 'the new window ends 10 s after the request that opened it');
    t.equal(edge.retryAfterMs, 1);
    c.now = reset + WINDOW_MS;
    t.equal(rl.hit('caller', bucket, 'res').allowed, true);
  });
}

t.test('a window starts with the first request after the previous one ended', async (t) => {
  const c = clock(7_500);
  const rl = new RateLimiter({ now: c.fn });
  const limit = BUCKET_LIMITS.servers;
  for (let i = 0; i < limit; i++) t.equal(rl.hit('u', 'servers', 's').allowed, true);
  c.now = 10_000; // an aligned boundary: nothing resets here
  const mid = rl.hit('u', 'servers', 's');
  t.equal(mid.allowed, false);
  t.equal(mid.retryAfterMs, 7_500);
  c.now = 17_500;
  t.equal(rl.hit('u', 'servers', 's').remaining, limit - 1);

  // Idle well past the end: the next window opens at the next request, not at a multiple of 10 s.
  c.now = 40_123;
  const fresh = rl.hit('u', 'servers', 's');
  t.equal(fresh.remaining, limit - 1);
  t.equal(fresh.resetAfterMs, WINDOW_MS);
  c.now = 50_000;
  for (let i = 1; i < limit; i++) rl.hit('u', 'servers', 's');
  t.equal(rl.hit('u', 'servers', 's').retryAfterMs, 123);
  c.now = 50_123;
  t.equal(rl.hit('u', 'servers', 's').allowed, true);
});

t.test('budgets are independent per resource, caller and bucket', async (t) => {
  const c = clock(0);
  const rl = new RateLimiter({ now: c.fn });
  const exhaust = (caller: string, bucket: Bucket, resource: string) => {
    for (let i = 0; i < BUCKET_LIMITS[bucket]; i++) t.equal(rl.hit(caller, bucket, resource).allowed, true);
    t.equal(rl.hit(caller, bucket, resource).allowed, false);
  };
  exhaust('alice', 'messaging', 'channelA');
  const other = rl.hit('alice', 'messaging', 'channelB');
  t.equal(other.allowed, true, 'another channel has its own messaging budget');
  t.equal(other.remaining, BUCKET_LIMITS.messaging - 1);
  t.equal(rl.hit('bob', 'messaging', 'channelA').remaining, BUCKET_LIMITS.messaging - 1, 'another caller');
  t.equal(rl.hit('alice', 'channels', 'channelA').remaining, BUCKET_LIMITS.channels - 1, 'another bucket');

  exhaust('alice', 'servers', 'server1');
  t.equal(rl.hit('alice', 'servers', 'server2').remaining, BUCKET_LIMITS.servers - 1, 'another server');
  t.equal(rl.hit('bob', 'servers', 'server1').remaining, BUCKET_LIMITS.servers - 1, 'another caller');

  exhaust('alice', 'catch-all', 'GET /users/@me');
  t.equal(rl.hit('alice', 'catch-all', 'PATCH /users/@me').allowed, true, 'another route');
  t.equal(rl.hit('alice', 'messaging', 'channelA').allowed, false, 'the exhausted budget is still exhausted');

  // Keys are not ambiguous when caller and resource strings could be concatenated either way.
  exhaust('ab', 'catch-all', 'c');
  t.equal(rl.hit('a', 'catch-all', 'bc').allowed, true);
  exhaust('u', 'catch-all', 'catch-all\u0000z');
  t.equal(rl.hit('ucatch-all\u0000', 'catch-all', 'z').allowed, true, 'even with NUL in caller and resource');
});

t.test('peek reports the counter without counting', async (t) => {
  const c = clock(500);
  const rl = new RateLimiter({ now: c.fn });
  const fresh = rl.peek('u', 'channels', 'c');
  t.same(fresh, { allowed: true, bucket: 'channels', limit: 15, remaining: 15, resetAfterMs: 0 });
  for (let i = 0; i < 20; i++) rl.peek('u', 'channels', 'c');
  t.equal(rl.size(), 0, 'peek stores nothing');
  t.equal(rl.hit('u', 'channels', 'c').remaining, 14, 'peeks spent nothing');
  c.now = 2_500;
  t.same(rl.peek('u', 'channels', 'c'), { allowed: true, bucket: 'channels', limit: 15, remaining: 14, resetAfterMs: 8_000 });
  t.equal(rl.hit('u', 'channels', 'c').remaining, 13);
  for (let i = 0; i < 13; i++) rl.hit('u', 'channels', 'c');
  const full = rl.peek('u', 'channels', 'c');
  t.equal(full.allowed, false);
  t.equal(full.remaining, 0);
  t.equal(full.retryAfterMs, 8_000);
  c.now = 10_500;
  t.same(rl.peek('u', 'channels', 'c'), { allowed: true, bucket: 'channels', limit: 15, remaining: 15, resetAfterMs: 0 });
});

t.test('a disabled limiter never refuses and never counts', async (t) => {
  const c = clock(0);
  const rl = new RateLimiter({ now: c.fn, enabled: false });
  for (const bucket of BUCKETS) {
    for (let i = 0; i < 100; i++) {
      const r = rl.hit('u', bucket, 'x');
      t.equal(r.allowed, true);
      t.equal(r.remaining, BUCKET_LIMITS[bucket]);
      if (!r.allowed || r.remaining !== BUCKET_LIMITS[bucket]) break;
    }
    const p = rl.peek('u', bucket, 'x');
    t.same(p, { allowed: true, bucket, limit: BUCKET_LIMITS[bucket], remaining: BUCKET_LIMITS[bucket], resetAfterMs: 0 });
  }
  t.equal(rl.size(), 0);
});

t.test('memory stays bounded under many callers', async (t) => {
  const c = clock(0);
  const rl = new RateLimiter({ now: c.fn });
  let max = 0;
  // 100 000 callers, one request each, 1 ms apart: 10 000 per window.
  for (let i = 0; i < 100_000; i++) {
    c.now = i;
    rl.hit(`caller-${i}`, 'catch-all', 'GET /');
    if (rl.size() > max) max = rl.size();
  }
  t.ok(max <= 20_000, `at most two windows of counters held (max ${max})`);
  t.ok(max >= 10_000, `counters of the running window are kept (max ${max})`);
  t.comment(`max size with 100 000 callers over 100 s: ${max}`);
  c.now = 100_000 + 2 * WINDOW_MS;
  rl.hit('late', 'catch-all', 'GET /');
  t.equal(rl.size(), 1, 'after two idle windows only the new counter is left');
});

t.test('dropping old counters never forgets a running window', async (t) => {
  // Reference model: an unbounded map with the same rule. Mixed gaps exercise every generation swap.
  const c = clock(3_333);
  const rl = new RateLimiter({ now: c.fn });
  const model = new Map<string, { used: number; reset: number }>();
  let seed = 42;
  const rand = (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed % n;
  };
  let mismatches = 0;
  let refusals = 0;
  for (let i = 0; i < 50_000; i++) {
    c.now += rand(10) === 0 ? rand(25_000) : rand(400);
    const caller = `c${rand(4)}`;
    // The spec's four buckets (default_avatar's 255 is the same code and would rarely refuse in this sequence).
    const bucket = SPEC_BUCKETS[rand(SPEC_BUCKETS.length)] as Bucket;
    const resource = `r${rand(3)}`;
    const key = `${caller}|${bucket}|${resource}`;
    const limit = BUCKET_LIMITS[bucket];
    let e = model.get(key);
    let allowed = true;
    if (e === undefined || c.now >= e.reset) {
      e = { used: 1, reset: c.now + WINDOW_MS };
      model.set(key, e);
    } else if (e.used >= limit) allowed = false;
    else e.used += 1;
    const r = rl.hit(caller, bucket, resource);
    const expected = { allowed, remaining: allowed ? limit - e.used : 0, resetAfterMs: e.reset - c.now };
    if (r.allowed !== expected.allowed || r.remaining !== expected.remaining || r.resetAfterMs !== expected.resetAfterMs) {
      mismatches++;
    }
    if (!allowed) refusals++;
  }
  t.equal(mismatches, 0, 'every result matches the unbounded model');
  t.ok(refusals > 1_000, `the sequence exercises refusals (${refusals})`);
});

t.test('classification table (DESIGN §4 "rate limits")', async (t) => {
  const caller = 'session-1';
  const server = { type: 'Server', id: 'S1' };
  const rows: [method: string, pattern: string, params: Record<string, string>, body: unknown, expected: Classification][] = [
    // servers: keyed by the server id, every route under /servers/:id.
    ['POST', '/servers/create', {}, { name: 'x' }, { bucket: 'servers', resource: caller }],
    ['GET', '/servers/:server_id', { server_id: 'S1' }, undefined, { bucket: 'servers', resource: 'S1' }],
    ['PATCH', '/servers/:server_id', { server_id: 'S1' }, {}, { bucket: 'servers', resource: 'S1' }],
    ['DELETE', '/servers/:server_id', { server_id: 'S2' }, undefined, { bucket: 'servers', resource: 'S2' }],
    ['POST', '/servers/:server_id/channels', { server_id: 'S1' }, {}, { bucket: 'servers', resource: 'S1' }],
    ['POST', '/servers/:server_id/roles', { server_id: 'S1' }, {}, { bucket: 'servers', resource: 'S1' }],
    ['PATCH', '/servers/:server_id/roles/:role_id', { server_id: 'S1', role_id: 'R1' }, {}, { bucket: 'servers', resource: 'S1' }],
    ['PUT', '/servers/:server_id/bans/:user_id', { server_id: 'S3', user_id: 'U1' }, {}, { bucket: 'servers', resource: 'S3' }],
    ['GET', '/servers/:server_id/members', { server_id: 'S1' }, undefined, { bucket: 'servers', resource: 'S1' }],
    ['get', '/servers/:server_id/emojis', { server_id: 'S1' }, undefined, { bucket: 'servers', resource: 'S1' }],
    ['PATCH', '/0.8/servers/:server_id', { server_id: 'S1' }, {}, { bucket: 'servers', resource: 'S1' }],
    // Emoji create: keyed by its parent server; anything else falls to catch-all.
    ['PUT', '/custom/emoji/:emoji_id', { emoji_id: 'E1' }, { name: 'e', parent: server }, { bucket: 'servers', resource: 'S1' }],
    ['PUT', '/custom/emoji/:emoji_id', { emoji_id: 'E2' }, { parent: { type: 'Server', id: 'S9' } }, { bucket: 'servers', resource: 'S9' }],
    ['PUT', '/custom/emoji/:emoji_id', { emoji_id: 'E1' }, { parent: { type: 'Server', id: '' } }, { bucket: 'catch-all', resource: 'PUT /custom/emoji/:emoji_id' }],
    ['PUT', '/custom/emoji/:emoji_id', { emoji_id: 'E1' }, { parent: { type: 'Server', id: 7 } }, { bucket: 'catch-all', resource: 'PUT /custom/emoji/:emoji_id' }],
    ['PUT', '/custom/emoji/:emoji_id', { emoji_id: 'E1' }, { parent: { type: 'Server' } }, { bucket: 'catch-all', resource: 'PUT /custom/emoji/:emoji_id' }],
    ['PUT', '/custom/emoji/:emoji_id', { emoji_id: 'E1' }, { parent: { type: 'Detached', id: 'S1' } }, { bucket: 'catch-all', resource: 'PUT /custom/emoji/:emoji_id' }],
    ['PUT', '/custom/emoji/:emoji_id', { emoji_id: 'E1' }, { parent: 'S1' }, { bucket: 'catch-all', resource: 'PUT /custom/emoji/:emoji_id' }],
    ['PUT', '/custom/emoji/:emoji_id', { emoji_id: 'E1' }, { name: 'e' }, { bucket: 'catch-all', resource: 'PUT /custom/emoji/:emoji_id' }],
    ['PUT', '/custom/emoji/:emoji_id', { emoji_id: 'E1' }, [server], { bucket: 'catch-all', resource: 'PUT /custom/emoji/:emoji_id' }],
    ['PUT', '/custom/emoji/:emoji_id', { emoji_id: 'E1' }, null, { bucket: 'catch-all', resource: 'PUT /custom/emoji/:emoji_id' }],
    ['PUT', '/custom/emoji/:emoji_id', { emoji_id: 'E1' }, undefined, { bucket: 'catch-all', resource: 'PUT /custom/emoji/:emoji_id' }],
    ['PUT', '/custom/emoji/:emoji_id', { emoji_id: 'E1' }, 'parent', { bucket: 'catch-all', resource: 'PUT /custom/emoji/:emoji_id' }],
    ['DELETE', '/custom/emoji/:emoji_id', { emoji_id: 'E1' }, { parent: server }, { bucket: 'catch-all', resource: 'DELETE /custom/emoji/:emoji_id' }],
    ['GET', '/custom/emoji/:emoji_id', { emoji_id: 'E1' }, undefined, { bucket: 'catch-all', resource: 'GET /custom/emoji/:emoji_id' }],
    ['GET', '/users/:user_id/default_avatar', { user_id: 'U1' }, undefined, { bucket: 'default_avatar', resource: 'GET /users/:user_id/default_avatar' }],
    ['GET', '/users/:user_id/profile', { user_id: 'U1' }, undefined, { bucket: 'catch-all', resource: 'GET /users/:user_id/profile' }],
    ['POST', '/channels/:channel_id/search', { channel_id: 'C1' }, {}, { bucket: 'channels', resource: 'C1' }],
    // messaging: message send only.
    ['POST', '/channels/:channel_id/messages', { channel_id: 'C1' }, { content: 'hi' }, { bucket: 'messaging', resource: 'C1' }],
    ['post', '/channels/:channel_id/messages', { channel_id: 'C2' }, {}, { bucket: 'messaging', resource: 'C2' }],
    // channels: everything else under /channels/:id.
    ['GET', '/channels/:channel_id/messages', { channel_id: 'C1' }, undefined, { bucket: 'channels', resource: 'C1' }],
    ['GET', '/channels/:channel_id/messages/:message_id', { channel_id: 'C1', message_id: 'M1' }, undefined, { bucket: 'channels', resource: 'C1' }],
    ['PATCH', '/channels/:channel_id/messages/:message_id', { channel_id: 'C1', message_id: 'M1' }, {}, { bucket: 'channels', resource: 'C1' }],
    ['DELETE', '/channels/:channel_id/messages/:message_id', { channel_id: 'C1', message_id: 'M1' }, undefined, { bucket: 'channels', resource: 'C1' }],
    ['DELETE', '/channels/:channel_id/messages/bulk', { channel_id: 'C1' }, {}, { bucket: 'channels', resource: 'C1' }],
    ['POST', '/channels/:channel_id/messages/:message_id/pin', { channel_id: 'C1', message_id: 'M1' }, undefined, { bucket: 'channels', resource: 'C1' }],
    ['DELETE', '/channels/:channel_id/messages/:message_id/pin', { channel_id: 'C1', message_id: 'M1' }, undefined, { bucket: 'channels', resource: 'C1' }],
    ['PUT', '/channels/:channel_id/messages/:message_id/reactions/:emoji', { channel_id: 'C1', message_id: 'M1', emoji: 'E' }, undefined, { bucket: 'channels', resource: 'C1' }],
    ['DELETE', '/channels/:channel_id/messages/:message_id/reactions', { channel_id: 'C1', message_id: 'M1' }, undefined, { bucket: 'channels', resource: 'C1' }],
    ['POST', '/channels/:channel_id/join_call', { channel_id: 'C3' }, {}, { bucket: 'channels', resource: 'C3' }],
    ['POST', '/channels/:channel_id/invites', { channel_id: 'C1' }, {}, { bucket: 'channels', resource: 'C1' }],
    ['PUT', '/channels/:channel_id/permissions/:role_id', { channel_id: 'C1', role_id: 'R1' }, {}, { bucket: 'channels', resource: 'C1' }],
    ['GET', '/channels/:channel_id', { channel_id: 'C1' }, undefined, { bucket: 'channels', resource: 'C1' }],
    ['PATCH', '/channels/:channel_id', { channel_id: 'C1' }, {}, { bucket: 'channels', resource: 'C1' }],
    ['DELETE', '/channels/:channel_id', { channel_id: 'C4' }, undefined, { bucket: 'channels', resource: 'C4' }],
    // catch-all: keyed by method and pattern.
    ['POST', '/channels/create', {}, {}, { bucket: 'catch-all', resource: 'POST /channels/create' }],
    ['GET', '/users/@me', {}, undefined, { bucket: 'catch-all', resource: 'GET /users/@me' }],
    ['PATCH', '/users/@me', {}, {}, { bucket: 'catch-all', resource: 'PATCH /users/@me' }],
    ['GET', '/users/:user_id', { user_id: 'U1' }, undefined, { bucket: 'catch-all', resource: 'GET /users/:user_id' }],
    ['GET', '/', {}, undefined, { bucket: 'catch-all', resource: 'GET /' }],
    ['POST', '/invites/:invite_code', { invite_code: 'abc' }, undefined, { bucket: 'catch-all', resource: 'POST /invites/:invite_code' }],
    ['POST', '/auth/session/login', {}, {}, { bucket: 'catch-all', resource: 'POST /auth/session/login' }],
    ['GET', '/servers', {}, undefined, { bucket: 'catch-all', resource: 'GET /servers' }],
    ['GET', '*', {}, undefined, { bucket: 'catch-all', resource: 'GET *' }],
    ['POST', '*', {}, {}, { bucket: 'catch-all', resource: 'POST *' }],
    // media server: each upload tag is its own route.
    ['POST', '/attachments', {}, undefined, { bucket: 'catch-all', resource: 'POST /attachments' }],
    ['POST', '/icons', {}, undefined, { bucket: 'catch-all', resource: 'POST /icons' }],
    ['POST', '/emojis', {}, undefined, { bucket: 'catch-all', resource: 'POST /emojis' }],
  ];
  for (const [method, pattern, params, body, expected] of rows) {
    t.same(classify(method, pattern, params, body, caller), expected, `${method} ${pattern} ${JSON.stringify(body) ?? ''}`);
  }
  // Server create is keyed by the caller alone.
  t.same(classify('POST', '/servers/create', {}, {}, 'session-2'), { bucket: 'servers', resource: 'session-2' });
});

t.test('channel, role and emoji create share the servers budget of one server', async (t) => {
  const c = clock(0);
  const rl = new RateLimiter({ now: c.fn });
  const requests: [string, string, Record<string, string>, unknown][] = [
    ['POST', '/servers/:server_id/channels', { server_id: 'S1' }, {}],
    ['POST', '/servers/:server_id/roles', { server_id: 'S1' }, {}],
    ['PUT', '/custom/emoji/:emoji_id', { emoji_id: 'E1' }, { parent: { type: 'Server', id: 'S1' } }],
    ['PATCH', '/servers/:server_id/roles/:role_id', { server_id: 'S1', role_id: 'R' }, {}],
    ['PATCH', '/servers/:server_id', { server_id: 'S1' }, {}],
    ['PUT', '/custom/emoji/:emoji_id', { emoji_id: 'E2' }, { parent: { type: 'Server', id: 'S1' } }],
  ];
  const outcomes = requests.map(([m, p, params, body]) => {
    const { bucket, resource } = classify(m, p, params, body, 'alice');
    return rl.hit('alice', bucket, resource).allowed;
  });
  t.same(outcomes, [true, true, true, true, true, false]);
  const other = classify('POST', '/servers/:server_id/channels', { server_id: 'S2' }, {}, 'alice');
  t.equal(rl.hit('alice', other.bucket, other.resource).allowed, true, 'another server is not affected');
});

t.test('the two exports: own buckets per caller, 3 allowed per window, the 4th refused', async (t) => {
  const c = clock(0);
  const rl = new RateLimiter({ now: c.fn });
  for (const [pattern, bucket] of [['/admin/export', 'compliance_export'], ['/auth/account/export', 'account_export']] as const) {
    const k = classify('GET', pattern, {}, undefined, 'u:alice');
    t.same(k, { bucket, resource: 'u:alice' }, `${pattern} → ${bucket}, keyed by the caller`);
    for (let i = 0; i < 3; i++) t.equal(rl.hit('u:alice', k.bucket, k.resource).allowed, true, `${pattern} request ${i + 1}`);
    t.equal(rl.hit('u:alice', k.bucket, k.resource).allowed, false, `${pattern} request 4 refused`);
    t.equal(rl.hit('u:bob', k.bucket, 'u:bob').allowed, true, 'another caller has its own budget');
  }
});
