/**
 * Media server routes: one small file per endpoint, each a `MediaRoute`. The media app mounts them with the
 * same session, rate-limit and authentication steps as the API (`src/http/app.ts`); a route that is not
 * `counted` spends nothing (file downloads: a page showing fifty avatars must not hit the catch-all limit).
 */
import type Koa from 'koa';
import type { Caller } from '../http/route.ts';
import type { MediaDeps } from './deps.ts';
import type { ParamForm } from '../http/params.ts';

/** One media endpoint. */
export interface MediaRoute {
  method: 'GET' | 'POST';
  /** koa-router pattern; for uploads the concrete path (`/attachments`), which is also the rate-limit key. */
  path: string;
  /** `none`: anyone; `user`: an onboarded user's session (`X-Session-Token`). */
  auth: 'none' | 'user';
  /** Forms of path parameters other than the default (`src/http/params.ts`); a malformed one is 404. */
  params?: Readonly<Record<string, ParamForm>>;
  /** Whether the request is counted in its rate-limit bucket (the headers are sent either way). */
  counted: boolean;
  /** Answers the request (sets status, headers and body itself). */
  handle(ctx: Koa.Context, deps: MediaDeps, caller: Caller | undefined): Promise<void>;
}
