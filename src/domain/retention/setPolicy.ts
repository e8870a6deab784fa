/** SetRetentionPolicy: an instance admin or the operator sets (or clears, with null) one policy. */
import type { DomainEvent } from '../events.ts';
import type { RetentionScope } from './events.ts';
import { policyOf, type RetentionPolicies } from './state.ts';

/** The events of setting `scope`'s policy to `maxAgeSeconds`: none when it is that already (nothing to audit). */
export function decideSetPolicy(state: RetentionPolicies, scope: RetentionScope, maxAgeSeconds: number | null): DomainEvent[] {
  if (policyOf(state, scope) === maxAgeSeconds) return [];
  return [{ type: 'RetentionPolicySet', data: { scope, max_age_seconds: maxAgeSeconds } }];
}
