/**
 * Shared pieces of the instance moderation routes (/admin/…): the caller's instance role, the sanction of an
 * account, and the bodies' reason field. Authorization comes first in every route: its `authorize:
 * staffOnly(…)` answers a caller without the instance role 403 NotPrivileged before the body is read and before
 * the body, the query or any path id is validated or looked up (a non-admin learns nothing from a 400).
 */
import { z } from 'zod';
import { requireStaff } from '../../../domain/moderation/decide.ts';
import { ModReason, type InstanceRole } from '../../../domain/moderation/events.ts';
import type { SanctionState } from '../../../domain/moderation/state.ts';
import { AppError } from '../../../errors.ts';
import { isUlid } from '../../../ids.ts';
import { rm } from '../../../readmodel/keys.ts';
import type { AppDeps } from '../../deps.ts';
import type { Caller, RouteContext } from '../../route.ts';

/** The instance role of a user, or null. */
export async function instanceRole(deps: Pick<AppDeps, 'readModels'>, userId: string): Promise<InstanceRole | null> {
  const role = await deps.readModels.hgetJson<string>(rm.instanceStaff(), userId);
  return role === 'admin' || role === 'moderator' ? role : null;
}

/** The caller's instance role, which must be at least `need` (403 NotPrivileged). */
export async function callerRole(rc: Pick<RouteContext<unknown, unknown>, 'deps' | 'caller'>, need: InstanceRole = 'moderator'): Promise<InstanceRole> {
  return requireStaff(await instanceRole(rc.deps, rc.caller.userId), need);
}

/** A route's `authorize`: the caller's instance role must be at least `need` (403 NotPrivileged), checked before validation. */
export function staffOnly(need: InstanceRole): (deps: Pick<AppDeps, 'readModels'>, caller: Caller) => Promise<void> {
  return async (deps, caller) => {
    requireStaff(await instanceRole(deps, caller.userId), need);
  };
}

/** A path id that must be a ULID (404 NotFound otherwise, before any lookup). */
export function pathId(value: string | undefined): string {
  if (value === undefined || !isUlid(value)) throw new AppError({ type: 'NotFound' });
  return value;
}

/** The sanction read model of an account (null: never sanctioned). */
export function loadSanction(deps: Pick<AppDeps, 'readModels'>, userId: string): Promise<SanctionState | null> {
  return deps.readModels.getJson<SanctionState>(rm.sanction(userId));
}

/** A body with only the required reason. */
export const ReasonBody = z.object({ reason: ModReason }).strict();
