/**
 * Per-process rate limiting (spec "Rate limiting", DESIGN §4 "rate limits", reference §5): four buckets,
 * fixed 10-second windows, counters keyed by (caller, bucket, resource). Pure and synchronous; the koa
 * middleware that turns a result into headers and a 429 lives elsewhere.
 *
 * A window starts with the first request after the previous one ended, not on a 10 s boundary (Revolt's
 * `Entry::deduct`): at `now >= reset` the request opens a new window (used = 1, reset = now + 10 000);
 * before that it adds one; when nothing remains it is refused and NOT counted, so refusals neither use
 * budget nor push the reset back.
 *
 * Classification of a matched route (`classify`), patterns in koa-router syntax, an optional leading
 * `/0.8` ignored:
 *
 * | Method and pattern                                   | Bucket      | Limit / 10 s | Resource                    |
 * |------------------------------------------------------|-------------|--------------|-----------------------------|
 * | `POST /servers/create`                               | `servers`   | 5            | the caller                  |
 * | any `/servers/:id` and anything under it             | `servers`   | 5            | that server id              |
 * | `PUT /custom/emoji/:id`, body `parent` = `{type: "Server", id}` | `servers` | 5   | `parent.id`                 |
 * | `PUT /custom/emoji/:id` with any other body          | `catch-all` | 20           | `PUT /custom/emoji/:id`     |
 * | `POST /channels/:id/messages` (message send)         | `messaging` | 10           | that channel id             |
 * | any other `/channels/:id` and anything under it (edit, delete, reads, message edit/delete, pins, reactions, join_call, invites, …) | `channels` | 15 | that channel id |
 * | `/channels/create`, `/servers/<literal>` other than create, everything else | `catch-all` | 20 | `METHOD pattern` |
 * | `GET /users/:id/default_avatar` (Stoat's bucket)     | `default_avatar` | 255     | `GET /users/:user_id/default_avatar` |
 * | anything under `/bots` (Stoat's bucket)               | `bots`      | 10           | the caller                  |
 * | anything under `/webhooks/:webhook_id` (execute, token routes, edits) | `webhooks` | 10 | that webhook id       |
 * | unmatched paths (the caller passes pattern `*`)      | `catch-all` | 20           | `METHOD *`                  |
 * | media server uploads (the caller passes the concrete `/attachments`, `/icons`, …) | `catch-all` | 20 | `POST /attachments` … |
 * | `GET /proxy` (media server image proxy)              | `proxy`     | 120          | `GET /proxy` (per caller)   |
 * | `GET /embed` (media server link preview of one URL)  | `proxy`     | 120          | `GET /embed` (per caller)   |
 * | `GET /admin/export` (compliance export)              | `compliance_export` | 3    | the caller                  |
 * | `GET /auth/account/export` (a user's own data)       | `account_export` | 3       | the caller                  |
 */

import { createHash } from 'node:crypto';

/** Length of one window in milliseconds. */
export const WINDOW_MS = 10_000;

/** Requests allowed per window in each bucket; the key is also the `X-RateLimit-Bucket` header value. */
export const BUCKET_LIMITS = {
  servers: 5,
  channels: 15,
  messaging: 10,
  'catch-all': 20,
  /** Stoat's own bucket for default avatars: a page of members loads dozens of them at once. */
  default_avatar: 255,
  /** The media server's image proxy: a page of link previews loads many images at once. */
  proxy: 120,
  /** Stoat's `bots` bucket: everything under /bots, per caller. */
  bots: 10,
  /** Everything under /webhooks/:id (execute included), per webhook: a leaked token cannot flood a channel faster. */
  webhooks: 10,
  /** The compliance export (`GET /admin/export`), per caller: each request reads the whole log. */
  compliance_export: 3,
  /** A user's own data export (`GET /auth/account/export`), per caller: each request builds a ZIP of everything. */
  account_export: 3,
} as const;

/** Name of a rate-limit bucket. */
export type Bucket = keyof typeof BUCKET_LIMITS;

/** The bucket and the resource a request is counted against. */
export interface Classification {
  /** Bucket whose limit applies. */
  bucket: Bucket;
  /** What the counter is keyed by inside the bucket (server id, channel id, caller, or `METHOD pattern`). */
  resource: string;
}

