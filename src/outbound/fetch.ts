/**
 * `fetchGuarded`: one outbound GET under the policy (`policy.ts`), for link previews, the image proxy and any
 * other request to a URL a user chose. Every hop is checked (scheme, credentials, IP literals) and connected
 * through the guarded lookup; redirects are followed by hand, each Location re-checked, at most
 * `maxRedirects`; the whole exchange has one deadline; the body is streamed and cut at `maxBytes`.
 */
import http from 'node:http';
import https from 'node:https';
import { checkUrl, guardedAgents, OutboundRefused, type OutboundPolicy } from './policy.ts';

/** Limits of one guarded fetch. */
export interface FetchLimits {
  /** Deadline of the whole exchange (every hop and the body), in milliseconds. */
  timeoutMs: number;
  /** Bytes of body kept; the rest is not read (the connection is cut). */
  maxBytes: number;
  /** Redirects followed before giving up. */
  maxRedirects: number;
  /** Extra request headers (User-Agent, Accept…). */
  headers?: Record<string, string>;
}

/** What a guarded fetch got. */
export interface FetchedResponse {
  /** The URL finally answered (after redirects). */
  url: URL;
  status: number;
  /** The `Content-Type` header, lower-cased ('' when absent). */
  contentType: string;
  /** Up to `maxBytes` of the body. */
  body: Buffer;
  /** True when the body was longer than `maxBytes` (and was cut). */
  truncated: boolean;
}

/** A guarded fetch that failed for a reason other than the policy (timeout, too many redirects, socket error). */
export class FetchFailed extends Error {
  /** Node-style code. */
  readonly code = 'EFETCHFAILED';
  constructor(message: string) {
    super(message);
    this.name = 'FetchFailed';
  }
}

const agentsByPolicy = new WeakMap<OutboundPolicy, { http: http.Agent; https: https.Agent }>();

/** The guarded agents of a policy (made once per policy object, keep-alive so a bench or a busy worker reuses sockets). */
function agentsOf(policy: OutboundPolicy): { http: http.Agent; https: https.Agent } {
  let a = agentsByPolicy.get(policy);
  if (!a) {
    a = guardedAgents(policy, { keepAlive: true, maxSockets: 64 });
    agentsByPolicy.set(policy, a);
  }
  return a;
}

/** One hop: the response head and a reader of at most `maxBytes` of its body. */
function requestOnce(url: URL, policy: OutboundPolicy, limits: FetchLimits, signal: AbortSignal): Promise<http.IncomingMessage> {
  const agents = agentsOf(policy);
  const mod = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(
      url,
      {
        method: 'GET',
        agent: url.protocol === 'https:' ? agents.https : agents.http,
        headers: { 'accept-encoding': 'identity', ...(limits.headers ?? {}) },
        signal,
      },
      resolve,
    );
    req.on('error', reject);
    req.end();
  });
}

/** Reads at most `max` bytes of a response, then destroys it. */
function readCapped(res: http.IncomingMessage, max: number): Promise<{ body: Buffer; truncated: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (truncated: boolean) => {
      if (done) return;
      done = true;
      resolve({ body: Buffer.concat(chunks, Math.min(size, max)), truncated });
    };
    res.on('data', (chunk: Buffer) => {
      if (done) return;
      const room = max - size;
      if (chunk.length > room) {
        if (room > 0) chunks.push(chunk.subarray(0, room));
        size = max;
        finish(true);
        res.destroy();
        return;
      }
      chunks.push(chunk);
      size += chunk.length;
    });
    res.on('end', () => finish(false));
    res.on('error', (err) => {
      if (!done) {
        done = true;
        reject(err);
      }
    });
    res.on('close', () => {
      if (!done) {
        done = true;
        reject(new FetchFailed('connection closed before the body ended'));
      }
    });
  });
}

/**
 * GETs `input` under `policy` within `limits`. Throws `OutboundRefused` when a hop may not be reached and
 * `FetchFailed` on a timeout, too many redirects or a broken connection; any HTTP status is returned.
 */
export async function fetchGuarded(input: string | URL, policy: OutboundPolicy, limits: FetchLimits): Promise<FetchedResponse> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), limits.timeoutMs);
  try {
    let url = checkUrl(typeof input === 'string' ? input : new URL(input.href), policy);
    for (let hop = 0; ; hop++) {
      const res = await requestOnce(url, policy, limits, controller.signal);
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (status >= 300 && status < 400 && location !== undefined) {
        res.resume();
        res.destroy();
        if (hop >= limits.maxRedirects) throw new FetchFailed(`more than ${limits.maxRedirects} redirects`);
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw new FetchFailed('redirect to a malformed URL');
        }
        url = checkUrl(next, policy);
        continue;
      }
      const { body, truncated } = await readCapped(res, limits.maxBytes);
      return { url, status, contentType: String(res.headers['content-type'] ?? '').toLowerCase(), body, truncated };
    }
  } catch (err) {
    if (err instanceof OutboundRefused || err instanceof FetchFailed) throw err;
    // The guarded lookup's refusal arrives wrapped as a socket error.
    if ((err as { code?: string }).code === 'EOUTBOUNDREFUSED') throw new OutboundRefused((err as Error).message);
    if (controller.signal.aborted) throw new FetchFailed(`no answer within ${limits.timeoutMs} ms`);
    throw new FetchFailed((err as Error).message);
  } finally {
    clearTimeout(timer);
  }
}
