/**
 * What a projection is. A projection declares the event types it handles and applies one event at a time
 * to a `ProjectionTx`. The runner batches events, and commits every write of a batch together with the
 * partition's checkpoint in one MULTI (on a cluster one per slot, each with the partition's checkpoint there), so a
 * crash never applies an event twice or skips one.
 *
 * Rules for projection authors:
 * - Read only keys your partition owns (keys derived from the event's own scope). Sets and sorted sets
 *   shared across scopes (e.g. a user's server list) are written with commutative ops only.
 * - Never read a clock or the network: everything comes from the event (its data and metadata).
 * - Replaying the same events from zero gives the same keys (idempotent by construction).
 * - Every key lives in the slot its name gives (`shardOfKey` in src/readmodel/keys.ts: the shard of the server,
 *   user, channel or object it is named by; the main slot for instance-wide singletons), and on a cluster each
 *   slot commits in a MULTI of its own; a crash between them is finished from the home slot's redo log, not by
 *   recomputing, so which slot a read goes to does not matter. A Lua script's keys (`tx.eval`) must share one slot:
 *   the keys of one entity do;
 *   docs/ARCHITECTURE.md "Redis Cluster".
 */
import type { StoredEvent } from '../src/domain/events.ts';

/** One read-model projection. */
export interface Projection {
  /** Unique name (for logs). */
  readonly name: string;
  /**
   * Event types this projection handles; others never reach `apply`. `'all'` = every known type (for
   * aggregate read models that must track the revision of every event of their stream).
   */
  readonly handles: readonly string[] | 'all';
  /** Applies one event. Reads see the writes of earlier events in the same batch. */
  apply(event: StoredEvent, tx: ProjectionTx): void | Promise<void>;
}

/** Reads and buffered writes of one batch. Keys are logical (the runner adds the prefix and generation). */
export interface ProjectionTx {
  /** A JSON value stored with `setJson`, or null. */
  getJson<T>(key: string): Promise<T | null>;
  /** Stores a JSON value. */
  setJson(key: string, value: unknown): void;
  /** Deletes a key of any type. */
  del(key: string): void;
  /** A JSON value stored in a hash field, or null. */
  hgetJson<T>(key: string, field: string): Promise<T | null>;
  /** Every field of a hash (JSON values), including this batch's writes. */
  hgetallJson<T>(key: string): Promise<Map<string, T>>;
  /** Stores a JSON value in a hash field. */
  hsetJson(key: string, field: string, value: unknown): void;
  /** Removes hash fields. */
  hdel(key: string, ...fields: string[]): void;
  /**
   * One record of a record set (src/readmodel/records.ts: a sorted set of JSON objects each beginning with
   * `{"_id":"<id>"`), including this batch's writes; null when absent.
   */
  rgetJson<T>(key: string, id: string): Promise<T | null>;
  /** Stores the record of an id in a record set, replacing the one it had. `value` must serialise with `_id` first. */
  rsetJson(key: string, id: string, value: unknown): void;
  /**
   * Adds the record of an id that has none yet (a new message: its id was never in the set): one ZADD, with no
   * removal of an earlier record first. When this batch already wrote or removed that id, it replaces as `rsetJson`.
   */
  raddJson(key: string, id: string, value: unknown): void;
  /** Removes the record of an id from a record set. */
  rdel(key: string, id: string): void;
  /** Adds set members. */
  sadd(key: string, ...members: string[]): void;
  /** Removes set members. */
  srem(key: string, ...members: string[]): void;
  /** Members of a set, including this batch's writes. */
  smembers(key: string): Promise<Set<string>>;
  /** Adds a sorted-set member with a score (use score 0 for lexicographic indexes). */
  zadd(key: string, score: number, member: string): void;
  /** Removes sorted-set members. */
  zrem(key: string, ...members: string[]): void;
  /**
   * Publishes a client event to the gateway (only in live mode; suppressed while rebuilding).
   * `route` says who may receive it; the gateway applies the permission filter. `payload.type` must be a
   * Revolt event type listed in `CLIENT_EVENT_TYPES` (src/gateway/protocol.ts) or an internal one of
   * `INTERNAL_EVENT_TYPES`; anything else is dropped by the gateway.
   */
  emit(route: ClientEventRoute, payload: Record<string, unknown>): void;
  /**
   * Runs a Lua script at commit time, inside the batch's MULTI (keys are logical; the runner prefixes them).
   * For read models written by more than one partition: the script reads and writes atomically against what
   * Redis holds then, so the outcome does not depend on which partition commits first. Its writes are not
   * visible to this batch's reads or the partition cache: never read such keys through the tx.
   */
  eval(script: string, keys: string[], args: string[]): void;
  /** The partition and generation this batch belongs to (diagnostics). */
  readonly partition: number;
  /** True while rebuilding from zero (emits are dropped). */
  readonly rebuilding: boolean;
}

/** Who may receive a client event. */
export type ClientEventRoute =
  /** Sockets of members of the server that can view the channel. */
  | { kind: 'channel'; serverId: string; channelId: string }
  /**
   * Sockets of members of the server. Deliver by subscription (the servers a socket was told about), not by
   * re-reading the members at delivery time: `ServerMemberLeave` and `ServerDelete` are emitted after the
   * membership or the server is gone, and the member who left must still receive them (Revolt's topics).
   * `ChannelDelete` also uses this route (the channel is gone, so no channel permission can be computed).
   */
  | { kind: 'server'; serverId: string }
  /** Sockets of one user. */
  | { kind: 'user'; userId: string }
  /** Sockets of every user that shares a server with the user (and the user). */
  | { kind: 'userPresence'; userId: string }
  /**
   * Sockets of the listed users: the recipients of a private channel (Saved Notes, DM, group) for its channel
   * and message events (`channelId` names it, so typing and the socket's private-channel set follow).
   */
  | { kind: 'users'; userIds: string[]; channelId?: string };
