/**
 * Declarative routes. Every endpoint is one `defineRoute({...})` in its own file; the registry of all of
 * them is what the app mounts, what the rate-limit classification test walks and what the authorization
 * and fuzzing suites enumerate.
 */
import type Koa from 'koa';
import type { z } from 'zod';
import type { CommandMeta } from '../commands.ts';
import type { AppDeps } from './deps.ts';
import type { ParamForm } from './params.ts';

/** HTTP methods the API uses. */
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** The authenticated caller. */
export interface Caller {
  /** The user (= account) id. */
  userId: string;
  sessionId: string;
  /** The SHA-256 of the token (for revocation checks). */
  tokenHash: string;
  /** Present when the caller is a bot (authenticated by `X-Bot-Token`): its owner. */
  bot?: { owner: string };
}

/** What a handler receives. */
export interface RouteContext<B, Q> {
  ctx: Koa.Context;
  deps: AppDeps;
  body: B;
  query: Q;
  params: Record<string, string>;
  /** The caller; present when `auth` is not 'none'. */
  caller: Caller;
  /** Metadata for events appended by this request. */
  meta: CommandMeta;
  requestId: string;
}

/** Returned by a handler whose answer is JSON text already (written out as is, `application/json`). */
export class RawJson {
  constructor(readonly text: string | Buffer) {}
}

/** Returned by a handler that answers 204 No Content. */
export const NO_CONTENT = Symbol('no content');

/** One endpoint. */
export interface RouteDef<B = unknown, Q = unknown> {
  method: Method;
  /** koa-router pattern, e.g. `/servers/:server_id/roles/:role_id`. */
  path: string;
  /**
   * `none`: no session needed; `session`: any valid session (onboarding routes);
   * `user`: a session whose account has completed onboarding (everything else).
   */
  auth: 'none' | 'session' | 'user';
  /**
   * Strict body schema (unknown fields → 400 FailedValidation naming them). Only a route with a body schema
   * reads the request body (after its rate limit was counted).
   */
  body?: z.ZodType<B>;
  /**
   * Forms of path parameters that differ from the default (`src/http/params.ts`: `id` and `*_id` are ULIDs,
   * anything else bounded text); a value not of its form is 404 NotFound before anything is looked up.
   */
  params?: Readonly<Record<string, ParamForm>>;
  /** Query schema (strings; stoat.js appends `?` and sends booleans as strings). */
  query?: z.ZodType<Q>;
  /** Stoat refuses bots here (400 `IsBot`, after authentication): creating servers, friend requests, acks … */
  noBots?: boolean;
  /**
   * Checked right after authentication, before the body is read and before the body and query are validated:
   * a caller it refuses (e.g. 403 NotPrivileged on an /admin route) learns nothing from a 400 and has nothing of
   * its request parsed. The handler may check again to get what it needs (the caller's role).
   */
  authorize?(deps: AppDeps, caller: Caller): Promise<void>;
  /** The permission bits this route may check (documentation; the authorization suite reads it). */
  permissions?: readonly string[];
  /**
   * Called before rate limiting: true leaves the request out of its bucket (its headers still show the
   * counter). For requests proven to come from a trusted peer, e.g. a LiveKit webhook whose signature holds.
   */
  unmetered?(ctx: Koa.Context, deps: AppDeps): Promise<boolean>;
  handler(rc: RouteContext<B, Q>): Promise<unknown>;
}

/** Helper that keeps the body and query types of a route. */
export function defineRoute<B = undefined, Q = undefined>(def: RouteDef<B, Q>): RouteDef<B, Q> {
  return def;
}

/** A route of any body and query type. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteDef<any, any>;
