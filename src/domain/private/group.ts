/**
 * Group commands (Stoat's `create_group`, `add_user_to_group`, `remove_user_from_group`, the group branch of
 * the channel PATCH and of `PUT /channels/:id/permissions/default`): pure decisions. Each returns the events
 * of `channel-<id>` and the system messages to post (one `MessageSent` per new message stream).
 */
import { AppError, missingPermission } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { has } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import { SYSTEM_AUTHOR, type SystemMessageObject } from '../message/events.ts';
import { statusOf, type RelationsState } from '../relationship/state.ts';
import type { FileObject } from '../shared.ts';
import type { GroupObject } from './events.ts';

/** A system message to post in the channel. */
export interface SystemPost {
  messageId: string;
  event: DomainEvent;
}

/** What a group decision returns. */
export interface GroupDecision {
  events: DomainEvent[];
  system: SystemPost[];
}

/** New ids for the system messages a decision may post, in order. */
export type IdSource = () => string;

function post(channelId: string, id: string, system: SystemMessageObject): SystemPost {
  return { messageId: id, event: { type: 'MessageSent', data: { message: { _id: id, channel: channelId, author: SYSTEM_AUTHOR, system } } } };
}

/** A new group. */
export interface CreateGroup {
  channelId: string;
  ownerId: string;
  name: string;
  description?: string | undefined;
  icon?: FileObject | undefined;
  nsfw?: boolean | undefined;
  /** The other users to add (each must be a friend of the owner). */
  users: string[];
}

/** Every user must be a friend (403 NotFriends); the owner plus the distinct users ≤ `maxSize` (403 GroupTooLarge). */
export function decideCreateGroup(cmd: CreateGroup, ctx: { relations: RelationsState; maxSize: number }): DomainEvent[] {
  for (const u of cmd.users) {
    const s = statusOf(ctx.relations, u);
    if (s !== 'Friend' && s !== 'User') throw new AppError({ type: 'NotFriends' });
  }
  const recipients = [...new Set([cmd.ownerId, ...cmd.users])];
  if (recipients.length > ctx.maxSize) throw new AppError({ type: 'GroupTooLarge', max: ctx.maxSize });
  const channel: GroupObject = { channel_type: 'Group', _id: cmd.channelId, name: cmd.name, owner: cmd.ownerId, recipients };
  if (cmd.description !== undefined) channel.description = cmd.description;
  if (cmd.icon !== undefined) channel.icon = cmd.icon;
  if (cmd.nsfw === true) channel.nsfw = true;
  return [{ type: 'GroupCreated', data: { channel } }];
}

/** Adding a member: the caller's facts. */
export interface AddMemberContext {
  callerId: string;
  /** The caller's channel permission value. */
  permissions: bigint;
  /** The caller's relationships (the new member must be a friend). */
  relations: RelationsState;
  maxSize: number;
  newId: IdSource;
}

/** InviteOthers (403); a friend of the caller (403 NotFriends); 409 AlreadyInGroup; 403 GroupTooLarge; posts `user_added`. */
export function decideAddGroupMember(group: GroupObject, userId: string, ctx: AddMemberContext): GroupDecision {
  if (!has(ctx.permissions, Permission.InviteOthers)) throw missingPermission('InviteOthers');
  const s = statusOf(ctx.relations, userId);
  if (s !== 'Friend' && s !== 'User') throw new AppError({ type: 'NotFriends' });
  if (group.recipients.includes(userId)) throw new AppError({ type: 'AlreadyInGroup' });
  if (group.recipients.length >= ctx.maxSize) throw new AppError({ type: 'GroupTooLarge', max: ctx.maxSize });
  return {
    events: [{ type: 'GroupMemberAdded', data: { channelId: group._id, userId, by: ctx.callerId } }],
    system: [post(group._id, ctx.newId(), { type: 'user_added', id: userId, by: ctx.callerId })],
  };
}

/** Only the owner (403 MissingPermission ManageChannel); not oneself (400); a member (404 NotInGroup); posts `user_remove`. */
export function decideRemoveGroupMember(group: GroupObject, userId: string, ctx: { callerId: string; newId: IdSource }): GroupDecision {
  if (group.owner !== ctx.callerId) throw missingPermission('ManageChannel');
  if (userId === ctx.callerId) throw new AppError({ type: 'CannotRemoveYourself' });
  if (!group.recipients.includes(userId)) throw new AppError({ type: 'NotInGroup' });
  return {
    events: [{ type: 'GroupMemberRemoved', data: { channelId: group._id, userId, by: ctx.callerId } }],
    system: [post(group._id, ctx.newId(), { type: 'user_remove', id: userId, by: ctx.callerId })],
  };
}

