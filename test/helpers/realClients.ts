/**
 * Running the published clients (revolt.js 7.2, stoat.js 7.3) unmodified against a test service:
 * - Node 20 has no global WebSocket: the `ws` package stands in (what the clients' docs say to do).
 * - Every answer the clients get from the API is checked against the stoat-api OpenAPI document by wrapping
 *   the global `fetch` they call; a mismatch is recorded (and the call fails), and `assertClean` fails the test.
 * - Every request is also recorded as the server received it (method, URL, content type, Idempotency-Key), so
 *   tests can assert the clients' quirks are what the service handled.
 */
import http, { type IncomingMessage } from 'node:http';
import type tap from 'tap';
import { WebSocket } from 'ws';
import type { Service } from '../../src/service.ts';
import { checkResponse } from './openapi.ts';

/** A request as the API server received it. */
export interface ReceivedRequest {
  method: string;
  /** Path and query exactly as sent (`/servers/create?`). */
  url: string;
  contentType: string | undefined;
  idempotencyKey: string | undefined;
}

/** A call a client made through `fetch` and what it got. */
export interface ClientCall {
  method: string;
  /** Path below the API base (no query). */
  path: string;
  /** The body as sent (a string for JSON bodies, undefined for GET). */
  body: unknown;
  status: number;
  /** The answer's JSON (undefined for an empty body). */
  response: unknown;
}

/** Records and checks the clients' traffic. */
export interface ClientTraffic {
  received: ReceivedRequest[];
  calls: ClientCall[];
  /** OpenAPI mismatches (should stay empty). */
  mismatches: string[];
}

/** Makes `globalThis.WebSocket` the `ws` implementation (the clients construct `new WebSocket(url)`). */
export function installWebSocket(): void {
  (globalThis as { WebSocket?: unknown }).WebSocket = WebSocket;
}

/**
 * Wraps `fetch` so that every answer from `s`'s API is checked against the OpenAPI document, and records
 * what the API server received. Call once per test file (the wrapper is process-wide); restored at teardown.
 */
export function traceClients(t: { teardown(fn: () => unknown): void }, s: Pick<Service, 'apiUrl' | 'apiServer'>): ClientTraffic {
  const traffic: ClientTraffic = { received: [], calls: [], mismatches: [] };
  const onRequest = (req: IncomingMessage) => {
    traffic.received.push({
      method: req.method ?? '',
      url: req.url ?? '',
      contentType: req.headers['content-type'],
      idempotencyKey: req.headers['idempotency-key'] as string | undefined,
    });
  };
  s.apiServer!.prependListener('request', onRequest);
  const original = globalThis.fetch;
  const base = s.apiUrl;
  globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const res = await original(input, init);
    if (!url.startsWith(base + '/') && url !== base) return res;
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const path = new URL(url).pathname;
    const text = await res.clone().text();
    let response: unknown;
    try {
      response = text.length ? JSON.parse(text) : undefined;
    } catch {
      response = undefined;
    }
    traffic.calls.push({ method, path, body: init?.body, status: res.status, response });
    try {
      checkResponse(method, path, res.status, response, text);
    } catch (err) {
      traffic.mismatches.push((err as Error).message);
      throw err;
    }
    return res;
  };
  t.teardown(() => {
    globalThis.fetch = original;
    s.apiServer?.off('request', onRequest);
  });
  return traffic;
}

/**
 * Clears, at teardown, every interval created from now on. Both clients' EventClient lose their heartbeat
 * interval when the server closes the socket (`onclose` forgets the socket before `disconnect()` could clear
 * it), after which it throws "Socket closed, trying to send." every heartbeat and keeps Node alive. Browsers
 * only log that; a test process would crash or never exit.
 */
export function clearClientIntervalsAtTeardown(t: { teardown(fn: () => unknown): void }): void {
  const created = new Set<ReturnType<typeof setInterval>>();
  const original = globalThis.setInterval;
  globalThis.setInterval = ((fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const h = original(fn, ms, ...args);
    created.add(h);
    return h;
  }) as typeof setInterval;
  t.teardown(() => {
    globalThis.setInterval = original;
    for (const h of created) clearInterval(h);
  });
}

