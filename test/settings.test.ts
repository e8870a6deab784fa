/**
 * Settings sync (issue 15): `POST /sync/settings/fetch {keys}` and `POST /sync/settings/set?timestamp=`,
 * with Stoat's timestamp rules (a future timestamp becomes now; the last write wins whatever its timestamp),
 * the bounds (keys per user, key length, value size → 400 FailedValidation), UserSettingsUpdate to the
 * user's sockets only, a race at the key limit, and rebuild equals live.
 */
import t from 'tap';
import { Redis } from 'ioredis';
import { SETTINGS_LIMITS } from '../src/domain/settings/setSettings.ts';
import { signup } from './helpers/http.ts';
import { dumpCurrent, dumpRebuild } from './helpers/servers.ts';
import { startTestService, TEST_REDIS_URL } from './helpers/service.ts';
import { controlKeys, readModelKey, rm } from '../src/readmodel/keys.ts';
import { connectReady } from './helpers/ws.ts';

t.test('settings sync', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', PROJECTOR_PARTITIONS: '2' });
  const redis = new Redis(TEST_REDIS_URL);
  t.teardown(() => redis.disconnect());
  const [alice, bob] = await Promise.all([signup(s), signup(s)]);
  const set = (body: unknown, query = '') => alice!.api.post(`/sync/settings/set${query}`, body);
  const fetchKeys = async (keys: string[]) => {
    const r = await alice!.api.post('/sync/settings/fetch', { keys });
    if (r.status !== 200) throw new Error(`fetch ${r.status} ${r.text}`);
    return r.body as Record<string, [number, string]>;
  };

  t.test('nothing stored: {}', async (t) => {
    t.same(await fetchKeys(['ordering', 'notifications']), {});
  });

  t.test('set and fetch; the timestamp rules', async (t) => {
    t.equal((await set({ ordering: '{"servers":[]}' }, '?timestamp=1700000000000')).status, 204);
    t.same(await fetchKeys(['ordering', 'other']), { ordering: [1700000000000, '{"servers":[]}'] }, 'a past timestamp is kept; unknown keys are left out');

    const before = Date.now();
    t.equal((await set({ future: 'x' }, `?timestamp=${before + 86_400_000}`)).status, 204);
    const [ts] = (await fetchKeys(['future'])).future!;
    t.ok(ts >= before && ts <= Date.now(), `a future timestamp becomes now (${ts})`);

    const b2 = Date.now();
    t.equal((await set({ none: 'y' })).status, 204);
    const [ts2] = (await fetchKeys(['none'])).none!;
    t.ok(ts2 >= b2 && ts2 <= Date.now(), 'no timestamp: now');

    t.equal((await set({ ordering: 'older write' }, '?timestamp=5')).status, 204);
    t.same((await fetchKeys(['ordering'])).ordering, [5, 'older write'], 'the last write wins even with an older timestamp (Stoat $set)');
    t.equal((await set({ neg: 'n' }, '?timestamp=-42')).status, 204);
    t.same((await fetchKeys(['neg'])).neg, [-42, 'n'], 'a negative timestamp is a valid i64');
    // The Stoat web client sends its timestamp in the body: taken as the timestamp, not stored as a key.
    t.equal((await set({ timestamp: 1700000000123, notifications: '{"server":{}}' })).status, 204, "the web client's body form");
    t.same(await fetchKeys(['notifications', 'timestamp']), { notifications: [1700000000123, '{"server":{}}'] }, 'body timestamp used; no "timestamp" key stored');
    t.equal((await set({ timestamp: 1700000000999, notifications: 'q' }, '?timestamp=1700000000456')).status, 204);
    t.same((await fetchKeys(['notifications'])).notifications, [1700000000456, 'q'], 'the query timestamp wins over the body one');
    t.equal((await set({ timestamp: 'a string', k: 'v' })).status, 204, 'a string "timestamp" is an ordinary setting');
    t.same((await fetchKeys(['timestamp'])).timestamp?.[1], 'a string');
  });

  t.test('keys are data, never object properties', async (t) => {
    // The API's JSON parser refuses a `__proto__` member anywhere (400); other inherited names are plain keys.
    const proto = await alice!.api.post('/sync/settings/set', undefined, { rawBody: '{"__proto__":"p"}', contentType: 'text/plain' });
    t.same([proto.status, proto.body.type], [400, 'FailedValidation'], '__proto__ in a body: 400');
    t.equal((await set({ constructor: 'c', toString: 't', hasOwnProperty: 'h' }, '?timestamp=7')).status, 204);
    const r = await alice!.api.post('/sync/settings/fetch', { keys: ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'] });
    t.equal(r.status, 200);
    t.same(JSON.parse(r.text, (k, v) => v), { constructor: [7, 'c'], toString: [7, 't'], hasOwnProperty: [7, 'h'] }, 'inherited names round-trip as data; absent ones stay absent');
    t.notOk(r.text.includes('__proto__'), 'a __proto__ key asked for is simply not stored');
  });

  t.test('bad input: 400 FailedValidation, nothing stored', async (t) => {
    const head = await s.store.headPosition();
    const bad = async (what: string, r: Promise<{ status: number; body: any }>) => {
      const res = await r;
      t.same([res.status, res.body?.type], [400, 'FailedValidation'], what);
    };
    await bad('a number value', set({ k: 1 }));
    await bad('an object value', set({ k: {} }));
    await bad('an array body', set(['k']));
    await bad('a fractional timestamp in the body', set({ k: 'v', timestamp: 1.5 }));
    await bad('a non-integer timestamp', set({ k: 'v' }, '?timestamp=abc'));
    await bad('a fractional timestamp', set({ k: 'v' }, '?timestamp=1.5'));
    await bad('a timestamp beyond 2^53', set({ k: 'v' }, '?timestamp=9223372036854775807'));
    await bad('an empty key', set({ '': 'v' }));
    await bad(`a key over ${SETTINGS_LIMITS.keyLength} characters`, set({ ['k'.repeat(SETTINGS_LIMITS.keyLength + 1)]: 'v' }));
    await bad(`a value over ${SETTINGS_LIMITS.valueBytes} bytes`, set({ big: 'é'.repeat(SETTINGS_LIMITS.valueBytes / 2) + 'x' }));
    await bad('fetch without keys', alice!.api.post('/sync/settings/fetch', {}));
    await bad('fetch with a non-string key', alice!.api.post('/sync/settings/fetch', { keys: [1] }));
    await bad(`fetch of more than ${SETTINGS_LIMITS.keys} keys`, alice!.api.post('/sync/settings/fetch', { keys: Array.from({ length: SETTINGS_LIMITS.keys + 1 }, (_, i) => `k${i}`) }));
    await bad('fetch with an unknown field', alice!.api.post('/sync/settings/fetch', { keys: [], extra: 1 }));
    t.equal(await s.store.headPosition(), head, 'nothing appended');
    t.equal((await set({ big: 'é'.repeat(SETTINGS_LIMITS.valueBytes / 2) })).status, 204, `a value of exactly ${SETTINGS_LIMITS.valueBytes} bytes is fine`);
    t.equal((await set({ ['k'.repeat(SETTINGS_LIMITS.keyLength)]: 'v' })).status, 204, `a key of ${SETTINGS_LIMITS.keyLength} characters is fine`);
    const anon = await fetch(`${s.apiUrl}/sync/settings/fetch`, { method: 'POST', body: '{"keys":[]}' });
    t.equal(anon.status, 401);
  });

  t.test('UserSettingsUpdate goes to every socket of the user and no one else', async (t) => {
    const [a1, a2, b1] = await Promise.all([connectReady(s, alice!.token), connectReady(s, alice!.token), connectReady(s, bob!.token)]);
    t.teardown(() => (a1.close(), a2.close(), b1.close()));
    t.equal((await set({ notifications: '{"server":{}}' }, '?timestamp=1234')).status, 204);
    const want = { type: 'UserSettingsUpdate', id: alice!.userId, update: { notifications: [1234, '{"server":{}}'] } };
    t.same(await a1.waitFor((e) => e.type === 'UserSettingsUpdate'), want);
    t.same(await a2.waitFor((e) => e.type === 'UserSettingsUpdate'), want);
    // Bob hears his own change, never alice's.
    t.equal((await bob!.api.post('/sync/settings/set', { mine: 'b' })).status, 204);
    const his = await b1.waitFor((e) => e.type === 'UserSettingsUpdate');
    t.equal(his.id, bob!.userId);
    t.equal(b1.events.filter((e) => e.type === 'UserSettingsUpdate').length, 1, "bob got only his own update");
    t.same(await fetchKeys(['mine']), {}, "another user's settings are not visible");
  });

  t.test(`the key limit: ${SETTINGS_LIMITS.keys} per user, exactly, also under a race`, async (t) => {
    const carol = await signup(s);
    const keys = (from: number, n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`key${from + i}`, 'v']));
    t.equal((await carol.api.post('/sync/settings/set', keys(0, SETTINGS_LIMITS.keys - 10))).status, 204);
    // Two writes of 6 new keys each: both fit alone, together they pass the limit. Exactly one wins.
    const [r1, r2] = await Promise.all([carol.api.post('/sync/settings/set', keys(1000, 6)), carol.api.post('/sync/settings/set', keys(2000, 6))]);
    t.same([r1.status, r2.status].sort(), [204, 400], 'one of the racing writes is refused');
    t.equal((r1.status === 400 ? r1 : r2).body.type, 'FailedValidation');
    t.equal((await carol.api.post('/sync/settings/set', keys(3000, 4))).status, 204, `up to ${SETTINGS_LIMITS.keys}`);
    const over = await carol.api.post('/sync/settings/set', keys(4000, 1));
    t.same([over.status, over.body.type], [400, 'FailedValidation'], `key ${SETTINGS_LIMITS.keys + 1} is refused`);
    t.equal((await carol.api.post('/sync/settings/set', keys(0, 3))).status, 204, 'rewriting stored keys is fine at the limit');
    const stored = await redis.hlen(readModelKey(s.prefix, Number(await redis.get(controlKeys(s.prefix).generation)), rm.userSettings(carol.userId)));
    t.equal(stored, SETTINGS_LIMITS.keys, 'exactly the limit is stored');
  });

  t.test('one write: at most SETTINGS_WRITE_MAX_BYTES of keys and values', async (t) => {
    const erin = await signup(s);
    const max = s.config.settings.writeMaxBytes;
    const value = (n: number) => 'v'.repeat(n);
    const ok = await erin.api.post('/sync/settings/set', { a: value(SETTINGS_LIMITS.valueBytes), b: value(max - SETTINGS_LIMITS.valueBytes - 2) });
    t.equal(ok.status, 204, `${max} bytes: fine`);
    const head = await s.store.headPosition();
    const over = await erin.api.post('/sync/settings/set', { a: value(SETTINGS_LIMITS.valueBytes), b: value(max - SETTINGS_LIMITS.valueBytes - 1) });
    t.same([over.status, over.body.type], [400, 'FailedValidation'], `${max + 1} bytes: refused`);
    t.equal(await s.store.headPosition(), head, 'nothing appended');
  });

  t.test('what one account adds to the log: SETTINGS_LOG_BYTES_PER_DAY, then 429 for the rest of the day', async (t) => {
    const dave = await signup(s);
    const budget = s.config.settings.logBytesPerDay;
    const write = (n: number) => dave.api.post('/sync/settings/set', { k: 'v'.repeat(n) });
    // Each write costs 256 (the event) + 1 (the key) + its value's bytes.
    const full = 256 + 1 + SETTINGS_LIMITS.valueBytes;
    let spent = 0;
    while (budget - spent > full) {
      t.equal((await write(SETTINGS_LIMITS.valueBytes)).status, 204);
      spent += full;
    }
    const last = await write(budget - spent - 257);
    t.equal(last.status, 204, `the write that reaches exactly ${budget} bytes`);
    const head = await s.store.headPosition();
    const refused = await write(1);
    t.equal(refused.status, 429, 'one byte more is refused');
    t.ok(refused.body.retry_after > 23 * 3600_000 && refused.body.retry_after <= 24 * 3600_000, `retry_after until the day is over (${refused.body.retry_after} ms)`);
    t.equal(await s.store.headPosition(), head, 'nothing appended');
    t.equal((await dave.api.post('/sync/settings/set', {})).status, 204, 'an empty write costs nothing');
    t.equal((await set({ other: 'user' })).status, 204, "another account's budget is its own");
  });

  t.test('rebuild equals live', async (t) => {
    const live = await dumpCurrent(redis, s.prefix);
    t.ok(Object.keys(live).some((k) => k === `settings:${alice!.userId}`));
    t.same(live, await dumpRebuild(t, redis, { store: s.store, redisUrl: TEST_REDIS_URL, prefix: s.prefix, partitions: 2 }));
  });
});
