/**
 * Shared pieces of the retention routes (/admin/retention…, instance admins only): the body, the policies as
 * answered, and setting one policy through the command executor (read-your-writes: the answer shows it).
 */
import { z } from 'zod';
import { INSTANCE_SCOPE } from '../../../domain/moderation/events.ts';
import { MaxAgeSeconds, RETENTION_STREAM, type RetentionScope } from '../../../domain/retention/events.ts';
import { decideSetPolicy } from '../../../domain/retention/setPolicy.ts';
import { emptyPolicies, type RetentionPolicies } from '../../../domain/retention/state.ts';
import { loadPolicies } from '../../../compliance/retentionPolicies.ts';
import { rm } from '../../../readmodel/keys.ts';
import type { RouteContext } from '../../route.ts';

/** `{max_age_seconds}`: a positive number of seconds, or null (keep forever; on an override: remove it). */
export const RetentionBody = z.object({ max_age_seconds: MaxAgeSeconds }).strict();

/** The policies as the admin routes answer them. */
export interface RetentionAnswer {
  instance: { max_age_seconds: number | null };
  servers: Array<{ id: string; max_age_seconds: number }>;
  channels: Array<{ id: string; max_age_seconds: number }>;
}

/** The answer of the policies in the read model. */
export async function presentPolicies(rc: Pick<RouteContext<unknown, unknown>, 'deps'>): Promise<RetentionAnswer> {
  const p = (await rc.deps.readModels.getJson<RetentionPolicies>(rm.retentionPolicies())) ?? emptyPolicies();
  const list = (m: Record<string, number>) => Object.entries(m).sort(([a], [b]) => (a < b ? -1 : 1)).map(([id, max_age_seconds]) => ({ id, max_age_seconds }));
  return { instance: { max_age_seconds: p.instance }, servers: list(p.servers), channels: list(p.channels) };
}

/** Sets one policy (the caller is authorized and the target resolved) and answers every policy. */
export async function setPolicyRoute(rc: Pick<RouteContext<unknown, unknown>, 'deps' | 'meta'>, scope: RetentionScope, maxAgeSeconds: number | null): Promise<RetentionAnswer> {
  await rc.deps.executor.execute(rc.meta, [RETENTION_STREAM], async () => {
    const p = await loadPolicies(rc.deps.store);
    return {
      writes: [{ stream: RETENTION_STREAM, scope: INSTANCE_SCOPE, expected: p.revision < 0 ? 'no_stream' : p.revision, events: decideSetPolicy(p, scope, maxAgeSeconds) }],
      result: undefined,
    };
  });
  return presentPolicies(rc);
}
