/**
 * Delivery to phones, as Stoat's pushd does it: FCM HTTP v1 (`POST <origin>/v1/projects/<id>/messages:send`
 * with an OAuth 2.0 access token got from the service account's JWT grant, RFC 7523) and APNs (HTTP/2 to
 * `/3/device/<token>` with a provider token, an ES256 JWT from the `.p8` key). Tokens are cached and renewed
 * before they expire (the access token 5 minutes before its `expires_in`, the provider token after 50 minutes:
 * Apple refuses one older than an hour). A send ends as `sent`, `gone` (the device is unregistered: the
 * subscription is removed), `retry` (throttled, a server error, a network error, or a refused token renewed)
 * or `refused` (anything else: given up).
 */
import { sign, type KeyObject } from 'node:crypto';
import http2 from 'node:http2';
import type { PushConfig } from '../../src/config.ts';
import type { FcmMessage } from '../../src/push/mobile.ts';

/** How a delivery to a phone ended. */
export type MobileOutcome = { result: 'sent' | 'gone' | 'retry' | 'refused'; status: number; reason?: string };

/** A clock in milliseconds (tests inject one). */
export type Clock = () => number;

/** Seconds an FCM call notification lives (Stoat's default `call_ring_duration`). */
export const CALL_RING_SECONDS = 30;

/** The OAuth scope FCM sends need. */
export const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';

/** How long before its expiry an access token is renewed. */
const ACCESS_TOKEN_MARGIN_MS = 5 * 60_000;
/** How long a provider token is used (Apple: at most an hour, and not renewed more than once in 20 minutes). */
export const PROVIDER_TOKEN_REUSE_MS = 50 * 60_000;

/** A compact JWS: base64url(header).base64url(claims).signature. */
export function signJwt(header: Record<string, unknown>, claims: Record<string, unknown>, key: KeyObject, alg: 'RS256' | 'ES256'): string {
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  // ES256 signatures are the raw r||s pair (RFC 7518 §3.4), not DER.
  const sig = alg === 'ES256' ? sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }) : sign('sha256', Buffer.from(input), key);
  return `${input}.${sig.toString('base64url')}`;
}

/** Firebase Cloud Messaging (HTTP v1) for one service account. */
export class FcmClient {
  private token: { value: string; renewAt: number } | undefined;
  private pending: Promise<string> | undefined;

  constructor(
    private readonly cfg: NonNullable<PushConfig['fcm']>,
    private readonly timeoutMs: number,
    private readonly now: Clock = Date.now,
  ) {}

  /** The cached access token, or a new one from the JWT grant (one grant at a time). */
  async accessToken(): Promise<string> {
    if (this.token && this.now() < this.token.renewAt) return this.token.value;
    this.pending ??= this.grant().finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async grant(): Promise<string> {
    const { account } = this.cfg;
    const iat = Math.floor(this.now() / 1000);
    const assertion = signJwt(
      { alg: 'RS256', typ: 'JWT', ...(account.privateKeyId ? { kid: account.privateKeyId } : {}) },
      { iss: account.clientEmail, scope: FCM_SCOPE, aud: account.tokenUri, iat, exp: iat + 3600 },
      account.privateKey,
      'RS256',
    );
    const res = await fetch(account.tokenUri, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const body = (await res.json().catch(() => ({}))) as { access_token?: unknown; expires_in?: unknown };
    if (!res.ok || typeof body.access_token !== 'string') throw new Error(`FCM token endpoint answered ${res.status}`);
    const lifetimeMs = (typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : 3600) * 1000;
    this.token = { value: body.access_token, renewAt: this.now() + Math.max(0, lifetimeMs - ACCESS_TOKEN_MARGIN_MS) };
    return body.access_token;
  }

  /** Sends one message to one registration token. */
  async send(registrationToken: string, message: FcmMessage): Promise<MobileOutcome> {
    const access = await this.accessToken();
    const url = `${this.cfg.origin}/v1/projects/${encodeURIComponent(this.cfg.account.projectId)}/messages:send`;
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${access}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: { token: registrationToken, ...message } }),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const body = (await res.json().catch(() => ({}))) as { error?: { status?: string; details?: Array<{ errorCode?: string }> } };
    const code = body.error?.details?.find((d) => typeof d.errorCode === 'string')?.errorCode ?? body.error?.status;
    if (res.ok) return { result: 'sent', status: res.status };
    if (res.status === 404 || code === 'UNREGISTERED') return { result: 'gone', status: res.status, ...(code ? { reason: code } : {}) };
    if (res.status === 401) {
      // The access token was refused (revoked or expired early): the next attempt gets a new one.
      this.token = undefined;
      return { result: 'retry', status: 401 };
    }
    if (res.status === 429 || res.status >= 500) return { result: 'retry', status: res.status };
    return { result: 'refused', status: res.status, ...(code ? { reason: code } : {}) };
  }
}

