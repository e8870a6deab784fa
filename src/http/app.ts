/**
 * The API app: `createApiApp(deps, routes)` builds the koa app without listening, so tests run it on an
 * ephemeral port. Pipeline (outermost first): request id and log → lingering close of a request answered
 * before its body was read (`middleware/linger.ts`) → rate-limit headers → error renderer
 * → CORS → serving check → router (path ids → session → rate limit → authentication → JSON body, only on
 * routes that take one, any content type since revolt.js sends JSON as text/plain → validation → handler)
 * → 404 for everything unmatched (its body is never read).
 */
import { randomUUID } from 'node:crypto';
import querystring from 'node:querystring';
import Koa from 'koa';
import Router, { type RouterMiddleware } from '@koa/router';
import cors from '@koa/cors';
import type { z } from 'zod';
import { AppError, unavailable } from '../errors.ts';
import { hashToken } from '../domain/account/secrets.ts';
import { resolveBotToken } from '../users/botToken.ts';
import { rm } from '../readmodel/keys.ts';
import type { SessionRecord } from '../../projections/accounts.ts';
import type { AppDeps } from './deps.ts';
import { errorRenderer } from './middleware/errors.ts';
import { closeUnreadRequests } from './middleware/linger.ts';
import { countRequest, RATE_LIMIT_HEADERS, rateLimitHeaders } from './middleware/rateLimit.ts';
import { clientAddressMiddleware } from './clientAddress.ts';
import { classifyNeedsBody } from '../ratelimit/limiter.ts';
import { readJsonBody } from './body.ts';
import { paramsValid } from './params.ts';
import { NO_CONTENT, RawJson, type AnyRoute, type Caller } from './route.ts';
import { httpMetrics } from '../metrics/http.ts';

/** Routes of accounts and sessions: a bot token is no session there. */
const BOTLESS_PREFIXES = ['/auth/', '/onboard/'];

/** Paths answered even while the read models are rebuilding. */
const ALWAYS_SERVED = new Set(['/', '/ping']);

/** The path as logged: a webhook token in it (`/webhooks/<id>/<token>…`) is replaced by `:token`. */
export function withoutSecrets(path: string): string {
  return path.replace(/^(\/(?:0\.8\/)?webhooks\/[^/]+\/)[^/]+/, '$1:token');
}

/** Request id, child logger, and one log line per request (never a token). */
export function requestLog(deps: AppDeps): Koa.Middleware {
  return async function logRequests(ctx, next) {
    const incoming = ctx.get('X-Request-Id');
    const requestId = /^[A-Za-z0-9_-]{1,64}$/.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    // The child logger is made only when something logs (most requests log nothing at the default level).
    let log: AppDeps['log'] | undefined;
    Object.defineProperty(ctx.state, 'log', { get: () => (log ??= deps.log.child({ requestId })), configurable: true, enumerable: true });
    ctx.set('X-Request-Id', requestId);
    const started = performance.now();
    try {
      await next();
    } finally {
      const ms = Math.round((performance.now() - started) * 10) / 10;
      const line = { method: ctx.method, path: withoutSecrets(ctx.path), status: ctx.status, ms };
      if (ctx.status >= 500) ctx.state.log.warn(line, 'request');
      else if (deps.log.isLevelEnabled('debug')) ctx.state.log.debug(line, 'request');
    }
  };
}

/** CORS for browsers: any origin, the rate-limit headers exposed. */
export function corsMiddleware(): Koa.Middleware {
  return cors({
    origin: (ctx) => ctx.get('Origin') || '*',
    exposeHeaders: RATE_LIMIT_HEADERS,
    allowHeaders: ['Content-Type', 'X-Session-Token', 'X-Bot-Token', 'X-MFA-Ticket', 'Idempotency-Key', 'X-Audit-Log-Reason'],
    allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    maxAge: 600,
  });
}

/** Looks the session up when a token is sent; never fails (the route decides whether it needs one). */
export async function resolveSession(ctx: Koa.Context, deps: Pick<AppDeps, 'readModels' | 'now'>): Promise<void> {
  if (ctx.state.sessionResolved) return;
  ctx.state.sessionResolved = true;
  // Stoat reads `X-Bot-Token` first: when it is sent, the session header is not looked at.
  const botToken = ctx.get('X-Bot-Token');
  if (botToken) {
    const bot = botToken.length > 256 ? null : await resolveBotToken(deps, botToken);
    if (!bot) {
      ctx.state.invalidSession = true;
      return;
    }
    ctx.state.caller = bot;
    ctx.state.onboarded = true;
    return;
  }
  const token = ctx.get('X-Session-Token');
  if (!token) return;
  if (token.length > 256) {
    ctx.state.invalidSession = true;
    return;
  }
  const tokenHash = hashToken(token);
  const rec = await deps.readModels.getJson<SessionRecord>(rm.session(tokenHash));
  if (!rec) {
    ctx.state.invalidSession = true;
    return;
  }
  ctx.state.caller = { userId: rec.userId, sessionId: rec.sessionId, tokenHash } satisfies Caller;
  ctx.state.onboarded = rec.onboarded === true;
}

