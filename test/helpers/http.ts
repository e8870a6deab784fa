/** HTTP helpers for tests: JSON requests against a running service, and account sign-up. */
import type { Service } from '../../src/service.ts';
import { checkResponse } from './openapi.ts';

/** A parsed response. */
export interface Res<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

/** Options of one request. */
export interface ReqOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Send the body as-is (already a string) with this content type. */
  rawBody?: string;
  contentType?: string;
  /** Do not check the answer against the stoat-api OpenAPI document (for deliberately odd requests). */
  skipOpenApi?: boolean;
}

/** Sends a request to `base + path` and parses a JSON answer when there is one. */
export async function request<T = any>(base: string, method: string, path: string, o: ReqOptions = {}): Promise<Res<T>> {
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  if (o.token) headers['X-Session-Token'] = o.token;
  let body: string | undefined;
  if (o.rawBody !== undefined) {
    body = o.rawBody;
    if (o.contentType) headers['Content-Type'] = o.contentType;
  } else if (o.body !== undefined) {
    body = JSON.stringify(o.body);
    headers['Content-Type'] = o.contentType ?? 'application/json';
  }
  const res = await fetch(base + path, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  let parsed: unknown = undefined;
  if (text.length) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
  }
  if (!o.skipOpenApi) checkResponse(method, path, res.status, parsed, text);
  return { status: res.status, body: parsed as T, headers: res.headers, text };
}

/** A client bound to one service (and optionally one session). */
export function client(s: Pick<Service, 'apiUrl'>, token?: string) {
  const go = <T = any>(method: string, path: string, body?: unknown, extra: Omit<ReqOptions, 'body'> = {}) =>
    request<T>(s.apiUrl, method, path, { ...(token ? { token } : {}), ...extra, ...(body !== undefined ? { body } : {}) });
  return {
    get: <T = any>(path: string, extra?: Omit<ReqOptions, 'body'>) => go<T>('GET', path, undefined, extra),
    post: <T = any>(path: string, body?: unknown, extra?: Omit<ReqOptions, 'body'>) => go<T>('POST', path, body ?? {}, extra),
    put: <T = any>(path: string, body?: unknown, extra?: Omit<ReqOptions, 'body'>) => go<T>('PUT', path, body ?? {}, extra),
    patch: <T = any>(path: string, body?: unknown, extra?: Omit<ReqOptions, 'body'>) => go<T>('PATCH', path, body ?? {}, extra),
    del: <T = any>(path: string, body?: unknown, extra?: Omit<ReqOptions, 'body'>) => go<T>('DELETE', path, body, extra),
    token,
  };
}

/** A signed-up, logged-in, onboarded user. */
export interface TestUser {
  userId: string;
  sessionId: string;
  token: string;
  username: string;
  email: string;
  password: string;
  api: ReturnType<typeof client>;
}

let counter = 0;

/** Creates an account, logs in and completes onboarding. */
export async function signup(s: Pick<Service, 'apiUrl'>, name?: string): Promise<TestUser> {
  const username = name ?? `user${process.pid}${++counter}`;
  const email = `${username.toLowerCase()}.${Date.now()}.${++counter}@example.test`;
  const password = 'correct horse battery';
  const anon = client(s);
  const created = await anon.post('/auth/account/create', { email, password });
  if (created.status !== 204) throw new Error(`account create ${created.status} ${created.text}`);
  const login = await anon.post('/auth/session/login', { email, password, friendly_name: 'test' });
  if (login.status !== 200) throw new Error(`login ${login.status} ${login.text}`);
  const api = client(s, login.body.token);
  const onboard = await api.post('/onboard/complete', { username });
  if (onboard.status !== 200) throw new Error(`onboard ${onboard.status} ${onboard.text}`);
  return { userId: login.body.user_id, sessionId: login.body._id, token: login.body.token, username, email, password, api };
}
