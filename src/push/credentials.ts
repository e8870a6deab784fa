/**
 * The mobile push credentials an operator configures: Firebase's service-account JSON (FCM HTTP v1) and
 * Apple's `.p8` provider key (APNs token auth). Each variable holds the value itself or the path of a file
 * that does; both are checked at start (a key that cannot sign fails there, not at the first push).
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** The fields of a Google service account that the OAuth 2.0 JWT grant needs. */
export interface ServiceAccount {
  projectId: string;
  clientEmail: string;
  /** The RSA private key (PKCS#8 PEM) the grant's assertion is signed with (RS256). */
  privateKey: KeyObject;
  /** The key's id, sent as the assertion's `kid`. */
  privateKeyId: string | undefined;
  /** Where the assertion is exchanged for an access token. */
  tokenUri: string;
}

/** An APNs provider key (`.p8`, an EC P-256 key in PKCS#8 PEM). */
export type ApnsKey = KeyObject;

/** The value itself when it looks like one (`{…}` JSON, `-----BEGIN` PEM), else the contents of the file it names. */
function inlineOrFile(value: string, looksInline: (v: string) => boolean): string {
  const v = value.trim();
  if (looksInline(v)) return v;
  try {
    return readFileSync(v, 'utf8');
  } catch {
    throw new Error('is neither the value itself nor a readable file');
  }
}

/** Parses FCM_SERVICE_ACCOUNT (the JSON or a path to it); throws a line saying what is wrong (never the key). */
export function parseServiceAccount(value: string): ServiceAccount {
  let json: unknown;
  try {
    json = JSON.parse(inlineOrFile(value, (v) => v.startsWith('{')));
  } catch (err) {
    throw new Error(err instanceof SyntaxError ? 'is not valid JSON' : (err as Error).message);
  }
  const o = (json && typeof json === 'object' ? json : {}) as Record<string, unknown>;
  for (const k of ['project_id', 'client_email', 'private_key', 'token_uri'] as const) {
    if (typeof o[k] !== 'string' || o[k] === '') throw new Error(`lacks "${k}"`);
  }
  if (!/^https?:\/\//.test(o.token_uri as string)) throw new Error('"token_uri" is not an http(s) URL');
  if (!/^[a-z0-9-]{1,64}$/.test(o.project_id as string)) throw new Error('"project_id" is not a project id');
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(o.private_key as string);
  } catch {
    throw new Error('"private_key" is not a PEM private key');
  }
  if (privateKey.asymmetricKeyType !== 'rsa') throw new Error('"private_key" is not an RSA key');
  return {
    projectId: o.project_id as string,
    clientEmail: o.client_email as string,
    privateKey,
    privateKeyId: typeof o.private_key_id === 'string' ? o.private_key_id : undefined,
    tokenUri: o.token_uri as string,
  };
}

/** Parses APNS_KEY (the `.p8` PEM or a path to it): must be a P-256 key (ES256). */
export function parseApnsKey(value: string): ApnsKey {
  let key: KeyObject;
  try {
    key = createPrivateKey(inlineOrFile(value, (v) => v.startsWith('-----BEGIN')));
  } catch (err) {
    throw new Error((err as Error).message.startsWith('is neither') ? (err as Error).message : 'is not a PEM private key');
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') throw new Error('is not a P-256 (ES256) key');
  return key;
}
