/**
 * Idempotency keys of message send (spec "Idempotency rules for message send", DESIGN §4 "idempotency",
 * reference §6): a process-local LRU of at most 1000 keys, no expiry, scoped per user so that one user cannot
 * block another's key. Pure and synchronous; the route reserves a key on arrival, answers 409 DuplicateNonce
 * when it is already stored, and releases it when the send appended nothing.
 */
import { AppError } from '../errors.ts';

/** Keys held by default (Revolt's `LruCache` of 1000). */
export const IDEMPOTENCY_CAPACITY = 1000;

/** Longest accepted key, in Unicode code points. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 64;

/** LRU set of (userId, idempotency key); O(1) per operation (a Map kept in recency order). */
export class IdempotencyStore {
  private readonly capacity: number;
  private readonly keys = new Map<string, true>();

  constructor(capacity: number = IDEMPOTENCY_CAPACITY) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('capacity must be a positive integer');
    this.capacity = capacity;
  }

  /**
   * Reserves the key as most recently used and returns true; returns false (409 DuplicateNonce) when it is
   * already stored, marking it most recently used as Revolt's LRU lookup does.
   */
  reserve(userId: string, key: string): boolean {
    const k = storeKey(userId, key);
    if (this.keys.has(k)) {
      this.keys.delete(k);
      this.keys.set(k, true);
      return false;
    }
    this.keys.set(k, true);
    if (this.keys.size > this.capacity) {
      const oldest = this.keys.keys().next();
      if (oldest.done !== true) this.keys.delete(oldest.value);
    }
    return true;
  }

  /** Drops a reservation whose send appended nothing, so the same key can be retried; true when it was held. */
  release(userId: string, key: string): boolean {
    return this.keys.delete(storeKey(userId, key));
  }

  /** Whether the key is stored for this user (does not change its recency). */
  has(userId: string, key: string): boolean {
    return this.keys.has(storeKey(userId, key));
  }

  /** Number of keys stored. */
  size(): number {
    return this.keys.size;
  }
}

/**
 * The `Idempotency-Key` header value, or undefined without one; an empty key or one longer than 64 code
 * points is 400 FailedValidation.
 */
export function validateKey(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (raw.length === 0) throw new AppError({ type: 'FailedValidation', error: 'idempotency key is empty' });
  if (codePointsExceed(raw, MAX_IDEMPOTENCY_KEY_LENGTH)) {
    throw new AppError({ type: 'FailedValidation', error: 'idempotency key too long' });
  }
  return raw;
}

/** Whether `s` has more than `max` code points, reading at most 2 × max UTF-16 units. */
function codePointsExceed(s: string, max: number): boolean {
  if (s.length <= max) return false;
  // Every code point is one or two UTF-16 units.
  if (s.length > 2 * max) return true;
  let count = 0;
  for (const _ of s) if (++count > max) return true;
  return false;
}

/** Injective key: the user id is length-prefixed. */
function storeKey(userId: string, key: string): string {
  return `${userId.length}:${userId}${key}`;
}
