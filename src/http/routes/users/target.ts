/** Path user ids of the user routes: `@me` (needs a caller) or a ULID; anything else is 404 NotFound before any lookup. */
import { AppError } from '../../../errors.ts';
import { isUlid } from '../../../ids.ts';
import type { Caller } from '../../route.ts';

/** The user id a `:user_id` path segment names. */
export function targetUserId(raw: string | undefined, caller: Caller | undefined): string {
  if (raw === '@me' && caller) return caller.userId;
  if (raw === undefined || !isUlid(raw)) throw new AppError({ type: 'NotFound' });
  return raw;
}