/** The state of one counter after a `hit` or at a `peek`, enough for the four headers and a 429. */
export interface RateLimitResult {
  /** False when the bucket was exhausted: the request is refused and was not counted. */
  allowed: boolean;
  /** Bucket name (`X-RateLimit-Bucket`). */
  bucket: Bucket;
  /** Limit of the bucket (`X-RateLimit-Limit`). */
  limit: number;
  /** Requests left in the current window (`X-RateLimit-Remaining`). */
  remaining: number;
  /** Integer milliseconds until the window resets; 0 when no window is running (`X-RateLimit-Reset-After`). */
  resetAfterMs: number;
  /** On a refusal, integer milliseconds until a request will be allowed again (the 429 `retry_after`). */
  retryAfterMs?: number;
}

/** Options of a `RateLimiter`. */
export interface RateLimiterOptions {
  /** Clock in milliseconds; must not go backwards (defaults to `Date.now`). */
  now?: () => number;
  /** False for `RATE_LIMITS=off`: nothing is counted or refused, headers still show a full budget. */
  enabled?: boolean;
}

interface Entry {
  used: number;
  reset: number;
}

/**
 * Fixed-window counters for every (caller, bucket, resource). O(1) per request; memory is bounded by the
 * requests of the last two windows: entries live in two generations swapped at least `WINDOW_MS` apart
 * (driven by the injected clock on `hit`, no timer), a touched entry moves to the current generation and an
 * entry left in the old one when it is swapped out is dropped — by then its window has ended.
 */
export class RateLimiter {
  private readonly now: () => number;
  private readonly enabled: boolean;
  private current = new Map<string, Entry>();
  private previous = new Map<string, Entry>();
  private rotatedAt: number;

  constructor(options: RateLimiterOptions = {}) {
    this.now = options.now ?? Date.now;
    this.enabled = options.enabled ?? true;
    this.rotatedAt = this.now();
  }

  /** Counts one request against (caller, bucket, resource) unless the bucket is exhausted, then refuses it. */
  hit(caller: string, bucket: Bucket, resource: string): RateLimitResult {
    const limit = BUCKET_LIMITS[bucket];
    if (!this.enabled) return { allowed: true, bucket, limit, remaining: limit, resetAfterMs: 0 };
    const now = this.now();
    this.rotate(now);
    const key = counterKey(caller, bucket, resource);
    let entry = this.current.get(key);
    if (entry === undefined) {
      entry = this.previous.get(key);
      if (entry !== undefined) {
        this.previous.delete(key);
        this.current.set(key, entry);
      }
    }
    if (entry === undefined || now >= entry.reset) {
      if (entry === undefined) {
        entry = { used: 0, reset: 0 };
        this.current.set(key, entry);
      }
      entry.used = 1;
      entry.reset = now + WINDOW_MS;
      return { allowed: true, bucket, limit, remaining: limit - 1, resetAfterMs: WINDOW_MS };
    }
    const resetAfterMs = Math.ceil(entry.reset - now);
    if (entry.used >= limit) {
      return { allowed: false, bucket, limit, remaining: 0, resetAfterMs, retryAfterMs: resetAfterMs };
    }
    entry.used += 1;
    return { allowed: true, bucket, limit, remaining: limit - entry.used, resetAfterMs };
  }

  /** The counter's numbers without counting anything (CORS preflights, responses nothing was counted for). */
  peek(caller: string, bucket: Bucket, resource: string): RateLimitResult {
    const limit = BUCKET_LIMITS[bucket];
    if (!this.enabled) return { allowed: true, bucket, limit, remaining: limit, resetAfterMs: 0 };
    const now = this.now();
    const key = counterKey(caller, bucket, resource);
    const entry = this.current.get(key) ?? this.previous.get(key);
    if (entry === undefined || now >= entry.reset) {
      return { allowed: true, bucket, limit, remaining: limit, resetAfterMs: 0 };
    }
    const remaining = Math.max(0, limit - entry.used);
    const resetAfterMs = Math.ceil(entry.reset - now);
    if (remaining === 0) return { allowed: false, bucket, limit, remaining, resetAfterMs, retryAfterMs: resetAfterMs };
    return { allowed: true, bucket, limit, remaining, resetAfterMs };
  }

  /** Number of counters held (running or not yet dropped); for tests. */
  size(): number {
    return this.current.size + this.previous.size;
  }

  /** Characters of all counter keys held; for tests (bounded however long the ids a client sends). */
  keyChars(): number {
    let n = 0;
    for (const k of this.current.keys()) n += k.length;
    for (const k of this.previous.keys()) n += k.length;
    return n;
  }

  private rotate(now: number): void {
    const elapsed = now - this.rotatedAt;
    if (elapsed < WINDOW_MS) return;
    // Two windows idle: every entry in both generations has ended.
    this.previous = elapsed >= 2 * WINDOW_MS ? new Map() : this.current;
    this.current = new Map();
    this.rotatedAt = now;
  }
}