/**
 * The caller a route needs (after `resolveSession`): `session` wants any valid session, `user` one whose
 * account completed onboarding; 401 `NotAuthenticated` / `InvalidSession` otherwise. `none` returns the
 * caller when there is one.
 */
export async function requireCaller(ctx: Koa.Context, deps: Pick<AppDeps, 'readModels'>, auth: 'none' | 'session' | 'user'): Promise<Caller | undefined> {
  const caller = ctx.state.caller as Caller | undefined;
  if (auth === 'none') return caller;
  if (!caller) throw new AppError({ type: ctx.state.invalidSession ? 'InvalidSession' : 'NotAuthenticated' });
  if (auth === 'user' && ctx.state.onboarded !== true) {
    throw new AppError({ type: 'NotAuthenticated' });
  }
  return caller;
}

/** `X-Audit-Log-Reason`: at most 512 characters after percent-decoding. */
function auditReason(ctx: Koa.Context): string | undefined {
  const raw = ctx.get('X-Audit-Log-Reason');
  if (!raw) return undefined;
  let reason: string;
  try {
    reason = decodeURIComponent(raw);
  } catch {
    throw new AppError({ type: 'FailedValidation', error: 'X-Audit-Log-Reason is not valid percent-encoding' });
  }
  if ([...reason].length > 512) {
    throw new AppError({ type: 'FailedValidation', error: 'X-Audit-Log-Reason is longer than 512 characters' });
  }
  return reason;
}

/** Formats zod issues as one readable line naming the fields (`body.name: …`, `query.limit: …`). */
export function describeIssues(error: z.ZodError, root = 'body'): string {
  return error.issues
    .slice(0, 5)
    .map((i) => {
      const where = [root, ...i.path.map(String)].join('.');
      const keys = 'keys' in i && Array.isArray(i.keys) ? ` (${(i.keys as string[]).join(', ')})` : '';
      return `${where}: ${i.message}${keys}`;
    })
    .join('; ');
}

function validate<T>(schema: z.ZodType<T> | undefined, value: unknown, what: 'body' | 'query'): T {
  if (!schema) return undefined as T;
  const r = schema.safeParse(value);
  if (!r.success) throw new AppError({ type: 'FailedValidation', error: describeIssues(r.error, what) });
  return r.data;
}

/** Cap of a body read before its rate limit is counted (a small body: the emoji create's is < 200 bytes). */
export const CLASSIFIED_BODY_LIMIT = 16_000;

/**
 * Mounts the declarative routes. Order per request: path ids validated (a malformed one is answered like an
 * unmatched path: counted in the catch-all bucket, 404 NotFound) → session → rate limit → authentication →
 * the route's `authorize` (an /admin route's instance role) → the body, read and parsed only when the route
 * declares one (`body.ts`) → validation → handler. A route
 * whose rate-limit classification needs its body (`classifyNeedsBody`, the emoji create) reads it before
 * counting, under a small cap (`CLASSIFIED_BODY_LIMIT`).
 */
export function mountRoutes(router: Router, routes: readonly AnyRoute[], deps: AppDeps): void {
  for (const route of orderRoutes(routes)) {
    const bodyFirst = route.body !== undefined && classifyNeedsBody(route.method, route.path);
    const handler: RouterMiddleware = async (ctx) => {
      const params = ctx.params as Record<string, string>;
      if (!paramsValid(params, route.params)) {
        ctx.params = {};
        await notFoundFallback(deps)(ctx, async () => {});
        return;
      }
      ctx.state.routePattern = route.path;
      // Nothing this request reads from the fact cache is older than a write acknowledged before it began.
      await deps.readModels.fence();
      await resolveSession(ctx, deps);
      let rawBody: unknown;
      if (bodyFirst) {
        rawBody = await readJsonBody(ctx, CLASSIFIED_BODY_LIMIT);
        ctx.request.body = rawBody;
      }
      if (!(route.unmetered && (await route.unmetered(ctx, deps)))) countRequest(ctx, deps.limiter, route.path);
      let caller = await requireCaller(ctx, deps, route.auth);
      if (caller?.bot) {
        // Accounts, sessions, MFA and onboarding take a session only (Stoat's authifier never reads X-Bot-Token).
        if (route.auth === 'session' || BOTLESS_PREFIXES.some((p) => route.path.startsWith(p))) {
          if (route.auth !== 'none') throw new AppError({ type: 'NotAuthenticated' });
          caller = undefined;
        } else if (route.noBots) throw new AppError({ type: 'IsBot' });
      }
      if (route.authorize) await route.authorize(deps, caller as Caller);
      const requestId = ctx.state.requestId as string;
      if (route.body !== undefined && rawBody === undefined) {
        rawBody = await readJsonBody(ctx);
        ctx.request.body = rawBody;
      }
      const body = validate(route.body, rawBody ?? {}, 'body');
      // stoat.js appends `?` to every path, also to one that carries its own query (members_experimental_query):
      // a raw trailing `?` is that separator, never data (a client encodes a `?` in a value as %3F).
      const query = validate(route.query, ctx.querystring.endsWith('?') ? querystring.parse(ctx.querystring.slice(0, -1)) : ctx.query, 'query');
      const reason = auditReason(ctx);
      const result = await route.handler({
        ctx,
        deps,
        body,
        query,
        params,
        caller: caller as Caller,
        requestId,
        meta: { actor: caller?.userId ?? null, requestId, ...(reason !== undefined ? { reason } : {}) },
      });
      if (result === NO_CONTENT) {
        ctx.status = 204;
        ctx.body = null;
      } else if (result instanceof RawJson) {
        ctx.status = ctx.status === 404 ? 200 : ctx.status;
        ctx.type = 'application/json';
        ctx.body = result.text;
      } else {
        ctx.status = ctx.status === 404 ? 200 : ctx.status;
        ctx.body = result;
      }
    };
    router.register(route.path, [route.method], handler);
  }
}

