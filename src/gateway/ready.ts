/**
 * The Ready payload (bonfire's `generate_ready_payload`, reference §9): the user itself (relationship
 * "User", online), the servers it is a member of, the channels of those servers it may view, its own member
 * objects, the emoji of those servers, voice states and policy changes; on request the read state
 * (`channel_unreads`) and synced settings (`user_settings`). Read fresh from the read models.
 */
import { ulidTime } from '../ids.ts';
import { pendingPolicyChanges, type PolicyChange } from '../users/policy.ts';
import { loadRelations, visibleChannels, type AccessDeps } from '../access.ts';
import { presentPrivateChannel, recipientsOf, type PrivateChannelState } from '../domain/private/state.ts';
import { userObject, type UserProfile } from '../domain/account/state.ts';
import type { MemberObject, ServerChannelObject } from '../domain/models.ts';
import { presentServer, type ServerState } from '../domain/server/state.ts';
import { rm } from '../readmodel/keys.ts';
import { withLastMessages } from '../readmodel/lastMessages.ts';
import type { ReadyField } from './protocol.ts';
import { fetchSettings, fetchUnreads } from '../readmodel/unreads.ts';
import type { ServerVoiceState, UserVoiceState } from '../domain/voice/state.ts';

/** What Ready tells a socket, and the subscriptions that follow from it. */
export interface ReadyResult {
  /** The frame to send. */
  frame: Record<string, unknown>;
  /** Server id → ids of the channels listed as visible (the socket's initial knowledge). */
  visible: Map<string, Set<string>>;
  /** Ids of the private channels listed (Saved Notes, DMs, groups). */
  privateChannels: Set<string>;
  /** Other user id → relationship status, as Ready told it. */
  relations: Map<string, string>;
}

/** The user's private channels (the `user:<id>:dms` hint checked against each channel's recipients), in id order. */
export async function privateChannelsOf(deps: AccessDeps, userId: string): Promise<PrivateChannelState[]> {
  const ids = (await deps.readModels.smembers(rm.userPrivateChannels(userId))).sort();
  const stored = await deps.readModels.mgetJson<PrivateChannelState>(ids.map((id) => rm.privateChannel(id)));
  return stored.filter((c): c is PrivateChannelState => c !== null && recipientsOf(c).includes(userId));
}

/** The custom emoji of the given servers (projection `emojis`), in id order per server. */
async function serverEmojis(deps: AccessDeps, serverIds: string[]): Promise<unknown[]> {
  const all = await Promise.all(serverIds.map((id) => deps.readModels.hgetallJson<{ _id: string }>(rm.serverEmojis(id))));
  return all.flatMap((m) => [...m.values()].sort((a, b) => (a._id < b._id ? -1 : a._id > b._id ? 1 : 0)));
}

/**
 * Stoat's `ChannelVoiceState`s of the voice channels the socket sees (projection `voice`), by the scopes their
 * presence is kept under: servers, and DMs and groups (their own ids).
 */
async function voiceStates(deps: AccessDeps, serverIds: string[], visible: Map<string, Set<string>>): Promise<unknown[]> {
  const states = await deps.readModels.mgetJson<ServerVoiceState>(serverIds.map((id) => rm.serverVoice(id)));
  const out: Array<{ id: string; participants: UserVoiceState[] }> = [];
  states.forEach((st, i) => {
    if (!st) return;
    const seen = visible.get(serverIds[i]!);
    const byChannel = new Map<string, UserVoiceState[]>();
    for (const p of Object.values(st.participants)) {
      if (!seen?.has(p.channel)) continue;
      let list = byChannel.get(p.channel);
      if (!list) byChannel.set(p.channel, (list = []));
      list.push(p.state);
    }
    for (const [id, participants] of [...byChannel].sort(([a], [b]) => (a < b ? -1 : 1))) out.push({ id, participants });
  });
  return out;
}

