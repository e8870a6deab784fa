/**
 * The gateway's per-process cache of the permission-relevant facts of a server: the stored server (default
 * permissions, roles, owner, channel list), its channels (overrides) and the members of the users that have
 * sockets here. It exists so that deciding which channels a socket may see costs no Redis round trip per
 * socket: an entry is loaded once, kept while a local socket is subscribed to the server, and invalidated
 * by the client events themselves (the dispatcher calls the methods below as the events pass).
 *
 * The read models may be ahead of the event being delivered (the projector commits before the gateway reads
 * the stream); a reload then sees newer facts, which later events confirm, so the cache only ever moves
 * forward.
 */
import { presentChannel, type ChannelState } from '../domain/channel/state.ts';
import type { MemberObject, ServerChannelObject } from '../domain/models.ts';
import { channelPermissionsOf } from '../domain/server/permissions.ts';
import type { ServerState } from '../domain/server/state.ts';
import { Permission } from '../permissions/bits.ts';
import { has } from '../permissions/calculate.ts';
import { rm } from '../readmodel/keys.ts';
import type { ReadModels } from '../readmodel/reader.ts';
import { withLastMessages } from '../readmodel/lastMessages.ts';

/** The cached facts of one server. */
export interface ServerFacts {
  server: ServerState;
  /** The server's channels by id. */
  channels: Map<string, ChannelState>;
  /** Members by user id, filled on demand (null = not a member). */
  members: Map<string, MemberObject | null>;
}

/** Counters for tests and diagnostics. */
export interface FactsStats {
  /** Redis reads made by the cache (a server load is one read). */
  loads: number;
}

/** The per-process facts cache. */
export class FactsCache {
  private readonly entries = new Map<string, ServerFacts>();
  readonly stats: FactsStats = { loads: 0 };

  constructor(private readonly readModels: ReadModels) {}

  /**
   * Channels as a ChannelCreate shows them: with their `last_message_id`, read in one round trip past the fact
   * cache like the facts themselves (the read models are at or ahead of the event being delivered).
   */
  presentChannels(channels: readonly ChannelState[]): Promise<Array<ServerChannelObject & { last_message_id?: string }>> {
    return withLastMessages(this.readModels.direct, channels.map(presentChannel));
  }

  /** The cached facts of a server (loaded when missing); null when the server does not exist. */
  async get(serverId: string): Promise<ServerFacts | null> {
    const cached = this.entries.get(serverId);
    if (cached) return cached;
    this.stats.loads++;
    const server = await this.readModels.direct.getJson<ServerState>(rm.server(serverId));
    if (!server) return null;
    const channels = await this.loadChannels(server.channels);
    const facts: ServerFacts = { server, channels, members: new Map() };
    // A concurrent load may have finished first; keep one entry.
    const raced = this.entries.get(serverId);
    if (raced) return raced;
    this.entries.set(serverId, facts);
    return facts;
  }

  private async loadChannels(ids: string[]): Promise<Map<string, ChannelState>> {
    const values = await this.readModels.direct.mgetJson<ChannelState>(ids.map((id) => rm.channel(id)));
    const out = new Map<string, ChannelState>();
    values.forEach((c, i) => {
      if (c) out.set(ids[i]!, c);
    });
    return out;
  }

  /** A member of a cached server (loaded when not known yet). */
  async member(facts: ServerFacts, userId: string): Promise<MemberObject | null> {
    if (facts.members.has(userId)) return facts.members.get(userId)!;
    this.stats.loads++;
    const m = await this.readModels.direct.hgetJson<MemberObject>(rm.serverMembers(facts.server._id), userId);
    facts.members.set(userId, m);
    return m;
  }

  /** Whether the cache holds the server. */
  has(serverId: string): boolean {
    return this.entries.has(serverId);
  }

  /** Forgets a server (deleted, or no local socket is subscribed any more). */
  drop(serverId: string): void {
    this.entries.delete(serverId);
  }

  /** Re-reads the stored server of a cached entry (its default permissions, roles or channel list changed). */
  async reloadServer(serverId: string): Promise<void> {
    const facts = this.entries.get(serverId);
    if (!facts) return;
    this.stats.loads++;
    const server = await this.readModels.direct.getJson<ServerState>(rm.server(serverId));
    if (!server) {
      this.entries.delete(serverId);
      return;
    }
    facts.server = server;
    const missing = server.channels.filter((id) => !facts.channels.has(id));
    if (missing.length > 0) for (const [id, c] of await this.loadChannels(missing)) facts.channels.set(id, c);
    for (const id of facts.channels.keys()) if (!server.channels.includes(id)) facts.channels.delete(id);
  }

  /** Re-reads everything of a cached entry (a role deletion changed roles, members and overrides at once). */
  async reloadAll(serverId: string): Promise<void> {
    if (!this.entries.has(serverId)) return;
    this.entries.delete(serverId);
    await this.get(serverId);
  }

  /** Re-reads one channel of a cached entry (its overrides changed). */
  async reloadChannel(serverId: string, channelId: string): Promise<void> {
    const facts = this.entries.get(serverId);
    if (!facts) return;
    this.stats.loads++;
    const c = await this.readModels.direct.getJson<ChannelState>(rm.channel(channelId));
    if (c) facts.channels.set(channelId, c);
    else facts.channels.delete(channelId);
  }

  /** A channel created (the event carries the whole channel). */
  putChannel(serverId: string, channel: ChannelState): void {
    const facts = this.entries.get(serverId);
    if (!facts) return;
    facts.channels.set(channel._id, channel);
    if (!facts.server.channels.includes(channel._id)) facts.server = { ...facts.server, channels: [...facts.server.channels, channel._id] };
  }

  /** A channel deleted. */
  deleteChannel(serverId: string, channelId: string): void {
    const facts = this.entries.get(serverId);
    if (!facts) return;
    facts.channels.delete(channelId);
    if (facts.server.channels.includes(channelId)) facts.server = { ...facts.server, channels: facts.server.channels.filter((id) => id !== channelId) };
  }

  /** A member joined (the event carries the member) or left (null). */
  putMember(serverId: string, userId: string, member: MemberObject | null): void {
    this.entries.get(serverId)?.members.set(userId, member);
  }

  /** A member changed: forget it, so the next use reads the stored member. */
  forgetMember(serverId: string, userId: string): void {
    this.entries.get(serverId)?.members.delete(userId);
  }

  /** Whether `userId` (with its member object) may view a channel of the server at `nowMs`. */
  canView(facts: ServerFacts, userId: string, member: MemberObject | null, channelId: string, nowMs: number): boolean {
    const channel = facts.channels.get(channelId);
    if (!channel || !member) return false;
    return has(channelPermissionsOf(facts.server, userId, member, channel, nowMs), Permission.ViewChannel);
  }

  /** Whether `userId` holds `bit` in the channel (false for a missing channel or member). */
  holds(facts: ServerFacts, userId: string, member: MemberObject | null, channelId: string, bit: bigint, nowMs: number): boolean {
    const channel = facts.channels.get(channelId);
    if (!channel || !member) return false;
    return has(channelPermissionsOf(facts.server, userId, member, channel, nowMs), bit);
  }

  /** The ids of the server's channels `userId` may view, in the server's order. */
  visibleIds(facts: ServerFacts, userId: string, member: MemberObject | null, nowMs: number): string[] {
    return facts.server.channels.filter((id) => this.canView(facts, userId, member, id, nowMs));
  }

  /** Number of cached servers. */
  get size(): number {
    return this.entries.size;
  }
}
