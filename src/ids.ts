/** Identifier generation: ULIDs for every object (clients read timestamps out of them), UUIDs for events. */
import { randomFillSync, randomInt, randomUUID } from 'node:crypto';
import { nanoid } from 'nanoid';
import { monotonicFactory, decodeTime, isValid, ulid } from 'ulid';

// The library's own generator asks the system for one random byte per character (16 calls per id, about
// 0.1 ms under load); the same cryptographic bytes are drawn from a pool refilled 4 KiB at a time.
const pool = Buffer.alloc(4096);
let poolAt = pool.length;
function pooledRandom(): number {
  if (poolAt >= pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return pool[poolAt++]! / 256;
}

const next = monotonicFactory(pooledRandom);

/** Length of a file id (Stoat's autumn: a 42-character nanoid). */
export const FILE_ID_LENGTH = 42;

/**
 * A new file id, as Stoat's autumn makes them: 42 characters of nanoid's URL-safe alphabet (`[A-Za-z0-9_-]`,
 * ~252 random bits), so no upload's id can be guessed from another's (monotonic ULIDs made in the same
 * millisecond differ by one). An `emojis` upload gets a ULID instead, since its id becomes the emoji's id and
 * clients recognise custom emoji (`:<id>:`) by the ULID form — but a fresh random one (80 random bits), never
 * from the monotonic factory.
 */
export function newFileId(tag: string): string {
  if (tag === 'emojis') return ulid(undefined, pooledRandom);
  return nanoid(FILE_ID_LENGTH);
}

/** A new ULID (monotonic within this process). */
export function newId(now?: number): string {
  return next(now);
}

/** A new UUID for an event id. */
export function newEventId(): string {
  return randomUUID();
}

/** True for a 26-character Crockford base32 ULID. */
export function isUlid(s: string): boolean {
  return s.length === 26 && isValid(s);
}

/** Milliseconds since the epoch encoded in a ULID. */
export function ulidTime(id: string): number {
  return decodeTime(id);
}

/** Revolt's invite alphabet: 0-9, A-Z, a-z without I, L, O, U, i, l, o, u (54 characters). */
export const INVITE_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghjkmnpqrstvwxyz';

/** A new invite code: 8 characters drawn uniformly from `INVITE_ALPHABET` (like Revolt's `nanoid(8)`). */
export function newInviteCode(): string {
  let code = '';
  for (let i = 0; i < 8; i++) code += INVITE_ALPHABET[randomInt(INVITE_ALPHABET.length)];
  return code;
}

/** True for a ULID in its canonical form (upper-case Crockford base32, first character 0–7): ids compared as strings. */
export function isCanonicalUlid(s: string): boolean {
  return /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/.test(s);
}