/** Builds Ready for `userId` with the selected fields; null when the user does not exist (not onboarded). */
export async function buildReady(
  deps: AccessDeps & { policyChanges?: () => PolicyChange[] },
  userId: string,
  fields: ReadonlySet<ReadyField>,
  settingsKeys: readonly string[] = [],
): Promise<ReadyResult | null> {
  const profile = await deps.readModels.getJson<UserProfile>(rm.user(userId));
  if (!profile) return null;
  const serverIds = (await deps.readModels.smembers(rm.userServers(userId))).sort();
  const stored = await deps.readModels.mgetJson<ServerState>(serverIds.map((id) => rm.server(id)));
  const servers: ServerState[] = [];
  const members: MemberObject[] = [];
  const channels: ServerChannelObject[] = [];
  const visible = new Map<string, Set<string>>();
  // `user:<id>:servers` is a hint (written from each server's partition): the member entry decides.
  const memberships = await Promise.all(
    stored.map((s) => (s ? deps.readModels.hgetJson<MemberObject>(rm.serverMembers(s._id), userId) : Promise.resolve(null))),
  );
  // Every server's channels are read at once (one pipelined round trip), then put in the servers' order.
  const seenPerServer = await Promise.all(
    stored.map((server, i) => (server && memberships[i] ? visibleChannels(deps, server, userId, memberships[i]!) : Promise.resolve(null))),
  );
  for (let i = 0; i < stored.length; i++) {
    const server = stored[i];
    const member = memberships[i];
    const seen = seenPerServer[i];
    if (!server || !member || !seen) continue;
    servers.push(server);
    members.push(member);
    for (const c of seen) channels.push(c);
    visible.set(server._id, new Set(seen.map((c) => c._id)));
  }

  // Stoat's Ready: DMs, groups and Saved Notes join the channels; friends, requests, blocked users and the
  // recipients of those channels join the users, each with the relationship this user has with them.
  const privates = await privateChannelsOf(deps, userId);
  channels.push(...((await withLastMessages(deps.readModels, privates.map(presentPrivateChannel))) as unknown as ServerChannelObject[]));
  const relations = await loadRelations(deps, userId);
  const relationMap = new Map(Object.entries(relations.relations));
  const others = new Set<string>(relationMap.keys());
  for (const c of privates) for (const u of recipientsOf(c)) if (u !== userId) others.add(u);

  const frame: Record<string, unknown> = { type: 'Ready' };
  if (fields.has('users')) {
    const ids = [...others].sort();
    const profiles = await deps.readModels.mgetJson<UserProfile>(ids.map((id) => rm.user(id)));
    const online = await deps.readModels.online(ids);
    const users: Record<string, unknown>[] = [
      { ...userObject(profile), relations: [...relationMap].map(([_id, status]) => ({ _id, status })), relationship: 'User', online: true },
    ];
    profiles.forEach((p, i) => {
      if (!p) return;
      const id = ids[i]!;
      users.push({ ...userObject(p), relationship: relationMap.get(id) ?? 'None', online: online.has(id) && p.status?.presence !== 'Invisible' });
    });
    frame.users = users;
  }
  if (fields.has('servers')) frame.servers = servers.map(presentServer);
  if (fields.has('channels')) frame.channels = channels;
  if (fields.has('members')) frame.members = members;
  if (fields.has('emojis')) frame.emojis = await serverEmojis(deps, servers.map((s) => s._id));
  if (fields.has('voice_states')) {
    // A DM's or group's call is kept under the channel's own id, and its recipients see it.
    const calls = privates.filter((c) => c.channel_type === 'DirectMessage' || c.channel_type === 'Group').map((c) => c._id);
    const seen = new Map([...visible, ...calls.map((id) => [id, new Set([id])] as const)]);
    frame.voice_states = await voiceStates(deps, [...servers.map((s) => s._id), ...calls], seen);
  }
  if (fields.has('policy_changes')) {
    // As Stoat: none for bots; for a user, those created after their last acknowledgement (at first: their account's creation).
    const list = profile.bot ? [] : (deps.policyChanges?.() ?? []);
    let pending: PolicyChange[] = [];
    if (list.length > 0) {
      const mark = (await deps.readModels.getJson<{ policyAckedUpTo?: string }>(rm.account(userId)))?.policyAckedUpTo;
      pending = pendingPolicyChanges(list, mark !== undefined ? Date.parse(mark) : ulidTime(userId));
    }
    frame.policy_changes = pending;
  }
  if (settingsKeys.length > 0) frame.user_settings = Object.fromEntries(await fetchSettings(deps.readModels, userId, settingsKeys));
  if (fields.has('channel_unreads')) frame.channel_unreads = await fetchUnreads(deps.readModels, userId);
  return { frame, visible, privateChannels: new Set(privates.map((c) => c._id)), relations: relationMap };
}