/** Apple Push Notification service over HTTP/2, with token-based authentication. */
export class ApnsClient {
  private token: { value: string; issuedAt: number } | undefined;
  private session: http2.ClientHttp2Session | undefined;

  constructor(
    private readonly cfg: NonNullable<PushConfig['apns']>,
    private readonly timeoutMs: number,
    /** TLS options of the connection (tests: the CA of a loopback endpoint). */
    private readonly tls: { ca?: string | Buffer | Array<string | Buffer> } = {},
    private readonly now: Clock = Date.now,
  ) {}

  /** The provider token: reused for 50 minutes, then signed again. */
  providerToken(): string {
    const now = this.now();
    if (this.token && now - this.token.issuedAt < PROVIDER_TOKEN_REUSE_MS) return this.token.value;
    const value = signJwt({ alg: 'ES256', kid: this.cfg.keyId }, { iss: this.cfg.teamId, iat: Math.floor(now / 1000) }, this.cfg.key, 'ES256');
    this.token = { value, issuedAt: now };
    return value;
  }

  private connect(): http2.ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const session = http2.connect(this.cfg.origin, this.tls.ca ? { ca: this.tls.ca } : {});
    session.on('error', () => {});
    session.on('close', () => {
      if (this.session === session) this.session = undefined;
    });
    // An idle connection is let go (Apple closes idle ones too); a new send connects again.
    session.setTimeout(60_000, () => session.close());
    session.unref();
    this.session = session;
    return session;
  }

  /** Sends one payload to one device token (`apns-push-type: alert`, priority 10). */
  async send(deviceToken: string, payload: Record<string, unknown>): Promise<MobileOutcome> {
    const session = this.connect();
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = session.request({
        ':method': 'POST',
        ':path': `/3/device/${encodeURIComponent(deviceToken)}`,
        authorization: `bearer ${this.providerToken()}`,
        'apns-topic': this.cfg.topic,
        'apns-push-type': 'alert',
        'apns-priority': '10',
        'content-type': 'application/json',
      });
      req.setTimeout(this.timeoutMs, () => req.close(http2.constants.NGHTTP2_CANCEL));
      let status = 0;
      const chunks: Buffer[] = [];
      req.on('response', (h) => (status = Number(h[':status'] ?? 0)));
      req.on('data', (c: Buffer) => {
        if (chunks.length < 64) chunks.push(c);
      });
      req.on('end', () => (status ? resolve({ status, body: Buffer.concat(chunks).toString('utf8') }) : reject(new Error('APNs closed the stream without an answer'))));
      req.on('error', reject);
      req.end(JSON.stringify(payload));
    });
    let reason: string | undefined;
    try {
      const r = (JSON.parse(body) as { reason?: unknown }).reason;
      if (typeof r === 'string') reason = r;
    } catch {
      reason = undefined;
    }
    const r = reason ? { reason } : {};
    if (status === 200) return { result: 'sent', status };
    if (status === 410 || reason === 'Unregistered' || reason === 'BadDeviceToken') return { result: 'gone', status, ...r };
    if (status === 403 && (reason === 'ExpiredProviderToken' || reason === 'InvalidProviderToken')) {
      this.token = undefined;
      return { result: 'retry', status, ...r };
    }
    if (status === 429 || status >= 500) return { result: 'retry', status, ...r };
    return { result: 'refused', status, ...r };
  }

  /** Closes the connection. */
  close(): void {
    this.session?.close();
    this.session = undefined;
  }
}
