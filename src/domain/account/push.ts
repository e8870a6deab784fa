/**
 * Web Push subscriptions of sessions (Stoat's `POST /push/subscribe` and `/push/unsubscribe`): one per
 * session, kept on the session in `account-<userId>`, so a logout or revocation ends it with the session.
 * Pure decisions over the account state; the shape of the keys is checked by `checkPushKeys`.
 */
import { createECDH } from 'node:crypto';
import type { DomainEvent } from '../events.ts';
import { AppError } from '../../errors.ts';
import { own } from '../../own.ts';
import type { AccountState, PushSubscription } from './state.ts';

/** Bounds of a subscription's fields (characters); `auth` is a phone's device token for "fcm" and "apn". */
export const PUSH_LIMITS = { endpoint: 2048, p256dh: 128, auth: 4096 } as const;

/** A phone's device token (FCM registration token or APNs device token): printable token characters only. */
export function checkDeviceToken(token: string): void {
  if (!/^[A-Za-z0-9_:.-]{1,4096}$/.test(token)) throw new AppError({ type: 'FailedValidation', error: 'auth: must be the device token (FCM registration token or APNs device token)' });
}

/** Decodes base64url (padding allowed); null when it is not base64url. */
export function base64url(value: string): Buffer | null {
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(value)) return null;
  return Buffer.from(value.replace(/=+$/, ''), 'base64url');
}

/**
 * Checks the browser's keys as the encryption will use them: `p256dh` an uncompressed P-256 point on the
 * curve (65 bytes), `auth` a 16-byte secret. Throws 400 FailedValidation naming the field.
 */
export function checkPushKeys(sub: Pick<PushSubscription, 'p256dh' | 'auth'>): void {
  const key = base64url(sub.p256dh);
  let onCurve = false;
  if (key && key.length === 65 && key[0] === 4) {
    try {
      const probe = createECDH('prime256v1');
      probe.generateKeys();
      probe.computeSecret(key);
      onCurve = true;
    } catch {
      onCurve = false;
    }
  }
  if (!onCurve) throw new AppError({ type: 'FailedValidation', error: 'p256dh: must be an uncompressed P-256 public key (65 bytes, base64url)' });
  const auth = base64url(sub.auth);
  if (!auth || auth.length !== 16) throw new AppError({ type: 'FailedValidation', error: 'auth: must be a 16-byte secret (base64url)' });
}

/** Subscribes the session (replacing its subscription); nothing when the same subscription is already kept. */
export function decidePushSubscribe(state: AccountState, sessionId: string, sub: PushSubscription): DomainEvent[] {
  const session = own(state.sessions, sessionId);
  if (!session) throw new AppError({ type: 'InvalidSession' });
  const cur = session.subscription;
  if (cur && cur.endpoint === sub.endpoint && cur.p256dh === sub.p256dh && cur.auth === sub.auth) return [];
  return [{ type: 'PushSubscribed', data: { sessionId, endpoint: sub.endpoint, p256dh: sub.p256dh, auth: sub.auth } }];
}

/** Ends the session's subscription (nothing when it has none). */
export function decidePushUnsubscribe(state: AccountState, sessionId: string): DomainEvent[] {
  if (!own(state.sessions, sessionId)?.subscription) return [];
  return [{ type: 'PushUnsubscribed', data: { sessionId, reason: 'user' } }];
}

/** Ends a subscription the push service declared gone (404/410), unless the session moved to another endpoint since. */
export function decidePushGone(state: AccountState | null, sessionId: string, endpoint: string): DomainEvent[] {
  const cur = state ? own(state.sessions, sessionId)?.subscription : undefined;
  if (!cur || cur.endpoint !== endpoint) return [];
  return [{ type: 'PushUnsubscribed', data: { sessionId, reason: 'gone', endpoint } }];
}
