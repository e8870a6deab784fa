import t from 'tap';
import { AppError } from '../src/errors.ts';
import { IDEMPOTENCY_CAPACITY, IdempotencyStore, validateKey } from '../src/idempotency/store.ts';

t.test('a stored key is refused until released', async (t) => {
  const s = new IdempotencyStore();
  t.equal(s.has('u1', 'k'), false);
  t.equal(s.reserve('u1', 'k'), true);
  t.equal(s.has('u1', 'k'), true);
  t.equal(s.reserve('u1', 'k'), false, 'a repeat is a duplicate');
  t.equal(s.size(), 1);
  t.equal(s.release('u1', 'k'), true);
  t.equal(s.has('u1', 'k'), false);
  t.equal(s.reserve('u1', 'k'), true, 'a released key can be retried');
  t.equal(s.reserve('u1', 'k'), false);
  t.equal(s.release('u1', 'missing'), false);
});

t.test('keys are scoped per user', async (t) => {
  const s = new IdempotencyStore();
  t.equal(s.reserve('u1', 'k'), true);
  t.equal(s.reserve('u2', 'k'), true, 'another user may use the same key');
  t.equal(s.reserve('u1', 'k'), false);
  t.equal(s.reserve('u2', 'k'), false);
  s.release('u2', 'k');
  t.equal(s.has('u1', 'k'), true, "releasing one user's key leaves the other's");
  // (user, key) pairs whose concatenations coincide are still distinct.
  t.equal(s.reserve('ab', 'c'), true);
  t.equal(s.reserve('a', 'bc'), true);
  t.equal(s.reserve('1:a', 'b'), true);
  t.equal(s.reserve('1', ':ab'), true);
});

t.test('1000 keys are kept; the 1001st evicts the least recently used', async (t) => {
  t.equal(IDEMPOTENCY_CAPACITY, 1000);
  const s = new IdempotencyStore();
  let accepted = 0;
  for (let i = 0; i < 1000; i++) if (s.reserve('u', `k${i}`)) accepted++;
  t.equal(accepted, 1000);
  t.equal(s.size(), 1000);
  let held = 0;
  for (let i = 0; i < 1000; i++) if (s.has('u', `k${i}`)) held++;
  t.equal(held, 1000, 'all 1000 are still held');
  t.equal(s.reserve('u', 'k1000'), true);
  t.equal(s.size(), 1000);
  t.equal(s.has('u', 'k0'), false, 'the oldest is dropped');
  t.equal(s.has('u', 'k1'), true);
  t.equal(s.has('u', 'k1000'), true);
  t.equal(s.reserve('u', 'k0'), true, 'a dropped key is accepted again');
  t.equal(s.has('u', 'k1'), false, 'which drops the next oldest');
});

t.test('a key touched by a duplicate survives eviction; has() does not touch', async (t) => {
  const s = new IdempotencyStore();
  for (let i = 0; i < 1000; i++) s.reserve('u', `k${i}`);
  t.equal(s.reserve('u', 'k0'), false, 'duplicate of the oldest');
  t.equal(s.has('u', 'k1'), true);
  s.reserve('u', 'k1000');
  t.equal(s.has('u', 'k0'), true, 'the touched key survives');
  t.equal(s.has('u', 'k1'), false, 'the least recently used is dropped instead');
  s.reserve('u', 'k1001');
  t.equal(s.has('u', 'k2'), false, 'has() did not make k2 recent');
  t.equal(s.size(), 1000);
});

t.test('eviction counts keys of all users together', async (t) => {
  const s = new IdempotencyStore(3);
  s.reserve('a', 'k');
  s.reserve('b', 'k');
  s.reserve('c', 'k');
  s.reserve('d', 'k');
  t.equal(s.size(), 3);
  t.equal(s.has('a', 'k'), false);
  t.equal(s.has('b', 'k'), true);
  t.throws(() => new IdempotencyStore(0), RangeError);
});

/** The type and status `fn` fails with, or undefined when it does not throw an AppError. */
function rejection(fn: () => unknown): { type: string; status: number } | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof AppError) return { type: e.body.type, status: e.status };
    throw e;
  }
  return undefined;
}
const FAILED_VALIDATION = { type: 'FailedValidation', status: 400 };

t.test('key length is counted in code points: 64 accepted, 65 refused', async (t) => {
  t.equal(validateKey(undefined), undefined, 'no header, no key');
  const ascii64 = 'a'.repeat(64);
  t.equal(validateKey(ascii64), ascii64);
  t.equal(validateKey('x'), 'x');
  t.same(rejection(() => validateKey('a'.repeat(65))), FAILED_VALIDATION, '65 ASCII');
  t.same(rejection(() => validateKey('')), FAILED_VALIDATION, 'empty');

  const emoji64 = '😀'.repeat(64);
  t.equal(emoji64.length, 128, '64 emoji are 128 UTF-16 units');
  t.equal(validateKey(emoji64), emoji64, '64 emoji accepted');
  t.same(rejection(() => validateKey('😀'.repeat(65))), FAILED_VALIDATION, '65 emoji');
  const mixed64 = '😀'.repeat(63) + 'a';
  t.equal(validateKey(mixed64), mixed64, '63 emoji + 1 ASCII accepted');
  t.same(rejection(() => validateKey('😀'.repeat(64) + 'a')), FAILED_VALIDATION, '64 emoji + 1 ASCII');
  t.same(rejection(() => validateKey('a'.repeat(64) + '😀')), FAILED_VALIDATION, '64 ASCII + 1 emoji');
  t.same(rejection(() => validateKey('é'.repeat(65))), FAILED_VALIDATION, '65 BMP non-ASCII');
  t.same(rejection(() => validateKey('a'.repeat(100_000))), FAILED_VALIDATION, 'very long');
});
