/**
 * The dispatcher: which local socket receives which client event, and in what form (bonfire's topics and
 * per-socket rewriting, reference §9).
 *
 * - `channel` route: sockets subscribed to the server that were told they can see the channel. ChannelCreate
 *   and ChannelUpdate are judged by the permission engine on the cached facts: a channel that becomes
 *   visible arrives as ChannelCreate, one that becomes hidden as ChannelDelete.
 * - `server` route: sockets subscribed to the server (by subscription, not membership: the member who left
 *   still gets its ServerMemberLeave). A change of server permissions (ServerUpdate with default
 *   permissions, ServerRoleUpdate of permissions or rank, ServerRoleDelete, ServerRoleRanksUpdate, the
 *   socket's own ServerMemberUpdate of roles or timeout) recomputes the socket's visible channels and
 *   arrives as `Bulk {v: [ChannelDelete…, ChannelCreate…, event]}`. ServerDelete, and ServerMemberLeave of
 *   the socket's own user, unsubscribe.
 * - `user` route: the user's sockets. ServerCreate subscribes them; the internal DeleteSession sends Logout
 *   to the sockets of that session and closes them.
 * - `userPresence` route: the user's sockets, their friends, pending requests and DM/group peers, and every
 *   socket subscribed to a server the user is in (user changes from the projector, and `UserUpdate {online}`
 *   from the presence stream; an Invisible user's coming online reaches their own sockets only, and a profile
 *   change tells the others `online` as they may see it). A profile change reaches a socket that only shares
 *   a server with the user while that server is active for it (`Subscribe`, bonfire's `<server>u` topic).
 *
 * Everything runs on one queue per process, so events keep their stream order (per channel: one server's
 * events come from one partition stream) and a socket's hand-over from Ready to live events loses nothing.
 */
import { gatewaySockets } from '../metrics/registry.ts';
import type { Logger } from 'pino';
import { userObject, type UserProfile } from '../domain/account/state.ts';
import type { ChannelState } from '../domain/channel/state.ts';
import type { MemberObject } from '../domain/models.ts';
import { rm } from '../readmodel/keys.ts';
import type { ReadModels } from '../readmodel/reader.ts';
import { FactsCache } from './facts.ts';
import type { RelationsState } from '../domain/relationship/state.ts';
import { recipientsOf, type PrivateChannelState } from '../domain/private/state.ts';
import { CLIENT_EVENT_TYPES, INTERNAL_EVENT_TYPES } from './protocol.ts';
import type { GatewaySocket, QueuedEvent } from './socket.ts';
import { profileForOthers } from '../http/routes/users/present.ts';
import { Permission } from '../permissions/bits.ts';

/** Client events about webhooks: delivered in a server channel only to sockets holding ManageWebhooks there. */
const WEBHOOK_EVENTS: ReadonlySet<string> = new Set(['WebhookCreate', 'WebhookUpdate', 'WebhookDelete']);

/** A client event with what the dispatcher worked out once for all sockets. */
interface Dispatched extends QueuedEvent {
  /** For `userPresence`: the servers the user is a member of. */
  presence?: Set<string>;
  /** For `userPresence`: the users who see it through a relationship (friends, pending requests, DM and group peers). */
  related?: Set<string>;
  /** For `userPresence`: a profile change (`UserUpdate` beyond `{online}`), which reaches server peers only through an active server. */
  gated?: boolean;
  /** The payload serialised (once, on first use). */
  text?: string;
  /** For a profile's `UserUpdate`: the payload for the others, with `online` as they may see it. */
  othersText?: string;
}

/** The event's payload as sent unchanged, serialised once for every socket. */
function textOf(ev: Dispatched): string {
  return (ev.text ??= JSON.stringify(ev.payload));
}

/** Options of the hub. */
export interface HubOptions {
  readModels: ReadModels;
  log: Logger;
  now: () => number;
  /** Most events queued for a socket while its Ready is built; beyond it the socket is dropped. */
  maxPending: number;
}

/** Whether a ServerMemberUpdate can change what its member may see. */
function memberPermissionsChanged(p: Record<string, unknown>): boolean {
  const data = (p.data ?? {}) as Record<string, unknown>;
  const clear = Array.isArray(p.clear) ? (p.clear as string[]) : [];
  return 'roles' in data || 'timeout' in data || clear.includes('Roles') || clear.includes('Timeout');
}