/**
 * Orders routes so that at each segment a literal beats a parameter (`/users/@me` before `/users/:id`,
 * `/auth/session/all` before `/auth/session/:id`); otherwise registration order is kept.
 */
export function orderRoutes(routes: readonly AnyRoute[]): AnyRoute[] {
  const rank = (p: string) => p.split('/').map((seg) => (seg.startsWith(':') ? 1 : 0));
  return [...routes].sort((a, b) => {
    const ra = rank(a.path);
    const rb = rank(b.path);
    for (let i = 0; i < Math.min(ra.length, rb.length); i++) if (ra[i] !== rb[i]) return ra[i]! - rb[i]!;
    return 0;
  });
}

/** 503 while the read models rebuild, except for the paths given (the roots). */
export function servingCheck(deps: Pick<AppDeps, 'readModels'>, alwaysServed: ReadonlySet<string>): Koa.Middleware {
  return async function serving(ctx, next) {
    if (!alwaysServed.has(ctx.path) && !(await deps.readModels.serving())) throw unavailable();
    await next();
  };
}

/** Innermost: nothing matched (unknown path or wrong method), counted in the catch-all bucket, then 404. */
export function notFoundFallback(deps: Pick<AppDeps, 'readModels' | 'limiter' | 'now'>): Koa.Middleware {
  return async function notFound(ctx) {
    ctx.state.routePattern = '*';
    await deps.readModels.fence();
    await resolveSession(ctx, deps);
    countRequest(ctx, deps.limiter, '*');
    throw new AppError({ type: 'NotFound' });
  };
}

/** A path's first segment, lower-cased (`/channels/x/messages` → `channels`, `/` → ``). */
function firstSegment(path: string): string {
  const end = path.indexOf('/', 1);
  return path.slice(1, end === -1 ? path.length : end).toLowerCase();
}

/**
 * The routes as one router per first path segment, chosen by the request's first segment, and one router of
 * every route for any other path. Answers exactly as the one router of every route would (a route only
 * matches paths whose first segment equals its own, case aside), but a request is tested against the few
 * routes of its resource instead of all of them (the router tests each route's pattern in turn and logs a
 * debug line for each: ~14 % of a send's allocations with every route in one router).
 */
export function routesBySegment(routes: readonly AnyRoute[], deps: AppDeps): Koa.Middleware {
  const all = new Router();
  mountRoutes(all, routes, deps);
  const allRoutes = all.routes() as unknown as Koa.Middleware;
  // A route whose first segment is a parameter could match any path: then every request tries them all.
  if (routes.some((r) => firstSegment(r.path).startsWith(':'))) return allRoutes;
  const groups = new Map<string, AnyRoute[]>();
  for (const r of routes) {
    const seg = firstSegment(r.path);
    groups.set(seg, [...(groups.get(seg) ?? []), r]);
  }
  const bySegment = new Map<string, Koa.Middleware>();
  for (const [seg, group] of groups) {
    const router = new Router();
    mountRoutes(router, group, deps);
    bySegment.set(seg, router.routes() as unknown as Koa.Middleware);
  }
  return function route(ctx, next) {
    return (bySegment.get(firstSegment(ctx.path)) ?? allRoutes)(ctx, next);
  };
}

/** Builds the API app. */
export function createApiApp(deps: AppDeps, routes: readonly AnyRoute[]): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true;

  app.use(clientAddressMiddleware(deps.config.trustProxy));
  app.use(httpMetrics('api'));
  app.use(requestLog(deps));
  app.use(closeUnreadRequests());
  app.use(rateLimitHeaders(deps.limiter));
  app.use(errorRenderer(() => deps.readModels.serving(true)));
  app.use(corsMiddleware());
  app.use(servingCheck(deps, ALWAYS_SERVED));
  app.use(routesBySegment(routes, deps));
  app.use(notFoundFallback(deps));
  return app;
}
