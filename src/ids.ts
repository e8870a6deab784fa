/** Identifier generation: ULIDs for every object (clients read timestamps out of them), UUIDs for events. */
import { randomUUID } from 'node:crypto';
import { monotonicFactory, decodeTime, isValid } from 'ulid';

const next = monotonicFactory();

/** A new ULID (monotonic within this process). */
export function newId(now?: number): string {
  return next(now);
}

/** A new UUID for an event id. */
export function newEventId(): string {
  return randomUUID();
}

/** True for a 26-character Crockford base32 ULID. */
export function isUlid(s: string): boolean {
  return s.length === 26 && isValid(s);
}

/** Milliseconds since the epoch encoded in a ULID. */
export function ulidTime(id: string): number {
  return decodeTime(id);
}
