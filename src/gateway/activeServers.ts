/**
 * The servers a socket marked active with `Subscribe {server_id}` (bonfire's `active_servers`: an
 * `LruTimeCache` of 900 s and capacity 5, crates/bonfire/src/events/state.rs). A server's typing and its
 * members' presence reach a socket only while the server is active for it. Subscribing again refreshes the
 * entry; a sixth server evicts the least recently subscribed one; an entry older than the TTL has expired.
 */

/** How long one `Subscribe` keeps a server active (ms): bonfire's `Duration::from_secs(900)`. */
export const SUBSCRIBE_TTL_MS = 900_000;
/** Servers one socket may have active at once: bonfire's capacity 5. */
export const SUBSCRIBE_MAX = 5;

/** One socket's active servers (insertion order is recency order). */
export class ActiveServers {
  /** Server id → when it was last subscribed (ms), least recent first. */
  private readonly since = new Map<string, number>();

  constructor(
    private readonly ttlMs = SUBSCRIBE_TTL_MS,
    private readonly max = SUBSCRIBE_MAX,
  ) {}

  /** Marks a server active at `now` (refreshing it); evicts the least recently subscribed beyond the limit. */
  subscribe(serverId: string, now: number): void {
    this.prune(now);
    this.since.delete(serverId);
    this.since.set(serverId, now);
    while (this.since.size > this.max) this.since.delete(this.since.keys().next().value as string);
  }

  /** Whether the server is active at `now`. */
  has(serverId: string, now: number): boolean {
    const at = this.since.get(serverId);
    return at !== undefined && now - at < this.ttlMs;
  }

  /** Whether one of the servers is active at `now`. */
  hasAny(serverIds: Iterable<string>, now: number): boolean {
    for (const id of serverIds) if (this.has(id, now)) return true;
    return false;
  }

  /** Forgets a server (the socket left it or it was deleted). */
  forget(serverId: string): void {
    this.since.delete(serverId);
  }

  /** The active servers at `now`, least recently subscribed first. */
  list(now: number): string[] {
    return [...this.since].filter(([, at]) => now - at < this.ttlMs).map(([id]) => id);
  }

  private prune(now: number): void {
    for (const [id, at] of this.since) if (now - at >= this.ttlMs) this.since.delete(id);
  }
}
