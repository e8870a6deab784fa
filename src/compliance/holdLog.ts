/**
 * Legal holds read from the log (the `holds` stream), shared by the admin routes and the command line: the
 * holds as they stand, with the stream's revision to append against, and whether a target ever existed. A
 * target is looked up by its stream, so a deleted server, channel or account can still be held (its
 * messages stay in the log until retention erases them).
 */
import type { EventStore, ExpectedRevision } from '../eventstore/port.ts';
import { HOLDS_STREAM, type HoldTarget } from '../domain/hold/events.ts';
import { foldHolds, type HoldState } from '../domain/hold/state.ts';

/** The holds folded from the log, and the revision a command decided on them appends against. */
export async function loadHolds(store: EventStore): Promise<{ holds: Map<string, HoldState>; expected: ExpectedRevision }> {
  const events = await store.readStream(HOLDS_STREAM);
  return { holds: foldHolds(events), expected: events.length === 0 ? 'no_stream' : events[events.length - 1]!.revision };
}

/** The stream a target's existence is read from: `server-<id>`, `channel-<id>` (DMs and groups too) or `account-<id>`. */
export function targetStream(t: HoldTarget): string {
  return t.type === 'server' ? `server-${t.id}` : t.type === 'channel' ? `channel-${t.id}` : `account-${t.id}`;
}

/** Whether the target's stream exists in the log (it was created, whether or not it was deleted since). */
export async function targetExists(store: EventStore, t: HoldTarget): Promise<boolean> {
  return (await store.streamRevision(targetStream(t))) >= 0;
}

/** A hold as the admin routes answer it. */
export function presentHold(h: HoldState): HoldState & { active: boolean } {
  return { ...h, active: h.lifted_at === null };
}