/** Longest caller or resource kept verbatim in a counter key; longer ones are replaced by their SHA-256. */
export const MAX_KEY_PART_LENGTH = 64;

/** A bounded form of a key part: itself when short, else `#` and its SHA-256 (so memory per counter is bounded). */
export function boundedKeyPart(part: string): string {
  return part.length <= MAX_KEY_PART_LENGTH ? part : `#${createHash('sha256').update(part).digest('base64url')}`;
}

/** Injective string key: the caller is length-prefixed, bucket names never contain NUL. */
function counterKey(caller: string, bucket: Bucket, resource: string): string {
  const c = boundedKeyPart(caller);
  return `${c.length}:${c}${bucket}\u0000${boundedKeyPart(resource)}`;
}

/**
 * Whether the classification of a route depends on its body (`PUT /custom/emoji/:id`, keyed by its
 * `parent`): the API reads such a body (bounded) before counting; every other route is counted first.
 */
export function classifyNeedsBody(method: string, pattern: string): boolean {
  const path = pattern.startsWith('/0.8/') ? pattern.slice(4) : pattern;
  return method.toUpperCase() === 'PUT' && path.startsWith('/custom/emoji/:') && path.split('/').length === 4;
}

// Longer than any id this service issues (ULIDs are 26 characters): such a body has no readable parent, and
// the cap keeps attacker-chosen keys small.
const MAX_PARENT_ID_LENGTH = 128;

/**
 * Bucket and resource of a request from its method, matched route pattern (`*` when nothing matched; the
 * concrete path for media uploads), route params, parsed body and caller key (see the table above).
 */
export function classify(
  method: string,
  pattern: string,
  params: Record<string, string>,
  body: unknown,
  callerKey: string,
): Classification {
  const m = method.toUpperCase();
  const path = pattern.startsWith('/0.8/') ? pattern.slice(4) : pattern;
  const segments = path.split('/');
  // segments[0] is '' for every pattern starting with '/'.
  const root = segments[1];
  if (segments[0] === '' && (root === 'servers' || root === 'channels') && segments.length >= 3) {
    const second = segments[2] ?? '';
    if (root === 'servers' && second === 'create' && segments.length === 3 && m === 'POST') {
      return { bucket: 'servers', resource: callerKey };
    }
    const id = paramValue(second, params);
    if (id !== undefined) {
      if (root === 'servers') return { bucket: 'servers', resource: id };
      const send = m === 'POST' && segments.length === 4 && segments[3] === 'messages';
      return { bucket: send ? 'messaging' : 'channels', resource: id };
    }
  } else if (m === 'GET' && path === '/admin/export') {
    return { bucket: 'compliance_export', resource: callerKey };
  } else if (m === 'GET' && path === '/auth/account/export') {
    return { bucket: 'account_export', resource: callerKey };
  } else if (m === 'GET' && (path === '/proxy' || path === '/embed')) {
    return { bucket: 'proxy', resource: `${m} ${pattern}` };
  } else if (segments[0] === '' && root === 'bots') {
    return { bucket: 'bots', resource: callerKey };
  } else if (segments[0] === '' && root === 'webhooks' && segments.length >= 3) {
    const id = paramValue(segments[2] ?? '', params);
    if (id !== undefined) return { bucket: 'webhooks', resource: id };
  } else if (m === 'GET' && path === '/users/:user_id/default_avatar') {
    return { bucket: 'default_avatar', resource: `${m} ${pattern}` };
  } else if (m === 'PUT' && path.startsWith('/custom/emoji/:') && segments.length === 4) {
    const parent = isRecord(body) ? body['parent'] : undefined;
    if (isRecord(parent) && parent['type'] === 'Server') {
      const id = parent['id'];
      if (typeof id === 'string' && id.length > 0 && id.length <= MAX_PARENT_ID_LENGTH) {
        return { bucket: 'servers', resource: id };
      }
    }
  }
  return { bucket: 'catch-all', resource: `${m} ${pattern}` };
}

/** The non-empty value of the param a `:name` segment binds, or undefined for a literal segment. */
function paramValue(segment: string, params: Record<string, string>): string | undefined {
  if (segment.charCodeAt(0) !== 58 /* ':' */) return undefined;
  const name = /^:([A-Za-z_$][\w$]*)/.exec(segment)?.[1];
  if (name === undefined) return undefined;
  const value = params[name];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
