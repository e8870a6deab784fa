// PATCH /servers/:server_id/members/:user_id — nickname, avatar, roles, timeout, can_publish, can_receive, remove → Member (Stoat's checks).
import { ROLE_LIMIT } from './roleCreate.ts';
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { callerFromServer, loadMember } from '../../../access.ts';
import { decideEditMember } from '../../../domain/server/editMember.ts';
import { FileClaims, fileLocks } from '../../../files.ts';
import { onServer } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { idString, name32, removeMember } from '../../schemas.ts';

// Stoat's `voice_channel` (move a member who is in a call) is deliberately not accepted: moving needs to know
// who is in which call and to act on the LiveKit server, and this service only issues join tokens; a client
// that sends it gets 400 FailedValidation naming the field rather than a pretended answer.
const Body = z.strictObject({
  nickname: name32.nullish(),
  /** An `avatars` upload id (used once; only for oneself). */
  avatar: idString.nullish(),
  /** Stoat's server_roles limit: a member cannot hold more roles than a server can have. */
  roles: z.array(idString).max(ROLE_LIMIT).nullish(),
  timeout: z.iso.datetime({ offset: true }).nullish(),
  can_publish: z.boolean().nullish(),
  can_receive: z.boolean().nullish(),
  remove: removeMember.nullish(),
});

export default defineRoute({
  method: 'PATCH',
  path: '/servers/:server_id/members/:user_id',
  auth: 'user',
  body: Body,
  permissions: ['ChangeNickname', 'ManageNicknames', 'RemoveAvatars', 'ChangeAvatar', 'AssignRoles', 'TimeoutMembers', 'MuteMembers', 'DeafenMembers'],
  async handler(rc) {
    const { body, deps, caller } = rc;
    const serverId = rc.params.server_id!;
    const userId = rc.params.user_id === '@me' ? caller.userId : rc.params.user_id!;
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
            remove: body.remove ?? [],
          },
          { server: a.server, members: { [caller.userId]: a.member, ...(target ? { [userId]: target } : {}) }, bans: {} },
          { caller: callerFromServer(a, caller.userId), now: deps.executor.now() },
        );
        return { events, also: files.writes };
      },
      { lock: fileLocks(body.avatar) },
    );
    const member = await loadMember(deps, serverId, userId);
    if (!member) throw new AppError({ type: 'NotFound' });
    return member;
  },
});
