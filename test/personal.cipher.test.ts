/**
 * Sealing's IVs (src/personal/cipher.ts): they come from a pool of the CSPRNG (bench `seal-iv`), which must not
 * change what a seal is: every seal gets an IV of its own — across pool refills, never repeated — an IV handed
 * out is never overwritten by a refill, and every sealed value opens to what was sealed, under its subject and
 * field only.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { nextIv, open, seal } from '../src/personal/cipher.ts';

t.test('every seal has an IV of its own, across pool refills', async (t) => {
  const key = randomBytes(32);
  const n = 5_000; // ~10 refills of a 512-IV pool
  const ivs = new Set<string>();
  for (let i = 0; i < n; i++) {
    const value = { content: 'the same words', i: i % 2 };
    const sealed = seal(key, 'content:c:000000000000000:86400000', 'message.content', value);
    const raw = Buffer.from(sealed.c, 'base64url');
    ivs.add(raw.subarray(0, 12).toString('hex'));
    if (i % 97 === 0) t.same(open(key, 'content:c:000000000000000:86400000', 'message.content', sealed), value, `seal ${i} opens`);
  }
  t.equal(ivs.size, n, `${n} seals, ${n} distinct IVs`);
  const once = seal(key, 's', 'f', 'x');
  t.equal(open(key, 's', 'other field', once), undefined, 'bound to its field');
  t.equal(open(key, 'other subject', 'f', once), undefined, 'bound to its subject');
  t.equal(open(randomBytes(32), 's', 'f', once), undefined, 'bound to its key');
});

t.test('an IV handed out is 12 bytes and is not changed by later refills', async (t) => {
  const first = nextIv();
  const copy = Buffer.from(first);
  t.equal(first.length, 12);
  const later = new Set<string>();
  for (let i = 0; i < 2_000; i++) later.add(nextIv().toString('hex'));
  t.same(first, copy, 'the first IV still holds its bytes after four refills');
  t.equal(later.size, 2_000, 'no IV repeated');
  t.notOk(later.has(copy.toString('hex')), 'nor the first one');
});
