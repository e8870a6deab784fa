/**
 * Secrets: passwords are hashed with scrypt (salted, parameters stored with the hash), session tokens are
 * 32 random bytes handed out once and stored only as their SHA-256 (DESIGN §3, §4 "security").
 */
import { createHash, createHmac, hkdfSync, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const N = 16384;
const R = 8;
const P = 1;
const KEYLEN = 32;

function scryptAsync(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEYLEN, { N: n, r, p, maxmem: 64 * 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** Hashes a password: `scrypt$N$r$p$salt$hash` (base64url parts). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** Counts scrypt password checks (read by tests: a login for an unknown email must hash too). */
export const passwordChecks = { count: 0 };

/** Checks a password against a stored hash in constant time. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [alg, n, r, p, salt, hash] = stored.split('$');
  if (alg !== 'scrypt' || !salt || !hash) {
    // An erased or malformed hash still costs one hashing, so its answer takes as long as any other.
    await verifyPassword(password, await dummyPasswordHash());
    return false;
  }
  passwordChecks.count++;
  const expected = Buffer.from(hash, 'base64url');
  const key = await scryptAsync(password, Buffer.from(salt, 'base64url'), Number(n), Number(r), Number(p));
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A new session token: 32 random bytes, base64url (43 characters). */
export function newSessionToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The SHA-256 of a token, hex; the only form a token is stored in. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Constant-time comparison of two hex digests. */
export function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** SHA-256 of a normalised email (the name of its uniqueness stream). */
export function emailDigest(email: string): string {
  return createHash('sha256').update(email).digest('hex');
}

/**
 * Keyed digest of a normalised email: HMAC-SHA256 under a service key. The `email-<digest>` stream name stays
 * in the log after its account is deleted; a plain SHA-256 there would let anyone holding a copy of the log
 * confirm a guessed address (emails are guessable), so the digest is keyed and the key lives outside the log.
 */
export function emailKeyOf(lookupKey: Buffer, email: string): string {
  return createHmac('sha256', lookupKey).update(email).digest('hex');
}

/** The keys derived from the master secret (SECRETS_KEY, or the generated one in the key store). */
export interface ServiceSecrets {
  /** Encrypts TOTP secrets, recovery codes and invite codes at rest. */
  totpKey: Buffer;
  /** Keys the email digests (`emailKeyOf`). */
  emailLookupKey: Buffer;
  /** Encrypts bot and webhook tokens at rest (in the log and the read models). */
  tokenKey: Buffer;
}

/** Derives the service keys from the master secret (HKDF-SHA256, one label per purpose). */
export function deriveSecrets(master: Buffer): ServiceSecrets {
  const derive = (label: string) => Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), `stoatish:${label}`, 32));
  return { totpKey: derive('secrets-at-rest'), emailLookupKey: derive('email-lookup'), tokenKey: derive('tokens-at-rest') };
}

/**
 * A token for a mail link or an MFA ticket: `<userId>.<32 random bytes>`; the user id part says whose
 * account to load, the random part is the secret (stored only as its SHA-256 and compared in constant time).
 */
export function newAccountToken(userId: string): string {
  return `${userId}.${randomBytes(32).toString('base64url')}`;
}

/** The user id of an account token, or null when it is not one (checked before any lookup). */
export function tokenUserId(token: string): string | null {
  const m = /^([0-9A-HJKMNP-TV-Z]{26})\.[A-Za-z0-9_-]{43}$/.exec(token);
  return m ? m[1]! : null;
}

/** A password hash of a random password, verified against when no account matches (same work either way). */
let dummyHash: Promise<string> | undefined;
export function dummyPasswordHash(): Promise<string> {
  return (dummyHash ??= hashPassword(randomBytes(18).toString('base64url')));
}
