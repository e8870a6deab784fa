/**
 * Record sets: a sorted set whose members are JSON objects that begin with their id (`{"_id":"<id>"`), all
 * scored 0. Redis orders members of equal score by their bytes, so by id; with fixed-length ids (ULIDs) one
 * id's record is the lex range below, pages are ZRANGEBYLEX … LIMIT, and a page comes back in one reply with
 * no second lookup. A channel's messages are one (`rm.channelHistory`).
 */

/** What every record of an id begins with. */
export function recordHead(id: string): string {
  return `{"_id":"${id}"`;
}

/** The lex range [min, max] holding exactly the record of one id (`{"_id":"<id>"` up to, not with, `…<id>#`). */
export function recordRange(id: string): [string, string] {
  return [`[{"_id":"${id}"`, `({"_id":"${id}#`];
}

/** Lex bound: records of ids below `id` (as a max). */
export function belowId(id: string): string {
  return `({"_id":"${id}`;
}

/** Lex bound: records of ids above `id` (as a min); `#` sorts after the `"` that closes every record's id. */
export function aboveId(id: string): string {
  return `({"_id":"${id}#`;
}

/** Lex bound: the record of `id` and those above it (as a min). */
export function fromId(id: string): string {
  return `[{"_id":"${id}"`;
}
