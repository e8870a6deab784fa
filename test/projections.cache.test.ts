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

t.test('a key read for every new key (the channel of each message of a rebuild) stays linear, and stays cached', async (t) => {
  // With an exact LRU that moved an entry to the end on every read, 3M rounds took minutes (about 67 µs a round
  // on the development machine, past this file's timeout): each move left a hole in V8's Map that every
  // eviction walked again. With second chance they take a second or two.
  const c = new ValueCache(20_000);
  c.set('channel:C', { hot: true });
  for (let i = 0; i < 3_000_000; i++) {
    c.set(`channel:C:history\u0000${i}`, i);
    c.get('channel:C');
  }
  t.same(c.get('channel:C'), { hot: true }, 'the key read all along was never evicted');
  t.equal(c.get('channel:C:history\u00002999999'), 2999999);
  t.equal(c.get('channel:C:history\u00000'), undefined);
});

t.test('an entry written again is updated in place and counts as used', async (t) => {
  const c = new ValueCache(10);
  for (let i = 0; i < 10; i++) c.set(`k${i}`, i);
  c.set('k0', 'again');
  c.set('k10', 10); // evicts: k0 is spared (used), k1 goes first
  t.equal(c.get('k0'), 'again');
  t.equal(c.get('k1'), undefined);
  t.equal(c.get('k10'), 10, 'the entry being added is never the one evicted');
});
