/**
 * The retention policies (read model `retention:policies`, and what the sweep, the routes and the CLI fold from
 * the `retention` stream): the instance default and the overrides of servers and server channels, in seconds.
 * A channel's policy is its own override, else its server's, else the instance default; DMs, groups and Saved
 * Notes follow the instance default. Null: keep forever.
 */
import type { DomainEvent } from '../events.ts';
import { own, setOwn } from '../../own.ts';

/** The policies and the revision of the `retention` stream they reflect. */
export interface RetentionPolicies {
  /** The instance default (seconds), null = forever. */
  instance: number | null;
  /** Server id → seconds. */
  servers: Record<string, number>;
  /** Server channel id → seconds. */
  channels: Record<string, number>;
  /** Revision of `retention` (-1: no policy was ever set), the expected revision of the next change. */
  revision: number;
}

/** No policy: everything is kept. */
export function emptyPolicies(): RetentionPolicies {
  return { instance: null, servers: {}, channels: {}, revision: -1 };
}

/** Applies one event of the `retention` stream. */
export function evolvePolicies(s: RetentionPolicies, e: DomainEvent, revision: number): RetentionPolicies {
  if (e.type !== 'RetentionPolicySet') return { ...s, revision };
  const out: RetentionPolicies = { instance: s.instance, servers: { ...s.servers }, channels: { ...s.channels }, revision };
  const { scope, max_age_seconds: age } = e.data;
  if (scope.type === 'instance') out.instance = age;
  else {
    const map = scope.type === 'server' ? out.servers : out.channels;
    if (age === null) delete map[scope.id];
    else setOwn(map, scope.id, age);
  }
  return out;
}

/** The policy of one channel (seconds, null = forever): `server` is null for DMs, groups and Saved Notes. */
export function effectivePolicy(p: RetentionPolicies, channel: string, server: string | null): number | null {
  if (server === null) return p.instance;
  return own(p.channels, channel) ?? own(p.servers, server) ?? p.instance;
}

/** The policy currently set on one target (null: none). */
export function policyOf(p: RetentionPolicies, scope: { type: 'instance' } | { type: 'server' | 'channel'; id: string }): number | null {
  if (scope.type === 'instance') return p.instance;
  return own(scope.type === 'server' ? p.servers : p.channels, scope.id) ?? null;
}
