/**
 * The loader of the facts of what one user may do to another: same user, the relationship (friends,
 * requests, blocks), a mutual connection (a shared server, DM or group) and whether either is a bot. The rule
 * itself is `userPermissions` in `src/permissions/user.ts` (BigInt bits), the only one.
 */
import { rm } from '../readmodel/keys.ts';
import { loadPrivateChannel, loadRelations, type AccessDeps } from '../access.ts';
import { recipientsOf } from '../domain/private/state.ts';
import { statusOf } from '../domain/relationship/state.ts';
import { ALL_USER_PERMISSIONS, userPermissions, type UserPermissionFacts } from '../permissions/user.ts';

/** Whether the two users are recipients of one DM or group (the per-user lists are hints: recipients decide). */
export async function shareChannel(deps: AccessDeps, a: string, b: string): Promise<boolean> {
  const [mine, theirs] = await Promise.all([deps.readModels.smembers(rm.userPrivateChannels(a)), deps.readModels.smembers(rm.userPrivateChannels(b))]);
  const theirSet = new Set(theirs);
  for (const channelId of mine.filter((c) => theirSet.has(c))) {
    const channel = await loadPrivateChannel(deps, channelId);
    if (channel && channel.channel_type !== 'SavedMessages') {
      const recipients = recipientsOf(channel);
      if (recipients.includes(a) && recipients.includes(b)) return true;
    }
  }
  return false;
}

/** Whether the two users are both members of some server (the server lists are hints: membership is checked). */
export async function shareServer(deps: AccessDeps, a: string, b: string): Promise<boolean> {
  const [mine, theirs] = await Promise.all([deps.readModels.smembers(rm.userServers(a)), deps.readModels.smembers(rm.userServers(b))]);
  const theirSet = new Set(theirs);
  const common = mine.filter((s) => theirSet.has(s));
  for (const serverId of common) {
    const [ma, mb] = await Promise.all([
      deps.readModels.hgetJson(rm.serverMembers(serverId), a),
      deps.readModels.hgetJson(rm.serverMembers(serverId), b),
    ]);
    if (ma && mb) return true;
  }
  return false;
}

/** Loads the facts between viewer and target (the target exists) and applies the rule. */
export async function loadUserPermissions(deps: AccessDeps, viewerId: string, target: { _id: string; bot?: unknown }): Promise<bigint> {
  if (viewerId === target._id) return ALL_USER_PERMISSIONS;
  const [relationship, servers, channels] = await Promise.all([
    loadRelations(deps, viewerId).then((r) => statusOf(r, target._id) as UserPermissionFacts['relationship']),
    shareServer(deps, viewerId, target._id),
    shareChannel(deps, viewerId, target._id),
  ]);
  const viewer = await deps.readModels.getJson<{ bot?: unknown }>(rm.user(viewerId));
  return userPermissions({
    same: false,
    relationship,
    mutual: servers || channels,
    targetIsBot: target.bot != null,
    viewerIsBot: viewer?.bot != null,
  });
}
