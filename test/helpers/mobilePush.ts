/**
 * Stand-ins for the mobile push services, on loopback, that check what the real ones check (per their public
 * docs): Google's OAuth 2.0 token endpoint (a JWT-bearer grant, RFC 7523, whose RS256 assertion must verify
 * with the service account's public key and carry its iss/scope/aud/iat/exp), FCM HTTP v1's messages:send (a
 * bearer token it issued, a data message whose values are all strings; 404 UNREGISTERED for a dead token), and
 * APNs (HTTP/2 over TLS with a certificate from a test CA made here with openssl; an ES256 provider token with
 * the key id and team id; apns-topic and apns-push-type; 410 Unregistered for a dead token).
 */
import { execFileSync } from 'node:child_process';
import { createPublicKey, generateKeyPairSync, verify, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { tempDir, type Teardownable } from './service.ts';

/** Decodes and verifies a compact JWS with `key`; returns header and claims, or throws. */
export function verifyJwt(jwt: string, key: KeyObject, alg: 'RS256' | 'ES256'): { header: any; claims: any } {
  const [h, c, s] = jwt.split('.') as [string, string, string];
  if (!h || !c || !s) throw new Error('not a compact JWS');
  const header = JSON.parse(Buffer.from(h, 'base64url').toString());
  if (header.alg !== alg) throw new Error(`alg ${header.alg}, not ${alg}`);
  const ok = verify('sha256', Buffer.from(`${h}.${c}`), alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' } : key, Buffer.from(s, 'base64url'));
  if (!ok) throw new Error('signature does not verify');
  return { header, claims: JSON.parse(Buffer.from(c, 'base64url').toString()) };
}

/** One grant the token endpoint honoured. */
export interface Grant {
  header: any;
  claims: any;
  accessToken: string;
}

/** One FCM send received. */
export interface FcmReceived {
  projectId: string;
  accessToken: string;
  message: { token: string; data: Record<string, string>; android?: any };
  status: number;
}

/** A running OAuth + FCM stand-in. */
export interface FakeFcm {
  origin: string;
  tokenUri: string;
  /** The service-account JSON pointing at this stand-in (FCM_SERVICE_ACCOUNT). */
  serviceAccount: string;
  grants: Grant[];
  received: FcmReceived[];
  errors: string[];
  /** Answers sends to `token` with these statuses in turn (then 200). */
  answer(token: string, ...statuses: number[]): void;
  /** Registration tokens that are unregistered (404 UNREGISTERED). */
  unregistered: Set<string>;
}

/** Starts the OAuth token endpoint and FCM endpoint (one loopback HTTP server). */
export async function startFakeFcm(t: Teardownable, opts: { expiresIn?: number } = {}): Promise<FakeFcm> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const grants: Grant[] = [];
  const received: FcmReceived[] = [];
  const errors: string[] = [];
  const statuses = new Map<string, number[]>();
  const unregistered = new Set<string>();
  const issued = new Set<string>();
  const projectId = 'stoatish-test';
  const clientEmail = 'push@stoatish-test.iam.gserviceaccount.com';
  let origin = '';
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      try {
        if (req.method === 'POST' && req.url === '/token') {
          if (!String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')) throw new Error('token request is not form-encoded');
          const form = new URLSearchParams(raw);
          if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return json(400, { error: 'unsupported_grant_type' });
          const { header, claims } = verifyJwt(form.get('assertion') ?? '', publicKey, 'RS256');
          if (claims.iss !== clientEmail || claims.aud !== `${origin}/token` || claims.scope !== 'https://www.googleapis.com/auth/firebase.messaging') throw new Error(`bad claims ${JSON.stringify(claims)}`);
          if (claims.exp - claims.iat !== 3600 || header.kid !== 'key-1') throw new Error(`bad lifetime or kid ${JSON.stringify({ header, claims })}`);
          const accessToken = `ya29.test-${grants.length + 1}`;
          issued.add(accessToken);
          grants.push({ header, claims, accessToken });
          return json(200, { access_token: accessToken, expires_in: opts.expiresIn ?? 3599, token_type: 'Bearer' });
        }
        const m = /^\/v1\/projects\/([^/]+)\/messages:send$/.exec(req.url ?? '');
        if (req.method !== 'POST' || !m) return json(404, { error: { code: 404, status: 'NOT_FOUND' } });
        const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
        if (!issued.has(bearer)) return json(401, { error: { code: 401, status: 'UNAUTHENTICATED' } });
        const body = JSON.parse(raw) as { message: FcmReceived['message'] };
        for (const [k, v] of Object.entries(body.message.data ?? {})) if (typeof v !== 'string') throw new Error(`data.${k} is not a string`);
        const token = body.message.token;
        const status = unregistered.has(token) ? 404 : (statuses.get(token)?.shift() ?? 200);
        received.push({ projectId: m[1]!, accessToken: bearer, message: body.message, status });
        if (status === 404) return json(404, { error: { code: 404, status: 'NOT_FOUND', details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'UNREGISTERED' }] } });
        if (status !== 200) return json(status, { error: { code: status, status: 'UNAVAILABLE' } });
        return json(200, { name: `projects/${m[1]}/messages/${received.length}` });
      } catch (err) {
        errors.push((err as Error).message);
        json(400, { error: { code: 400, status: 'INVALID_ARGUMENT' } });
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
  const serviceAccount = JSON.stringify({
    type: 'service_account',
    project_id: projectId,
    private_key_id: 'key-1',
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
    client_email: clientEmail,
    token_uri: `${origin}/token`,
  });
  return {
    origin,
    tokenUri: `${origin}/token`,
    serviceAccount,
    grants,
    received,
    errors,
    unregistered,
    answer(token, ...s) {
      statuses.set(token, [...(statuses.get(token) ?? []), ...s]);
    },
  };
}

/** One APNs request received. */
export interface ApnsReceived {
  deviceToken: string;
  headers: http2.IncomingHttpHeaders;
  jwt: { header: any; claims: any };
  payload: any;
  status: number;
}

/** A running APNs stand-in. */
export interface FakeApns {
  origin: string;
  /** The CA that signed its certificate (the client must trust it). */
  ca: string;
  /** The provider key (`.p8` PEM) it verifies tokens with, its key id and team id, and the topic it expects. */
  key: string;
  keyId: string;
  teamId: string;
  topic: string;
  received: ApnsReceived[];
  errors: string[];
  unregistered: Set<string>;
  answer(token: string, ...statuses: number[]): void;
}

/** Makes a CA and a certificate for 127.0.0.1 signed by it (openssl, in a temporary directory). */
export function makeTestCa(t: Teardownable): { ca: string; cert: string; key: string } {
  const dir = tempDir(t, 'apns-ca');
  const f = (n: string) => path.join(dir, n);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  ssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '2', '-subj', '/CN=Stoatish test CA');
  ssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=127.0.0.1');
  fs.writeFileSync(f('ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  ssl('x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('server.pem'), '-days', '2', '-extfile', f('ext.cnf'));
  return { ca: fs.readFileSync(f('ca.pem'), 'utf8'), cert: fs.readFileSync(f('server.pem'), 'utf8'), key: fs.readFileSync(f('server.key'), 'utf8') };
}

/** Starts the APNs stand-in (TLS HTTP/2 on 127.0.0.1). */
export async function startFakeApns(t: Teardownable): Promise<FakeApns> {
  const tls = makeTestCa(t);
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const keyId = 'ABC123DEFG';
  const teamId = 'TEAM123456';
  const topic = 'chat.stoatish.test';
  const received: ApnsReceived[] = [];
  const errors: string[] = [];
  const unregistered = new Set<string>();
  const statuses = new Map<string, number[]>();
  const server = http2.createSecureServer({ cert: tls.cert, key: tls.key, allowHTTP1: false });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  server.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const answer = (status: number, reason?: string) => {
        stream.respond({ ':status': status, 'content-type': 'application/json', 'apns-id': '00000000-0000-0000-0000-000000000001' });
        stream.end(reason ? JSON.stringify(reason === 'Unregistered' ? { reason, timestamp: Date.now() } : { reason }) : undefined);
      };
      try {
        const m = /^\/3\/device\/([0-9A-Za-z]+)$/.exec(String(headers[':path']));
        if (headers[':method'] !== 'POST' || !m) return answer(404, 'BadPath');
        const bearer = /^bearer (.+)$/.exec(String(headers.authorization ?? ''))?.[1];
        if (!bearer) return answer(403, 'MissingProviderToken');
        const jwt = verifyJwt(bearer, createPublicKey(privateKey), 'ES256');
        if (jwt.header.kid !== keyId || jwt.claims.iss !== teamId || typeof jwt.claims.iat !== 'number') return answer(403, 'InvalidProviderToken');
        if (headers['apns-topic'] !== topic) return answer(400, 'BadTopic');
        if (headers['apns-push-type'] !== 'alert') return answer(400, 'InvalidPushType');
        const raw = Buffer.concat(chunks);
        if (raw.length > 4096) return answer(413, 'PayloadTooLarge');
        const payload = JSON.parse(raw.toString('utf8'));
        const deviceToken = m[1]!;
        const status = unregistered.has(deviceToken) ? 410 : (statuses.get(deviceToken)?.shift() ?? 200);
        received.push({ deviceToken, headers, jwt, payload, status });
        if (status === 410) return answer(410, 'Unregistered');
        if (status !== 200) return answer(status, 'ServiceUnavailable');
        return answer(200);
      } catch (err) {
        errors.push((err as Error).message);
        answer(403, 'InvalidProviderToken');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  void publicKey;
  t.teardown(
    () =>
      new Promise<void>((r) => {
        for (const session of sessions) session.destroy();
        server.close(() => r());
      }),
  );
  return {
    origin,
    ca: tls.ca,
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    keyId,
    teamId,
    topic,
    received,
    errors,
    unregistered,
    answer(token, ...s) {
      statuses.set(token, [...(statuses.get(token) ?? []), ...s]);
    },
  };
}
