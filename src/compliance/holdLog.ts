/**
 * Legal holds read from the log (the `holds` stream), shared by the admin routes and the command line: the
 * holds as they stand, with the stream's revision to append against, and whether a target ever existed. A
 * target is looked up by its stream, so a deleted server, channel or account can still be held (its
 * messages stay in the log until retention erases them). A server channel that never had a stream of its own is
 * found through the read models (routes: a live one) or the log (command line: deleted ones too).
 */
import type { EventStore, ExpectedRevision } from '../eventstore/port.ts';
import { HOLDS_STREAM, type HoldTarget } from '../domain/hold/events.ts';
import { foldHolds, heldUsers, type HoldState } from '../domain/hold/state.ts';

/** Per store: the holds folded so far and the revision they reach (events of a stream never change once appended). */
const folded = new WeakMap<EventStore, { revision: number; holds: Map<string, HoldState> }>();

/** The cache of `store` brought up to the log: only the events appended since the last call are read. */
async function foldedNow(store: EventStore): Promise<{ revision: number; holds: Map<string, HoldState> }> {
  const cached = folded.get(store) ?? { revision: -1, holds: new Map<string, HoldState>() };
  const events = await store.readStream(HOLDS_STREAM, cached.revision < 0 ? {} : { fromRevision: cached.revision + 1 });
  // Another call may have folded further meanwhile: fold only what is past the cache as it is now.
  const now = folded.get(store) ?? cached;
  const fresh = events.filter((e) => e.revision > now.revision);
  const next = fresh.length === 0 ? now : { revision: fresh[fresh.length - 1]!.revision, holds: foldHolds(fresh, now.holds) };
  folded.set(store, next);
  return next;
}

/**
 * The holds folded from the log, and the revision a command decided on them appends against. Each call reads
 * only the events appended since the previous call on the same store (one read of an empty tail when nothing
 * changed) and answers a copy, so a caller may keep it while others fold further.
 */
export async function loadHolds(store: EventStore): Promise<{ holds: Map<string, HoldState>; expected: ExpectedRevision }> {
  const next = await foldedNow(store);
  const holds = new Map([...next.holds].map(([id, h]) => [id, { ...h }]));
  return { holds, expected: next.revision < 0 ? 'no_stream' : next.revision };
}

/** The users a standing hold covers, as the log says now (the personal-data boundary's question). */
export async function heldUsersNow(store: EventStore): Promise<Set<string>> {
  return heldUsers((await foldedNow(store)).holds);
}

/** The stream a target's existence is read from first: `server-<id>`, `channel-<id>` (DMs, groups, edited server channels) or `account-<id>`. */
export function targetStream(t: HoldTarget): string {
  return t.type === 'server' ? `server-${t.id}` : t.type === 'channel' ? `channel-${t.id}` : `account-${t.id}`;
}

/**
 * Whether the target exists or existed: its stream is in the log; for a channel, else `known` (the routes ask
 * the read models for a live server channel), else the server event that created it, found by reading the log
 * (the command line: a server channel lives in its server's stream until its own settings change).
 */
export async function targetExists(store: EventStore, t: HoldTarget, known?: (t: HoldTarget) => Promise<boolean>): Promise<boolean> {
  if ((await store.streamRevision(targetStream(t))) >= 0) return true;
  if (t.type !== 'channel') return false;
  if (known) return known(t);
  for await (const e of store.readAll()) {
    if (e.type === 'ServerCreated' && (e.data as { channels: Array<{ _id: string }> }).channels.some((c) => c._id === t.id)) return true;
    if (e.type === 'ChannelCreated' && (e.data as { channel: { _id: string } }).channel._id === t.id) return true;
  }
  return false;
}

/** A hold as the admin routes answer it. */
export function presentHold(h: HoldState): HoldState & { active: boolean } {
  return { ...h, active: h.lifted_at === null };
}
