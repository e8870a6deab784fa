// The idempotency store over HTTP holds 1,000 keys and drops the least recently used one for the 1,001st
// (spec: "at most 1,000 keys (least recently used are dropped)"); a lookup of a stored key refreshes it.
import t from 'tap';
import { IDEMPOTENCY_CAPACITY } from '../src/idempotency/store.ts';
import { signup } from './helpers/http.ts';
import { createServer } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';

t.test('the 1,001st key evicts the least recently used one', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const owner = await signup(s);
  const srv = await createServer(owner, 'LRU');
  const M = `/channels/${srv.general}/messages`;
  const send = (key: string) => owner.api.post(M, { content: key }, { headers: { 'Idempotency-Key': key } });
  t.equal(IDEMPOTENCY_CAPACITY, 1000);

  // k0 and k1 first, one after the other, then k2 … k999 in concurrent batches: k0 is the least recently
  // used key and k1 the next one (the order inside a later batch does not matter here).
  for (const key of ['k0', 'k1']) t.equal((await send(key)).status, 200);
  for (let i = 2; i < 1000; i += 25) {
    const batch = await Promise.all(Array.from({ length: Math.min(25, 1000 - i) }, (_, k) => send(`k${i + k}`)));
    const failed = batch.find((r) => r.status !== 200);
    if (failed) throw new Error(`fill: ${failed.status} ${failed.text}`);
  }
  t.equal(s.deps.idempotency.size(), 1000, '1,000 keys stored');

  // Looking k0 up refreshes it, so k1 becomes the least recently used.
  t.equal((await send('k0')).status, 409, 'k0 is stored');
  t.equal((await send('k1000')).status, 200, 'the 1,001st key');
  t.equal(s.deps.idempotency.size(), 1000, 'still 1,000');
  t.equal((await send('k0')).status, 409, 'k0 survived: it was used recently');
  t.equal((await send('k1')).status, 200, 'k1 was evicted, so it is accepted again (and now evicts the next oldest)');
  t.equal((await send('k999')).status, 409, 'the newest keys are still there');
  t.equal((await send('k1000')).status, 409);
});
