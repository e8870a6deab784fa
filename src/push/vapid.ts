/**
 * The VAPID key pair that signs Web Push requests (RFC 8292): from VAPID_PUBLIC_KEY / VAPID_PRIVATE_KEY, or
 * generated once and kept in the key store (`KEYSTORE_URL`, beside the other service secrets), so
 * every process and every restart sign with the same key and browsers' subscriptions stay valid. The
 * private key is never logged.
 */
import type { Config } from '../config.ts';
import { vapidPublicOf } from '../config.ts';
import type { KeyStore } from '../personal/keyStore.ts';

/** The keys and subject web-push signs with. */
export interface VapidDetails {
  /** base64url of the uncompressed P-256 point (what `GET /` advertises as `vapid`). */
  publicKey: string;
  /** base64url of the 32-byte scalar. */
  privateKey: string;
  /** mailto: or https: contact of this service. */
  subject: string;
}

/** The service secret the generated private key is kept under. */
const SECRET_NAME = 'vapid-private-key';

/** The configured pair, or the generated one from the key store. */
export async function resolveVapid(config: Config, keys: KeyStore): Promise<VapidDetails> {
  if (config.push.vapid) return { ...config.push.vapid, subject: config.push.subject };
  const secret = await keys.serviceSecret(SECRET_NAME, 32);
  // 32 random bytes are a valid P-256 scalar but with probability ~2^-32; such a key fails loudly at start.
  const publicKey = vapidPublicOf(secret);
  return { publicKey, privateKey: secret.toString('base64url'), subject: config.push.subject };
}