/** Whether a server-route event can change which channels members may see. */
function serverPermissionsChanged(p: Record<string, unknown>): boolean {
  const data = (p.data ?? {}) as Record<string, unknown>;
  switch (p.type) {
    case 'ServerUpdate':
      return 'default_permissions' in data;
    case 'ServerRoleUpdate':
      return 'permissions' in data || 'rank' in data;
    case 'ServerRoleDelete':
    case 'ServerRoleRanksUpdate':
      return true;
    default:
      return false;
  }
}

/** The local sockets and the delivery rules. */
export class Hub {
  readonly sockets = new Set<GatewaySocket>();
  readonly facts: FactsCache;
  private readonly byUser = new Map<string, Set<GatewaySocket>>();
  private readonly byServer = new Map<string, Set<GatewaySocket>>();
  /** Private channel id → the local sockets told about it (for typing). */
  private readonly byPrivate = new Map<string, Set<GatewaySocket>>();
  private readonly preparing = new Set<GatewaySocket>();
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly o: HubOptions) {
    this.facts = new FactsCache(o.readModels);
  }

  /** Runs `task` after everything queued before it; a failing task is logged and does not stop the queue. */
  enqueue(task: () => Promise<void> | void): Promise<void> {
    const run = this.chain.then(task).catch((err: unknown) => this.o.log.error({ err }, 'gateway task failed'));
    this.chain = run;
    return run;
  }

  /** A socket was accepted. */
  add(s: GatewaySocket): void {
    if (!this.sockets.has(s)) gatewaySockets.inc();
    this.sockets.add(s);
  }

  /** From now on the socket's events are queued until `activate` (call before reading anything for Ready). */
  startPreparing(s: GatewaySocket): void {
    this.preparing.add(s);
  }

  /**
   * Hands a socket over to live delivery: subscribes it to the servers Ready listed, then replays the events
   * that arrived meanwhile. Runs on the queue, so nothing slips between the replay and the live events.
   */
  activate(
    s: GatewaySocket,
    visible: Map<string, Set<string>>,
    privateChannels: Iterable<string> = [],
    relations: ReadonlyMap<string, string> = new Map(),
  ): Promise<void> {
    return this.enqueue(async () => {
      this.preparing.delete(s);
      if (s.state === 'closed') return;
      let users = this.byUser.get(s.userId);
      if (!users) this.byUser.set(s.userId, (users = new Set()));
      users.add(s);
      for (const [serverId, channels] of visible) this.subscribe(s, serverId, channels);
      for (const channelId of privateChannels) this.joinPrivate(s, channelId);
      for (const [id, status] of relations) s.relations.set(id, status);
      const pending = s.pending;
      s.pending = [];
      s.state = 'ready';
      for (const ev of pending) {
        if (s.state !== 'ready') break;
        await this.deliver(s, ev);
      }
    });
  }

  /** A socket closed: forget it everywhere. */
  remove(s: GatewaySocket): void {
    if (this.sockets.delete(s)) gatewaySockets.dec();
    this.preparing.delete(s);
    const users = this.byUser.get(s.userId);
    users?.delete(s);
    if (users?.size === 0) this.byUser.delete(s.userId);
    for (const serverId of [...s.servers.keys()]) this.unsubscribe(s, serverId);
    for (const channelId of [...s.privateChannels]) this.leavePrivate(s, channelId);
  }

  private joinPrivate(s: GatewaySocket, channelId: string): void {
    s.privateChannels.add(channelId);
    let set = this.byPrivate.get(channelId);
    if (!set) this.byPrivate.set(channelId, (set = new Set()));
    set.add(s);
  }

  private leavePrivate(s: GatewaySocket, channelId: string): void {
    s.privateChannels.delete(channelId);
    const set = this.byPrivate.get(channelId);
    set?.delete(s);
    if (set?.size === 0) this.byPrivate.delete(channelId);
  }

  /** The local sockets (Ready sent) told about a private channel. */
  privateSubscribersOf(channelId: string): GatewaySocket[] {
    return [...(this.byPrivate.get(channelId) ?? [])].filter((s) => s.state === 'ready');
  }

  private subscribe(s: GatewaySocket, serverId: string, channels: Set<string>): void {
    s.servers.set(serverId, channels);
    let set = this.byServer.get(serverId);
    if (!set) this.byServer.set(serverId, (set = new Set()));
    set.add(s);
  }

  private unsubscribe(s: GatewaySocket, serverId: string): void {
    s.servers.delete(serverId);
    s.active.forget(serverId);
    const set = this.byServer.get(serverId);
    set?.delete(s);
    if (set?.size === 0) {
      this.byServer.delete(serverId);
      // Nobody here needs the server's facts any more.
      this.facts.drop(serverId);
    }
  }

  /** The local sockets of a user that receive events (Ready sent). */
  socketsOf(userId: string): GatewaySocket[] {
    return [...(this.byUser.get(userId) ?? [])];
  }

  /** The local sockets subscribed to a server. */
  subscribersOf(serverId: string): GatewaySocket[] {
    return [...(this.byServer.get(serverId) ?? [])];
  }

  /** Dispatches one client event from the streams (call through `enqueue`, in stream order). */
  async dispatch(event: QueuedEvent): Promise<void> {
    const type = event.payload.type;
    if (!CLIENT_EVENT_TYPES.has(type) && !INTERNAL_EVENT_TYPES.has(type)) {
      this.o.log.warn({ type }, 'gateway: dropped an event of a type no client knows');
      return;
    }
    const ev: Dispatched = { ...event };
    if (ev.route.kind === 'userPresence') {
      const userId = ev.route.userId;
      const data = ev.payload.data as (Partial<UserProfile> & { online?: boolean }) | undefined;
      // A user whose status is Invisible comes online, and goes offline, for their own sockets only (the
      // others saw them offline all along).
      const hidden = typeof data?.online === 'boolean' && (await this.o.readModels.direct.getJson<UserProfile>(rm.user(userId)))?.status?.presence === 'Invisible';
      ev.presence = hidden ? new Set() : new Set(await this.o.readModels.smembers(rm.userServers(userId)));
      // Friends and pending requests hear of the user too (bonfire subscribes them to the user).
      const relations = hidden ? null : await this.o.readModels.direct.getJson<RelationsState>(rm.relations(userId));
      ev.related = new Set(Object.keys(relations?.relations ?? {}).filter((u) => ['Friend', 'Incoming', 'Outgoing'].includes(relations!.relations[u]!)));
      // So do the user's DM and group peers (bonfire's `can_subscribe_to_user`), however they stand.
      if (!hidden) for (const u of await this.privatePeers(userId)) ev.related.add(u);
      // A platform wipe also reaches blocked users: they still hold the user's messages.
      if (ev.payload.type === 'UserPlatformWipe') for (const u of Object.keys(relations?.relations ?? {})) ev.related.add(u);
      // A profile change reaches those who only share a server with the user while the server is active for
      // them (bonfire's `<server>u` topic); presence (`{online}` alone) goes to every server peer.
      ev.gated = ev.payload.type === 'UserUpdate' && data !== undefined && Object.keys(data).join() !== 'online';
      if (ev.payload.type === 'UserUpdate' && data && !('online' in data)) {
        // A profile change (the whole profile): the others also learn whether the user is online as they may
        // see it, so turning Invisible on or off shows at once.
        const online = data.status?.presence !== 'Invisible' && (await this.o.readModels.online([userId])).has(userId);
        ev.othersText = JSON.stringify({ ...ev.payload, data: { ...profileForOthers(data), online } });
      }
    }
    if (ev.payload.type === 'UserRelationship') ev.payload = await this.relationshipPayload(ev.payload);
    await this.updateFacts(ev);
    for (const s of this.preparing) {
      if (s.pending.length >= this.o.maxPending) s.drop('overflow');
      else s.pending.push(ev);
    }
    for (const s of this.candidates(ev)) {
      if (s.state === 'ready') await this.deliver(s, ev);
    }
  }

  /** Every other recipient of the DMs and groups the user is in. */
  private async privatePeers(userId: string): Promise<Set<string>> {
    const ids = await this.o.readModels.smembers(rm.userPrivateChannels(userId));
    const channels = ids.length ? await this.o.readModels.direct.mgetJson<PrivateChannelState>(ids.map((id) => rm.privateChannel(id))) : [];
    const out = new Set<string>();
    for (const c of channels) if (c) for (const u of recipientsOf(c)) if (u !== userId) out.add(u);
    return out;
  }

  /** The sockets an event may concern (each is then judged by `deliver`). */
  private candidates(ev: Dispatched): GatewaySocket[] {
    const r = ev.route;
    switch (r.kind) {
      case 'channel':
      case 'server':
        return this.subscribersOf(r.serverId);
      case 'user':
        return this.socketsOf(r.userId);
      case 'users':
        return r.userIds.flatMap((u) => this.socketsOf(u));
      case 'userPresence': {
        const out = new Set(this.socketsOf(r.userId));
        for (const serverId of ev.presence ?? []) for (const s of this.byServer.get(serverId) ?? []) out.add(s);
        for (const u of ev.related ?? []) for (const s of this.socketsOf(u)) out.add(s);
        return [...out];
      }
    }
  }

  /** Keeps the facts cache in step with the event (once per event, before any socket is judged). */
  private async updateFacts(ev: Dispatched): Promise<void> {
    const p = ev.payload;
    const r = ev.route;
    if (r.kind === 'channel') {
      if (p.type === 'ChannelCreate') {
        const { type: _type, ...channel } = p;
        this.facts.putChannel(r.serverId, { ...(channel as unknown as ChannelState), revision: -1 });
      } else if (p.type === 'ChannelUpdate') {
        await this.facts.reloadChannel(r.serverId, r.channelId);
      }
      return;
    }
    if (r.kind === 'user') {
      if (p.type === 'ServerCreate') this.facts.forgetMember(String(p.id), r.userId);
      return;
    }
    if (r.kind !== 'server') return;
    switch (p.type) {
      case 'ServerUpdate':
      case 'ServerRoleUpdate':
      case 'ServerRoleRanksUpdate':
        await this.facts.reloadServer(r.serverId);
        return;
      case 'ServerRoleDelete':
        await this.facts.reloadAll(r.serverId);
        return;
      case 'ServerMemberJoin': {
        const member = p.member as MemberObject | undefined;
        if (member) this.facts.putMember(r.serverId, String(p.user), member);
        else this.facts.forgetMember(r.serverId, String(p.user));
        return;
      }
      case 'ServerMemberUpdate':
        this.facts.forgetMember(r.serverId, (p.id as { user: string }).user);
        return;
      case 'ServerMemberLeave':
        this.facts.putMember(r.serverId, String(p.user), null);
        return;
      case 'ChannelDelete':
        this.facts.deleteChannel(r.serverId, String(p.id));
        return;
      case 'ServerDelete':
        this.facts.drop(r.serverId);
        return;
      default:
        return;
    }
  }

  /**
   * A UserRelationship from the projector names the other user by id only (their profile lives in another
   * partition): it is completed here once per event, with the profile and presence as the recipient sees them.
   */
  private async relationshipPayload(p: QueuedEvent['payload']): Promise<QueuedEvent['payload']> {
    const other = String((p.user as { _id?: unknown } | undefined)?._id ?? '');
    const status = typeof p.status === 'string' ? p.status : 'None';
    const profile = await this.o.readModels.direct.getJson<UserProfile>(rm.user(other));
    const online = profile !== null && profile.status?.presence !== 'Invisible' && (await this.o.readModels.online([other])).has(other);
    return { type: 'UserRelationship', id: p.id, user: { ...(profile ? userObject(profile) : { _id: other }), relationship: status, online } };
  }

  /** An event of a private channel for one of its recipients; keeps the socket's private-channel set. */
  private deliverPrivate(s: GatewaySocket, channelId: string | undefined, ev: Dispatched): void {
    const p = ev.payload;
    if (channelId !== undefined) {
      if (p.type === 'ChannelCreate') this.joinPrivate(s, channelId);
      else if (p.type === 'ChannelDelete' || (p.type === 'ChannelGroupLeave' && p.user === s.userId)) this.leavePrivate(s, channelId);
    }
    const personal = personalise(p, s);
    if (personal === p) s.sendText(textOf(ev));
    else s.send(personal);
  }

  /** Delivers one event to one socket, rewritten for it (or not at all). */
  private async deliver(s: GatewaySocket, ev: Dispatched): Promise<void> {
    const r = ev.route;
    switch (r.kind) {
      case 'user':
        if (s.userId === r.userId) this.deliverToUser(s, ev);
        return;
      case 'users':
        if (r.userIds.includes(s.userId)) this.deliverPrivate(s, r.channelId, ev);
        return;
      case 'userPresence':
        if (s.userId === r.userId) s.sendText(textOf(ev));
        else if (ev.related?.has(s.userId) || (ev.gated ? activeInOne(s, ev.presence, this.o.now()) : sharesServer(s, ev.presence))) s.sendText(ev.othersText ?? textOf(ev));
        return;
      case 'channel':
        if (s.servers.has(r.serverId)) await this.deliverInChannel(s, r.serverId, r.channelId, ev);
        return;
      case 'server':
        if (s.servers.has(r.serverId)) await this.deliverInServer(s, r.serverId, ev);
        return;
    }
  }

  private deliverToUser(s: GatewaySocket, ev: Dispatched): void {
    const p = ev.payload;
    switch (p.type) {
      case 'ServerCreate': {
        const serverId = String(p.id);
        // The client already knows the server (Ready listed it): both clients ignore a second ServerCreate.
        if (s.servers.has(serverId)) return;
        const channels = Array.isArray(p.channels) ? (p.channels as Array<{ _id: string }>) : [];
        this.subscribe(s, serverId, new Set(channels.map((c) => c._id)));
        s.sendText(textOf(ev));
        return;
      }
      case 'UserRelationship': {
        const user = p.user as { _id: string; relationship?: string };
        if (user.relationship === undefined || user.relationship === 'None') s.relations.delete(user._id);
        else s.relations.set(user._id, user.relationship);
        s.sendText(textOf(ev));
        return;
      }
      case 'DeleteSession':
        if (p.session_id === s.sessionId) {
          s.send({ type: 'Logout' });
          s.drop('logout', 1000, 'logged out');
        }
        return;
      default:
        if (!INTERNAL_EVENT_TYPES.has(p.type)) s.sendText(textOf(ev));
    }
  }

  private async deliverInChannel(s: GatewaySocket, serverId: string, channelId: string, ev: Dispatched): Promise<void> {
    const p = ev.payload;
    if (p.type === 'ChannelCreate' || p.type === 'ChannelUpdate') {
      const before = s.sees(serverId, channelId);
      const after = await this.canView(s, serverId, channelId);
      if (p.type === 'ChannelCreate') {
        if (!before && after) {
          s.servers.get(serverId)!.add(channelId);
          s.sendText(textOf(ev));
        }
        return;
      }
      if (before && after) s.sendText(textOf(ev));
      else if (before && !after) {
        s.servers.get(serverId)?.delete(channelId);
        s.send({ type: 'ChannelDelete', id: channelId });
      } else if (!before && after) {
        const channel = (await this.facts.get(serverId))?.channels.get(channelId);
        if (!channel) return;
        s.servers.get(serverId)!.add(channelId);
        s.send({ type: 'ChannelCreate', ...(await this.facts.presentChannels([channel]))[0] });
      }
      return;
    }
    if (!s.sees(serverId, channelId)) return;
    if (WEBHOOK_EVENTS.has(p.type)) {
      // Webhooks are for those who manage them (Stoat shows them with ManageWebhooks only).
      const facts = await this.facts.get(serverId);
      if (!facts || !this.facts.holds(facts, s.userId, await this.facts.member(facts, s.userId), channelId, Permission.ManageWebhooks, this.o.now())) return;
    }
    const personal = personalise(p, s);
    if (personal === p) s.sendText(textOf(ev));
    else s.send(personal);
  }

  private async deliverInServer(s: GatewaySocket, serverId: string, ev: Dispatched): Promise<void> {
    const p = ev.payload;
    switch (p.type) {
      case 'ServerDelete':
        s.sendText(textOf(ev));
        this.unsubscribe(s, serverId);
        return;
      case 'ServerMemberLeave':
        s.sendText(textOf(ev));
        if (p.user === s.userId) this.unsubscribe(s, serverId);
        return;
      case 'ChannelDelete': {
        const channelId = String(p.id);
        // Only a socket that knew the channel hears of its deletion.
        if (!s.sees(serverId, channelId)) return;
        s.servers.get(serverId)!.delete(channelId);
        s.sendText(textOf(ev));
        return;
      }
      case 'ServerMemberUpdate':
        if ((p.id as { user?: string }).user === s.userId && memberPermissionsChanged(p)) await this.sendWithChanges(s, serverId, ev);
        else s.sendText(textOf(ev));
        return;
      default:
        if (serverPermissionsChanged(p)) await this.sendWithChanges(s, serverId, ev);
        else s.sendText(textOf(ev));
    }
  }

  /** The event, preceded by the channel changes it causes for this socket (as one Bulk when there are any). */
  private async sendWithChanges(s: GatewaySocket, serverId: string, ev: Dispatched): Promise<void> {
    const changes = await this.recompute(s, serverId);
    if (changes.length === 0) s.sendText(textOf(ev));
    else s.send({ type: 'Bulk', v: [...changes, ev.payload] });
  }

  /** Whether the socket's user may view a channel now (cached facts). */
  private async canView(s: GatewaySocket, serverId: string, channelId: string): Promise<boolean> {
    const facts = await this.facts.get(serverId);
    if (!facts) return false;
    const member = await this.facts.member(facts, s.userId);
    return this.facts.canView(facts, s.userId, member, channelId, this.o.now());
  }

  /**
   * Recomputes the socket's visible channels of a server and returns the frames that bring the client's
   * knowledge up to date (ChannelDelete for channels it lost, ChannelCreate for channels it gained).
   */
  private async recompute(s: GatewaySocket, serverId: string): Promise<Array<Record<string, unknown>>> {
    const known = s.servers.get(serverId);
    if (!known) return [];
    const facts = await this.facts.get(serverId);
    const member = facts ? await this.facts.member(facts, s.userId) : null;
    const now = facts ? new Set(this.facts.visibleIds(facts, s.userId, member, this.o.now())) : new Set<string>();
    const frames: Array<Record<string, unknown>> = [];
    for (const id of [...known]) {
      if (!now.has(id)) {
        known.delete(id);
        frames.push({ type: 'ChannelDelete', id });
      }
    }
    const gained: ChannelState[] = [];
    for (const id of now) {
      if (known.has(id)) continue;
      const channel = facts!.channels.get(id);
      if (!channel) continue;
      known.add(id);
      gained.push(channel);
    }
    // Their last messages in one read, however many channels came into view.
    for (const c of await this.facts.presentChannels(gained)) frames.push({ type: 'ChannelCreate', ...c });
    return frames;
  }
}

/** Whether the socket is subscribed to one of the servers. */
function sharesServer(s: GatewaySocket, servers: Set<string> | undefined): boolean {
  for (const id of servers ?? []) if (s.servers.has(id)) return true;
  return false;
}

/** Whether one of the servers is active for the socket (`Subscribe`, or a bot's socket). */
function activeInOne(s: GatewaySocket, servers: Set<string> | undefined, now: number): boolean {
  for (const id of servers ?? []) if (s.activeIn(id, now)) return true;
  return false;
}

/**
 * A message's embedded author as seen by the recipient (bonfire recomputes `user.relationship` per socket,
 * from what the socket knows: a map lookup, no read).
 */
function personalise(p: QueuedEvent['payload'], s: GatewaySocket): Record<string, unknown> {
  if (p.type !== 'Message' || !p.user || typeof p.user !== 'object') return p;
  const user = p.user as Record<string, unknown> & { status?: { presence?: string }; profile?: unknown };
  const id = String(user._id);
  if (id === s.userId) return { ...p, user: { ...userObject(user), relationship: 'User' } };
  return { ...p, user: { ...profileForOthers(user), relationship: s.relations.get(id) ?? 'None' } };
}
