// PATCH /servers/:server_id/members/:user_id — nickname, avatar, roles, timeout, can_publish, can_receive, voice_channel (+ UserMoveVoiceChannel to the moved member), remove → Member (Stoat's checks).
import { ROLE_LIMIT } from './roleCreate.ts';
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { callerFromServer, loadChannel, loadMember, type ServerAccess } from '../../../access.ts';
import { decideEditMember } from '../../../domain/server/editMember.ts';
import { channelPermissionsOf, memberRanking } from '../../../domain/server/permissions.ts';
import { decideMove } from '../../../domain/voice/move.ts';
import type { ServerVoiceState } from '../../../domain/voice/state.ts';
import { rm } from '../../../readmodel/keys.ts';
import { moveParticipant, roomService } from '../../../voice/rooms.ts';
import { createJoinToken, LIVEKIT_NODE } from '../../../voice/token.ts';
import { sendToUser } from '../../../gateway/userFrames.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import type { AppDeps } from '../../deps.ts';
import { FileClaims, fileLocks } from '../../../files.ts';
import { onServer } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { idString, name32, removeMember } from '../../schemas.ts';

const Body = z.strictObject({
  nickname: name32.nullish(),
  /** An `avatars` upload id (used once; only for oneself). */
  avatar: idString.nullish(),
  /** Stoat's server_roles limit: a member cannot hold more roles than a server can have. */
  roles: z.array(idString).max(ROLE_LIMIT).nullish(),
  timeout: z.iso.datetime({ offset: true }).nullish(),
  can_publish: z.boolean().nullish(),
  can_receive: z.boolean().nullish(),
  /** Stoat's "voice channel to move to if already in a voice channel" (MoveMembers), through LiveKit's MoveParticipant. */
  voice_channel: idString.nullish(),
  remove: removeMember.nullish(),
});

/**
 * The move a `voice_channel` asks for, checked (decideMove) against the server as the access read it and the
 * voice presence; null when the member is already there. Needs voice on (400 FeatureDisabled otherwise).
 */
async function planMove(deps: AppDeps, a: ServerAccess, callerId: string, userId: string, to: string) {
  if (!deps.config.voice.enabled) throw new AppError({ type: 'FeatureDisabled', feature: 'voice' });
  const target = userId === callerId ? a.member : await loadMember(deps, a.server._id, userId);
  if (!target) throw new AppError({ type: 'NotFound' });
  const channel = await loadChannel(deps, to);
  const destination = channel && channel.server === a.server._id ? channel : null;
  const now = deps.executor.now().getTime();
  const targetPermissions = destination ? channelPermissionsOf(a.server, userId, target, destination, now) : 0n;
  const move = decideMove({
    userId,
    self: userId === callerId,
    callerRanking: callerFromServer(a, callerId).ranking,
    targetRanking: memberRanking(a.server, target),
    destination: destination ? { id: destination._id, voice: destination.voice !== undefined } : null,
    callerPermissions: destination ? channelPermissionsOf(a.server, callerId, a.member, destination, now) : 0n,
    targetPermissions,
    voice: await deps.readModels.getJson<ServerVoiceState>(rm.serverVoice(a.server._id)),
  });
  return move && { ...move, permissions: targetPermissions, maxUsers: destination?.voice?.max_users };
}

/**
 * Stoat's `UserMoveVoiceChannel` to the moved member's sockets: the rooms, the node and a join token for the
 * new room with their permissions there (LiveKit already moved the session; a client may rejoin with it).
 */
async function tellMoved(deps: AppDeps, userId: string, move: { from: string; to: string; permissions: bigint; maxUsers?: number | undefined }): Promise<void> {
  const voice = deps.config.voice;
  if (!voice.enabled) return;
  const profile = await deps.readModels.getJson<UserProfile>(rm.user(userId));
  const token = await createJoinToken(voice, {
    room: move.to,
    identity: userId,
    name: profile?.display_name ?? profile?.username ?? userId,
    permissions: move.permissions,
    maxUsers: move.maxUsers,
  });
  await sendToUser(deps.readModels.redis, deps.config.redisPrefix, userId, { type: 'UserMoveVoiceChannel', node: LIVEKIT_NODE, from: move.from, to: move.to, token });
}

export default defineRoute({
  method: 'PATCH',
  path: '/servers/:server_id/members/:user_id',
  auth: 'user',
  body: Body,
  permissions: ['ChangeNickname', 'ManageNicknames', 'RemoveAvatars', 'ChangeAvatar', 'AssignRoles', 'TimeoutMembers', 'MuteMembers', 'DeafenMembers', 'MoveMembers'],
  async handler(rc) {
    const { body, deps, caller } = rc;
    const serverId = rc.params.server_id!;
    const userId = rc.params.user_id === '@me' ? caller.userId : rc.params.user_id!;
    // The move is made once, after every check of the edit passed and before its events are appended: a
    // refused edit moves nobody, and a move LiveKit refuses appends nothing. (A retried decision does not move
    // again.)
    let moved = false;
    let made: Awaited<ReturnType<typeof planMove>> = null;
    await onServer(
      rc,
      serverId,
      async (a) => {
        const target = userId === caller.userId ? a.member : await loadMember(deps, serverId, userId);
        // The upload is claimed first; a refused edit (another member's avatar …) appends nothing of it.
        const files = new FileClaims(deps, caller.userId);
        const avatar = await files.use(body.avatar, 'avatars', { type: 'MemberAvatar', id: `${serverId}:${userId}` });
        const events = decideEditMember(
          {
            userId,
            nickname: body.nickname ?? undefined,
            avatar,
            roles: body.roles ?? undefined,
            timeout: body.timeout ?? undefined,
            can_publish: body.can_publish ?? undefined,
            can_receive: body.can_receive ?? undefined,
            move: body.voice_channel != null,
            remove: body.remove ?? [],
          },
          { server: a.server, members: { [caller.userId]: a.member, ...(target ? { [userId]: target } : {}) }, bans: {} },
          { caller: callerFromServer(a, caller.userId), now: deps.executor.now() },
        );
        if (body.voice_channel != null && !moved) {
          const move = await planMove(deps, a, caller.userId, userId, body.voice_channel);
          const voice = deps.config.voice;
          if (move && voice.enabled) {
            await moveParticipant(await roomService(voice), move.from, userId, move.to);
            made = move;
          }
          moved = true;
        }
        return { events, also: files.writes };
      },
      { lock: fileLocks(body.avatar) },
    );
    if (made) await tellMoved(deps, userId, made);
    const member = await loadMember(deps, serverId, userId);
    if (!member) throw new AppError({ type: 'NotFound' });
    return member;
  },
});
