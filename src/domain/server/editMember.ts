/** EditMember: PATCH /servers/:id/members/:user with Stoat's checks in Stoat's order (`member_edit.rs`, reference §3.5). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { has, require as requirePermission, requireElevatedOver } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { FileObject } from '../shared.ts';
import type { CallerContext } from './caller.ts';
import { memberRanking, serverPermissionsOf } from './permissions.ts';
import type { ServerView } from './state.ts';

/** Removable member fields. */
export type MemberField = 'Nickname' | 'Avatar' | 'Roles' | 'Timeout' | 'CanReceive' | 'CanPublish' | 'JoinedAt';

/** Input of EditMember; absent fields are unchanged. */
export interface EditMember {
  /** The member edited. */
  userId: string;
  nickname?: string | undefined;
  /** The member's new avatar: an `avatars` upload the route claimed (only for oneself). */
  avatar?: FileObject | undefined;
  roles?: string[] | undefined;
  /** ISO time until which the member is timed out. */
  timeout?: string | undefined;
  can_publish?: boolean | undefined;
  can_receive?: boolean | undefined;
  /** A move between voice calls is asked for (`voice_channel`; the move itself is `decideMove`'s). */
  move?: boolean | undefined;
  remove: MemberField[];
}

/** Context of EditMember. */
export interface EditMemberContext extends CallerContext {
  now: Date;
}

/**
 * Checks, in order: nickname (self ChangeNickname, other ManageNicknames); a new avatar only for oneself
 * (another member's → 400 InvalidOperation) with ChangeAvatar; avatar removal (self ChangeAvatar, other
 * RemoveAvatars); roles → AssignRoles; timeout → setting it on oneself 400 CannotTimeoutYourself, on a
 * member who holds TimeoutMembers 403 IsElevated, then TimeoutMembers; can_publish → MuteMembers; can_receive →
 * DeafenMembers; voice_channel → MoveMembers; then a target
 * other than oneself must rank below the caller (403 NotElevated); each added role must exist (404 InvalidRole)
 * and rank below the caller (403 NotElevated).
 */
export function decideEditMember(cmd: EditMember, view: ServerView, ctx: EditMemberContext): DomainEvent[] {
  const { server } = view;
  const target = Object.hasOwn(view.members, cmd.userId) ? view.members[cmd.userId] : undefined;
  if (!target) throw new AppError({ type: 'NotFound' });
  const p = ctx.caller.permissions;
  const self = cmd.userId === ctx.caller.userId;
  const removes = new Set(cmd.remove);

  if (cmd.nickname !== undefined || removes.has('Nickname')) {
    requirePermission(p, self ? Permission.ChangeNickname : Permission.ManageNicknames);
  }
  if (cmd.avatar !== undefined) {
    if (!self) throw new AppError({ type: 'InvalidOperation' });
    requirePermission(p, Permission.ChangeAvatar);
  }
  if (removes.has('Avatar')) requirePermission(p, self ? Permission.ChangeAvatar : Permission.RemoveAvatars);
  if (cmd.roles !== undefined || removes.has('Roles')) requirePermission(p, Permission.AssignRoles);
  if (cmd.timeout !== undefined || removes.has('Timeout')) {
    if (cmd.timeout !== undefined) {
      if (self) throw new AppError({ type: 'CannotTimeoutYourself' });
      const targetPermissions = serverPermissionsOf(server, cmd.userId, target, ctx.now.getTime());
      if (has(targetPermissions, Permission.TimeoutMembers)) throw new AppError({ type: 'IsElevated' });
    }
    requirePermission(p, Permission.TimeoutMembers);
  }
  if (cmd.can_publish !== undefined) requirePermission(p, Permission.MuteMembers);
  if (cmd.can_receive !== undefined) requirePermission(p, Permission.DeafenMembers);
  if (cmd.move) requirePermission(p, Permission.MoveMembers);

  if (!self) requireElevatedOver(ctx.caller.ranking, memberRanking(server, target));
  let roles: string[] | undefined;
  if (cmd.roles !== undefined) {
    roles = [...new Set(cmd.roles)];
    const current = new Set(target.roles ?? []);
    for (const id of roles) {
      if (current.has(id)) continue;
      const role = Object.hasOwn(server.roles, id) ? server.roles[id] : undefined;
      if (!role) throw new AppError({ type: 'InvalidRole' });
      requireElevatedOver(ctx.caller.ranking, role.rank);
    }
  }

  const data: Extract<DomainEvent, { type: 'MemberEdited' }>['data']['data'] = {};
  if (cmd.nickname !== undefined) data.nickname = cmd.nickname;
  if (cmd.avatar !== undefined) data.avatar = cmd.avatar;
  if (roles !== undefined) data.roles = roles;
  if (cmd.timeout !== undefined) data.timeout = new Date(cmd.timeout).toISOString();
  if (cmd.can_publish !== undefined) data.can_publish = cmd.can_publish;
  if (cmd.can_receive !== undefined) data.can_receive = cmd.can_receive;
  if (Object.keys(data).length === 0 && removes.size === 0) return [];
  return [{ type: 'MemberEdited', data: { userId: cmd.userId, data, remove: [...removes] } }];
}