/**
 * The caller leaves. An owner hands the group to the next recipient (`channel_ownership_changed`); the last
 * member deletes it. `silent` skips the `user_left` message.
 */
export function decideLeaveGroup(group: GroupObject, ctx: { callerId: string; silent: boolean; newId: IdSource }): GroupDecision {
  const events: DomainEvent[] = [];
  const system: SystemPost[] = [];
  if (group.owner === ctx.callerId) {
    const next = group.recipients.find((u) => u !== ctx.callerId);
    if (next === undefined) return { events: [{ type: 'GroupDeleted', data: { channelId: group._id, recipients: group.recipients } }], system: [] };
    events.push({ type: 'GroupEdited', data: { channelId: group._id, data: { owner: next }, remove: [] } });
    system.push(post(group._id, ctx.newId(), { type: 'channel_ownership_changed', from: ctx.callerId, to: next }));
  }
  events.push({ type: 'GroupMemberRemoved', data: { channelId: group._id, userId: ctx.callerId } });
  if (!ctx.silent) system.push(post(group._id, ctx.newId(), { type: 'user_left', id: ctx.callerId }));
  return { events, system };
}

/** A group PATCH. */
export interface EditGroup {
  name?: string | undefined;
  description?: string | undefined;
  /** The claimed `icons` upload. */
  icon?: FileObject | undefined;
  nsfw?: boolean | undefined;
  owner?: string | undefined;
  remove: Array<'Description' | 'Icon'>;
}

/**
 * ManageChannel (403); an ownership transfer only by the owner (403 NotOwner) to a member (404 NotInGroup),
 * posting `channel_ownership_changed`; a new name, description or icon posts `channel_renamed`,
 * `channel_description_changed`, `channel_icon_changed`.
 */
export function decideEditGroup(group: GroupObject, cmd: EditGroup, ctx: { callerId: string; permissions: bigint; newId: IdSource }): GroupDecision {
  if (!has(ctx.permissions, Permission.ManageChannel)) throw missingPermission('ManageChannel');
  const system: SystemPost[] = [];
  const data: Extract<DomainEvent, { type: 'GroupEdited' }>['data']['data'] = {};
  if (cmd.owner !== undefined) {
    if (group.owner !== ctx.callerId) throw new AppError({ type: 'NotOwner' });
    if (!group.recipients.includes(cmd.owner)) throw new AppError({ type: 'NotInGroup' });
    data.owner = cmd.owner;
    system.push(post(group._id, ctx.newId(), { type: 'channel_ownership_changed', from: group.owner, to: cmd.owner }));
  }
  if (cmd.name !== undefined) data.name = cmd.name;
  if (cmd.description !== undefined) data.description = cmd.description;
  if (cmd.icon !== undefined) data.icon = cmd.icon;
  if (cmd.nsfw !== undefined) data.nsfw = cmd.nsfw;
  if (cmd.name !== undefined) system.push(post(group._id, ctx.newId(), { type: 'channel_renamed', name: cmd.name, by: ctx.callerId }));
  if (cmd.description !== undefined) system.push(post(group._id, ctx.newId(), { type: 'channel_description_changed', by: ctx.callerId }));
  if (cmd.icon !== undefined) system.push(post(group._id, ctx.newId(), { type: 'channel_icon_changed', by: ctx.callerId }));
  if (Object.keys(data).length === 0 && cmd.remove.length === 0) return { events: [], system: [] };
  return { events: [{ type: 'GroupEdited', data: { channelId: group._id, data, remove: cmd.remove } }], system };
}

/** ManagePermissions (403); the value is the members' allow bits. */
export function decideSetGroupPermissions(group: GroupObject, permissions: bigint, ctx: { permissions: bigint }): DomainEvent[] {
  if (!has(ctx.permissions, Permission.ManagePermissions)) throw missingPermission('ManagePermissions');
  return [{ type: 'GroupPermissionsSet', data: { channelId: group._id, permissions: Number(permissions) } }];
}