/** The shared checks on what the clients sent and got (DESIGN §4 "client quirks"). */
export function assertTraffic(
  t: Pick<typeof tap, 'same' | 'ok'>,
  traffic: ClientTraffic,
): void {
  t.same(traffic.mismatches, [], 'every answer matches the stoat-api OpenAPI document');
  t.same(
    traffic.calls.filter((c) => c.status >= 500),
    [],
    'no 5xx',
  );
  const writes = traffic.received.filter((r) => r.method !== 'GET' && r.method !== 'OPTIONS');
  t.ok(writes.length > 0, 'the clients wrote');
  t.same(
    writes.filter((r) => !(r.contentType ?? '').startsWith('text/plain')).map((r) => `${r.method} ${r.url} ${r.contentType}`),
    [],
    'every body was JSON sent as text/plain (no JSON content type)',
  );
  for (const c of traffic.calls.filter((c) => c.method !== 'GET')) {
    if (typeof c.body !== 'string') t.ok(false, `${c.method} ${c.path}: body ${String(c.body)}`);
    else JSON.parse(c.body);
  }
  const deletes = traffic.calls.filter((c) => c.method === 'DELETE');
  t.ok(deletes.length > 0 && deletes.every((c) => c.body === '{}'), 'DELETE requests carry a {} body');
}

/**
 * Sends a request with node:http, so the URL reaches the server byte for byte (Node's fetch drops an empty
 * `?`, which browsers keep: both clients build every URL as `${path}?${query}`).
 */
export function rawRequest(
  apiUrl: string,
  method: string,
  pathAndQuery: string,
  o: { token?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; text: string; body: unknown }> {
  const u = new URL(apiUrl);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path: pathAndQuery,
        headers: {
          ...(o.token ? { 'X-Session-Token': o.token } : {}),
          ...(o.body !== undefined ? { 'Content-Type': 'text/plain;charset=UTF-8', 'Content-Length': String(Buffer.byteLength(o.body)) } : {}),
          ...(o.headers ?? {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            body = undefined;
          }
          const status = res.statusCode ?? 0;
          try {
            checkResponse(method, pathAndQuery.split('?')[0]!, status, body, text);
          } catch (err) {
            reject(err);
            return;
          }
          resolve({ status, text, body });
        });
      },
    );
    req.on('error', reject);
    if (o.body !== undefined) req.write(o.body);
    req.end();
  });
}

/** A client constructor of stoat.js or revolt.js. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type ClientCtor = new (options: any, config: any) => any;

/** A real client of the service at `apiUrl` (its configuration from `GET /`), disconnected at teardown. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function newClient(t: { teardown(fn: () => unknown): void }, Ctor: ClientCtor, apiUrl: string): Promise<any> {
  const config = await (await fetch(`${apiUrl}/`)).json();
  const client = new Ctor({ baseURL: apiUrl, autoReconnect: false }, config);
  t.teardown(() => client.events.disconnect());
  return client;
}

/** Opens a client's gateway on the session it uses and waits for Ready. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function connectReady(client: any): Promise<void> {
  const ready = new Promise<void>((resolve) => client.once('ready', () => resolve()));
  client.connect();
  await ready;
}

/**
 * Signs a new account up with a real client (stoat.js or revolt.js, its constructor given), logs it in,
 * onboards it as `name` and waits for the gateway's `ready`. revolt.js (revolt-api 0.8.5-1) rejects the
 * account creation's 204 with a SyntaxError; that one is expected of revolt.js only.
 */
export async function signUpWithClient(
  t: { teardown(fn: () => unknown): void },
  Ctor: ClientCtor,
  lib: 'stoat.js' | 'revolt.js',
  apiUrl: string,
  name: string,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Promise<any> {
  const client = await newClient(t, Ctor, apiUrl);
  const email = `${name}.${Date.now()}@example.test`;
  const password = 'correct horse battery';
  try {
    await client.api.post('/auth/account/create', { email, password });
  } catch (e) {
    if (!(lib === 'revolt.js' && e instanceof SyntaxError)) throw e;
  }
  const session = await client.api.post('/auth/session/login', { email, password, friendly_name: `${lib} test` });
  if (session.result !== 'Success') throw new Error('login failed');
  client.useExistingSession(session);
  await client.api.post('/onboard/complete', { username: name });
  await connectReady(client);
  // The session, for a second client of the same user (`connectAgain`).
  Object.defineProperty(client, 'testSession', { value: session });
  return client;
}

/** A second client of a user `signUpWithClient` made, on the same session, once its gateway said Ready. */
export async function connectAgain(
  t: { teardown(fn: () => unknown): void },
  Ctor: ClientCtor,
  apiUrl: string,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  first: any,
  /** Called with the new client before it connects (to listen to what Ready triggers). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  before?: (client: any) => void,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Promise<any> {
  const client = await newClient(t, Ctor, apiUrl);
  client.useExistingSession(first.testSession);
  before?.(client);
  await connectReady(client);
  return client;
}
