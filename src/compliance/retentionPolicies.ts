/**
 * Reading and changing the retention policies from the log (the `retention` stream, folded with
 * `evolvePolicies`): shared by `npm run accounts -- retention …`, the admin routes and the sweep, which read the
 * stream itself rather than the read model, so a change is never missed by a lagging projection.
 */
import { randomUUID } from 'node:crypto';
import { toNewEvent, upcast } from '../domain/events.ts';
import { INSTANCE_SCOPE } from '../domain/moderation/events.ts';
import { RETENTION_STREAM, type RetentionScope } from '../domain/retention/events.ts';
import { decideSetPolicy } from '../domain/retention/setPolicy.ts';
import { emptyPolicies, evolvePolicies, type RetentionPolicies } from '../domain/retention/state.ts';
import { WrongExpectedRevisionError, type EventStore } from '../eventstore/port.ts';

/** The policies as the log has them now. */
export async function loadPolicies(store: Pick<EventStore, 'readStream'>): Promise<RetentionPolicies> {
  let p = emptyPolicies();
  let from = 0;
  for (;;) {
    const page = await store.readStream(RETENTION_STREAM, { fromRevision: from, maxCount: 1000 });
    for (const e of page) p = evolvePolicies(p, upcast(e), e.revision);
    if (page.length < 1000) return p;
    from = page[page.length - 1]!.revision + 1;
  }
}

/**
 * Sets one policy by appending `RetentionPolicySet` at the revision it was decided on (a concurrent change
 * makes it decide again, five times at most); false when the policy was that already (nothing appended).
 */
export async function setPolicy(store: EventStore, scope: RetentionScope, maxAgeSeconds: number | null, meta: { actor: string | null; requestId: string; reason?: string }, now = () => Date.now()): Promise<boolean> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const p = await loadPolicies(store);
    const events = decideSetPolicy(p, scope, maxAgeSeconds);
    if (events.length === 0) return false;
    const metadata = { actor: meta.actor, requestId: meta.requestId, at: new Date(now()).toISOString(), scope: INSTANCE_SCOPE, ...(meta.reason !== undefined ? { reason: meta.reason } : {}) };
    try {
      await store.append(RETENTION_STREAM, events.map((e) => toNewEvent(e, metadata)), p.revision < 0 ? 'no_stream' : p.revision);
      return true;
    } catch (err) {
      if (err instanceof WrongExpectedRevisionError) continue;
      throw err;
    }
  }
  throw new Error('the retention policies changed concurrently five times; try again');
}

/** A request id for an operator's change. */
export function cliRequestId(): string {
  return `cli-${randomUUID()}`;
}
