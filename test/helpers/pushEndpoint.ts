/**
 * A Web Push service for tests, on loopback: each subscription it hands out has a path of its own and the
 * keys a browser would make (an ECDH P-256 pair and a 16-byte auth secret). Every request it receives is
 * decrypted as a browser does (RFC 8291 aes128gcm: HKDF over the ECDH secret and the auth secret, then
 * AES-128-GCM) and its VAPID header checked (RFC 8292: an ES256 JWT signed by the key in `k=`).
 */
import { createECDH, createDecipheriv, createPublicKey, hkdfSync, randomBytes, verify } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Teardownable } from './service.ts';

/** A subscription as a browser would hand it to `POST /push/subscribe`, with the private half kept here. */
export interface TestSubscription {
  endpoint: string;
  p256dh: string;
  auth: string;
  /** The path of the endpoint on the test server (not enumerable: not sent with the body). */
  path: string;
}

/** One push request as the endpoint received and decrypted it. */
export interface ReceivedPush {
  path: string;
  /** The decrypted payload, parsed as JSON. */
  payload: any;
  headers: http.IncomingHttpHeaders;
  /** The VAPID public key (`k=`) and the JWT's claims, verified with that key. */
  vapid: { k: string; claims: { aud: string; exp: number; sub: string } };
  /** The status the endpoint answered. */
  status: number;
}

/** A running test push service. */
export interface PushEndpoint {
  url: string;
  /** A fresh subscription (new keys, new path). */
  subscribe(): TestSubscription;
  /** Everything received and decrypted so far, in order. */
  received: ReceivedPush[];
  /** Requests that could not be decrypted or verified (must stay empty). */
  errors: string[];
  /** Answers requests to `path` with `status` (a queue: one status per request, then 201 again). */
  answer(path: string, ...statuses: number[]): void;
  /** Holds requests to `path` unanswered until `release()` (to keep sends in delivery). */
  hold(path: string): { release(): void };
  close(): Promise<void>;
}

/** Decrypts an aes128gcm body (RFC 8188 framing, RFC 8291 keys) for the holder of `ecdh` and `authSecret`. */
export function decryptAes128gcm(body: Buffer, ecdh: ReturnType<typeof createECDH>, authSecret: Buffer): Buffer {
  const salt = body.subarray(0, 16);
  const rs = body.readUInt32BE(16);
  const idlen = body[20]!;
  const senderPublic = body.subarray(21, 21 + idlen);
  const records = body.subarray(21 + idlen);
  if (idlen !== 65) throw new Error(`keyid of ${idlen} bytes (a P-256 point has 65)`);
  if (records.length > rs) throw new Error('more than one record');
  const shared = ecdh.computeSecret(senderPublic);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), ecdh.getPublicKey(), senderPublic]);
  const ikm = Buffer.from(hkdfSync('sha256', shared, authSecret, keyInfo, 32));
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(records.subarray(records.length - 16));
  const plain = Buffer.concat([decipher.update(records.subarray(0, records.length - 16)), decipher.final()]);
  // Padding: the last record ends with 0x02 then zeros.
  let end = plain.length - 1;
  while (end >= 0 && plain[end] === 0) end--;
  if (plain[end] !== 2) throw new Error('missing the last-record delimiter');
  return plain.subarray(0, end);
}

/** Verifies `Authorization: vapid t=<jwt>, k=<key>` and returns the key and claims. */
export function verifyVapid(header: string | undefined): ReceivedPush['vapid'] {
  const m = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(header ?? '');
  if (!m) throw new Error(`no VAPID authorization: ${header}`);
  const [, jwt, k] = m as unknown as [string, string, string];
  const [h, c, sig] = jwt.split('.') as [string, string, string];
  const point = Buffer.from(k, 'base64url');
  const key = createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url') }, format: 'jwk' });
  const ok = verify('sha256', Buffer.from(`${h}.${c}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(sig, 'base64url'));
  if (!ok) throw new Error('VAPID JWT signature does not verify');
  if (JSON.parse(Buffer.from(h, 'base64url').toString()).alg !== 'ES256') throw new Error('VAPID JWT is not ES256');
  return { k, claims: JSON.parse(Buffer.from(c, 'base64url').toString()) };
}

/** Starts the endpoint on 127.0.0.1 (closed at teardown). */
export async function startPushEndpoint(t: Teardownable): Promise<PushEndpoint> {
  const keys = new Map<string, { ecdh: ReturnType<typeof createECDH>; auth: Buffer }>();
  const statuses = new Map<string, number[]>();
  const held = new Map<string, Array<() => void>>();
  const received: ReceivedPush[] = [];
  const errors: string[] = [];
  let n = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      const finish = () => {
        const status = statuses.get(path)?.shift() ?? 201;
        const k = keys.get(path);
        try {
          if (!k) throw new Error(`unknown subscription ${path}`);
          if (req.headers['content-encoding'] !== 'aes128gcm') throw new Error(`content-encoding ${req.headers['content-encoding']}`);
          const payload = JSON.parse(decryptAes128gcm(Buffer.concat(chunks), k.ecdh, k.auth).toString('utf8'));
          received.push({ path, payload, headers: req.headers, vapid: verifyVapid(req.headers.authorization), status });
        } catch (err) {
          errors.push(`${path}: ${(err as Error).message}`);
        }
        res.writeHead(status).end();
      };
      const waiting = held.get(path);
      if (waiting) waiting.push(finish);
      else finish();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(() => close());
  const close = () =>
    new Promise<void>((r) => {
      for (const w of held.values()) for (const f of w) f();
      held.clear();
      server.closeAllConnections();
      server.close(() => r());
    });
  return {
    url,
    received,
    errors,
    subscribe() {
      const ecdh = createECDH('prime256v1');
      ecdh.generateKeys();
      const auth = randomBytes(16);
      const path = `/push/${++n}-${randomBytes(4).toString('hex')}`;
      keys.set(path, { ecdh, auth });
      const sub = { endpoint: `${url}${path}`, p256dh: ecdh.getPublicKey().toString('base64url'), auth: auth.toString('base64url') } as TestSubscription;
      // Not enumerable: the object is the body of `POST /push/subscribe` as it is.
      Object.defineProperty(sub, 'path', { value: path, enumerable: false });
      return sub;
    },
    answer(path, ...s) {
      statuses.set(path, [...(statuses.get(path) ?? []), ...s]);
    },
    hold(path) {
      held.set(path, []);
      return {
        release() {
          const w = held.get(path) ?? [];
          held.delete(path);
          for (const f of w) f();
        },
      };
    },
    close,
  };
}
