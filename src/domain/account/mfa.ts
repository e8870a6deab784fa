/**
 * Two-factor login (Stoat's authifier): TOTP (RFC 6238 through otpauth: SHA-1, 6 digits, 30 s, ±1 step)
 * and recovery codes, both kept encrypted under the configured key (`ServiceSecrets.totpKey`).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { decryptSecret, encryptSecret } from '../../personal/cipher.ts';
import type { AccountState } from './state.ts';

/** The MFA methods a client may answer with (Stoat's `MFAMethod`). */
export type MfaMethod = 'Password' | 'Recovery' | 'Totp';

/** How long an MFA ticket lives. */
export const TICKET_TTL_MS = 5 * 60_000;

/** Number of recovery codes generated at once (Stoat: 10). */
export const RECOVERY_CODES = 10;

/** True when two-factor login is on (TOTP enabled). */
export function mfaEnabled(state: AccountState): boolean {
  return state.totp?.status === 'Enabled';
}

/** Stoat's `get_methods`: TOTP (and Recovery while codes are left) when TOTP is on, else Password. */
export function allowedMethods(state: AccountState): MfaMethod[] {
  if (!mfaEnabled(state)) return ['Password'];
  return remainingRecovery(state) > 0 ? ['Totp', 'Recovery'] : ['Totp'];
}

/** A new TOTP secret (160 bits, base32 as authenticator apps take it). */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

/** Encrypts a TOTP secret for the log and the read model. */
export function sealTotpSecret(key: Buffer, secret: string): string {
  return encryptSecret(key, 'totp', secret);
}

/** The TOTP object of a stored (encrypted) secret; null when it does not decrypt. */
function totpOf(key: Buffer, stored: string): TOTP | null {
  const secret = decryptSecret(key, 'totp', stored);
  return secret ? new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }) : null;
}

/**
 * The RFC 6238 time-step (floor(unix seconds / 30)) whose code `code` is, among the current step and one either
 * side (clock drift); null when it is none of them, or when that step is not after `lastUsed`, the step of the
 * last code accepted for this secret: a code cannot be used twice, nor an older one after a newer.
 */
export function checkTotp(key: Buffer, stored: string, code: string, now: number, lastUsed?: number | null): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const totp = totpOf(key, stored);
  if (!totp) return null;
  // Every candidate is compared, in constant time (otpauth's own validate compares plain strings).
  const given = Buffer.from(code);
  const current = Math.floor(now / 30_000);
  let matched: number | null = null;
  for (const delta of [-1, 0, 1]) {
    const step = current + delta;
    const want = Buffer.from(totp.generate({ timestamp: step * 30_000 }));
    if (want.length === given.length && timingSafeEqual(want, given) && matched === null) matched = step;
  }
  if (matched === null || (lastUsed !== undefined && lastUsed !== null && matched <= lastUsed)) return null;
  return matched;
}

/** `count` new recovery codes, Stoat's shape `xxxxx-xxxxx` (lower-case letters and digits). */
export function newRecoveryCodes(count = RECOVERY_CODES): string[] {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const part = () => [...randomBytes(5)].map((b) => alphabet[b % 36]).join('');
  return Array.from({ length: count }, () => `${part()}-${part()}`);
}

/** Encrypts a recovery code list. */
export function sealRecoveryCodes(key: Buffer, codes: string[]): string {
  return encryptSecret(key, 'recovery', JSON.stringify(codes));
}

/** The codes still usable (decrypted), with their indexes. */
export function recoveryCodes(key: Buffer, state: AccountState): Array<{ index: number; code: string }> {
  if (!state.recovery) return [];
  const plain = decryptSecret(key, 'recovery', state.recovery.codes);
  if (!plain) return [];
  const used = new Set(state.recovery.used);
  return (JSON.parse(plain) as string[]).map((code, index) => ({ index, code })).filter((c) => !used.has(c.index));
}

/** Number of recovery codes left. */
export function remainingRecovery(state: AccountState): number {
  return state.recovery ? Math.max(0, RECOVERY_CODES - state.recovery.used.length) : 0;
}

/** Index of the matching unused recovery code (compared in constant time, every code checked), or null. */
export function matchRecoveryCode(key: Buffer, state: AccountState, given: string): number | null {
  const want = Buffer.from(given.trim().toLowerCase().padEnd(11).slice(0, 64));
  let found: number | null = null;
  for (const c of recoveryCodes(key, state)) {
    const have = Buffer.from(c.code.padEnd(11));
    if (have.length === want.length && timingSafeEqual(have, want) && found === null) found = c.index;
  }
  return found;
}
