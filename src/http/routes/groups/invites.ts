/**
 * Group invites through the shared invite routes (Stoat's `Invite::Group`): create (`POST
 * /channels/:id/invites` on a group: InviteOthers), fetch (public), join (adds the caller as if the creator
 * added them: AlreadyInGroup, GroupTooLarge, posts `user_added`) and delete (the creator only). The invite
 * lives on the group's stream, so a join is decided on the group's revision like any other add.
 */
import { loadPrivateChannel } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import { messageStream } from '../../../domain/message/events.ts';
import type { GroupInviteObject } from '../../../domain/private/events.ts';
import { presentPrivateChannel } from '../../../domain/private/state.ts';
import { newId, newInviteCode } from '../../../ids.ts';
import { Permission } from '../../../permissions/bits.ts';
import { require as requirePermission } from '../../../permissions/calculate.ts';
import { rm } from '../../../readmodel/keys.ts';
import { withLastMessage } from '../../../readmodel/lastMessages.ts';
import { SYSTEM_AUTHOR } from '../../../domain/message/events.ts';
import { channelStream, expectedOf, type CommandRoute } from '../../command.ts';
import { presentUsers } from '../users/present.ts';
import { groupOf, onPrivateChannel } from './command.ts';

/** Whether a stored invite is a group invite. */
export function isGroupInvite(invite: { type?: string }): invite is GroupInviteObject {
  return invite.type === 'Group';
}

/** POST /channels/:id/invites on a private channel: groups only (400 InvalidOperation), InviteOthers. */
export async function createGroupInvite(rc: CommandRoute, channelId: string): Promise<GroupInviteObject> {
  let code = newInviteCode();
  await onPrivateChannel(rc, channelId, async (a) => {
    requirePermission(a.permissions, Permission.ViewChannel);
    const group = groupOf(a);
    requirePermission(a.permissions, Permission.InviteOthers);
    while (await rc.deps.readModels.getJson(rm.invite(code))) code = newInviteCode();
    return [{ type: 'GroupInviteCreated', data: { channelId: group._id, code, creator: rc.caller.userId } }];
  });
  const invite = await rc.deps.readModels.getJson<GroupInviteObject>(rm.invite(code));
  if (!invite) throw new AppError({ type: 'NotFound' });
  return invite;
}

/** GET /invites/:code of a group invite. */
export async function fetchGroupInvite(rc: Pick<CommandRoute, 'deps'>, invite: GroupInviteObject): Promise<Record<string, unknown>> {
  const channel = await loadPrivateChannel(rc.deps, invite.channel);
  if (!channel || channel.channel_type !== 'Group') throw new AppError({ type: 'NotFound' });
  const creator = await rc.deps.readModels.getJson<UserProfile>(rm.user(invite.creator));
  return {
    type: 'Group',
    code: invite._id,
    channel_id: channel._id,
    channel_name: channel.name,
    ...(channel.description !== undefined ? { channel_description: channel.description } : {}),
    user_name: creator?.username ?? 'Unknown',
    ...(creator?.avatar ? { user_avatar: creator.avatar } : {}),
  };
}

/** POST /invites/:code of a group invite → {type: "Group", channel, users}. */
export async function joinGroupInvite(rc: CommandRoute, invite: GroupInviteObject): Promise<Record<string, unknown>> {
  const { deps } = rc;
  const me = rc.caller.userId;
  const stream = channelStream(invite.channel);
  await deps.executor.execute(rc.meta, [stream], async () => {
    const channel = await loadPrivateChannel(deps, invite.channel);
    if (!channel || channel.channel_type !== 'Group') throw new AppError({ type: 'NotFound' });
    if (channel.recipients.includes(me)) throw new AppError({ type: 'AlreadyInGroup' });
    const max = deps.config.groupSizeLimit;
    if (channel.recipients.length >= max) throw new AppError({ type: 'GroupTooLarge', max });
    const systemId = newId(deps.now());
    return {
      writes: [
        { stream, scope: channel._id, expected: expectedOf(channel.revision), events: [{ type: 'GroupMemberAdded', data: { channelId: channel._id, userId: me, by: invite.creator } }] },
        {
          stream: messageStream(systemId),
          scope: channel._id,
          expected: 'no_stream',
          events: [{ type: 'MessageSent', data: { message: { _id: systemId, channel: channel._id, author: SYSTEM_AUTHOR, system: { type: 'user_added', id: me, by: invite.creator } } } }],
        },
      ],
      result: undefined,
    };
  });
  const channel = await loadPrivateChannel(deps, invite.channel);
  if (!channel || channel.channel_type !== 'Group') throw new AppError({ type: 'NotFound' });
  const profiles = await deps.readModels.mgetJson<UserProfile>(channel.recipients.map((id) => rm.user(id)));
  return { type: 'Group', channel: await withLastMessage(deps.readModels, presentPrivateChannel(channel)), users: await presentUsers(deps.readModels, profiles, me) };
}

/** DELETE /invites/:code of a group invite: its creator only (403 NotOwner otherwise). */
export async function deleteGroupInvite(rc: CommandRoute, invite: GroupInviteObject): Promise<void> {
  if (invite.creator !== rc.caller.userId) throw new AppError({ type: 'NotOwner' });
  const stream = channelStream(invite.channel);
  await rc.deps.executor.execute(rc.meta, [stream], async () => {
    const channel = await loadPrivateChannel(rc.deps, invite.channel);
    const still = await rc.deps.readModels.getJson<GroupInviteObject>(rm.invite(invite._id));
    if (!channel || !still) throw new AppError({ type: 'NotFound' });
    return {
      writes: [{ stream, scope: channel._id, expected: expectedOf(channel.revision), events: [{ type: 'GroupInviteDeleted', data: { channelId: channel._id, code: invite._id } }] }],
      result: undefined,
    };
  });
}
