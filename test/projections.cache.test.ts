// The projector's partition cache (projections/tx.ts ValueCache): bounded, least recently used first, and
// evicting in bulk (a long run of new keys — a channel's messages — must not degrade).
import t from 'tap';
import { ValueCache } from '../projections/tx.ts';

t.test('bounded, least recently used evicted first', async (t) => {
  const c = new ValueCache(100);
  for (let i = 0; i < 100; i++) c.set(`k${i}`, i);
  t.equal(c.get('k0'), 0, 'full, nothing evicted');
  c.set('k100', 100);
  t.equal(c.get('k0'), 0, 'k0 was used recently: kept');
  t.equal(c.get('k1'), undefined, 'the least recently used went first');
  t.equal(c.get('k100'), 100);
  for (let i = 101; i < 10_000; i++) c.set(`k${i}`, i);
  let held = 0;
  for (let i = 0; i < 10_000; i++) if (c.get(`k${i}`) !== undefined) held++;
  t.ok(held <= 100 && held >= 90, `never more than the capacity (${held} held)`);
  t.equal(c.get('k9999'), 9999, 'the newest is there');
  t.equal(c.get('k5000'), undefined, 'an old one is not');
  c.set('null', null);
  t.equal(c.get('null'), null, 'null is cached as "absent"');
});

t.test('a million new keys through a full cache stay linear', async (t) => {
  // With one-by-one eviction of the first entry this took minutes; in bulk it takes well under one.
  const c = new ValueCache(20_000);
  for (let i = 0; i < 1_000_000; i++) c.set(`channel:C:messages\u0000${i}`, i);
  t.equal(c.get('channel:C:messages\u0000999999'), 999999);
});
