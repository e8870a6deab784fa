/**
 * Events of the server aggregate: stream `server-<serverId>`, scope = the server id. The stream holds the
 * server itself, the existence of its channels (so the channel limit holds by expected revision), its
 * categories, roles, members, bans, invites and custom emoji (so the emoji limit holds the same way). Channel settings live in `channel-<id>`
 * (`../channel/events.ts`).
 */
import { z } from 'zod';
import { FileObject } from '../shared.ts';
import {
  CategoryObject,
  EmojiObject,
  FieldsMember,
  FieldsRole,
  FieldsServer,
  InviteObject,
  LeaveReason,
  MemberObject,
  OverrideField,
  RoleObject,
  ServerChannelObject,
  SystemMessagesObject,
} from '../models.ts';

export const serverEvents = {
  /** A server was created with its first channels (the text channel "General"). */
  ServerCreated: z.object({
    /** The new server's fixed fields; `channels`, `roles` and categories start from `channels` / empty. */
    server: z.object({
      _id: z.string(),
      owner: z.string(),
      name: z.string(),
      description: z.string().optional(),
      nsfw: z.literal(true).optional(),
      /** Default permissions (a permission value, defined bits only). */
      default_permissions: z.number().int().nonnegative(),
    }),
    /** The channels created with the server, in order. */
    channels: z.array(ServerChannelObject),
  }),
  /** Server fields changed; only the fields in `data` changed, then `remove` cleared fields. */
  ServerEdited: z.object({
    data: z.object({
      name: z.string().optional(),
      description: z.string().optional(),
      /** The whole categories array (unknown channel ids already dropped). */
      categories: z.array(CategoryObject).optional(),
      system_messages: SystemMessagesObject.optional(),
      analytics: z.boolean().optional(),
      /** The new icon (an `icons` upload, consumed by this edit). */
      icon: FileObject.optional(),
      /** The new banner (a `banners` upload, consumed by this edit). */
      banner: FileObject.optional(),
      /** Staff only (an instance admin): Stoat's server flags (1 Verified, 2 Official). */
      flags: z.number().int().nonnegative().optional(),
      /** Staff only: listed in discovery. */
      discoverable: z.boolean().optional(),
    }),
    /** Fields cleared (applied before `data`, as in Revolt). */
    remove: z.array(FieldsServer),
  }),
  /** The server's default permissions were replaced. */
  ServerDefaultPermissionsSet: z.object({ permissions: z.number().int().nonnegative() }),
  /** The owner deleted the server. `channels` lists its channels then, for the message and emoji projections. */
  ServerDeleted: z.object({ channels: z.array(z.string()) }),

  /** A channel was added to the server (its settings stream `channel-<id>` starts empty). */
  ChannelCreated: z.object({ channel: ServerChannelObject }),
  /** A channel was deleted: it leaves the server's channel list, its categories and its system messages. */
  ChannelDeleted: z.object({ channelId: z.string() }),

  /** A role was created (rank = lowest, permissions 0/0). */
  RoleCreated: z.object({ roleId: z.string(), role: RoleObject }),
  /** Role fields changed; `remove` cleared fields first. `rank` is never edited here. */
  RoleEdited: z.object({
    roleId: z.string(),
    data: z.object({
      name: z.string().optional(),
      colour: z.string().optional(),
      hoist: z.boolean().optional(),
      /** The new icon (an `icons` upload, consumed by this edit). */
      icon: FileObject.optional(),
    }),
    remove: z.array(FieldsRole),
  }),
  /** A role's server-level override was replaced. */
  RolePermissionsSet: z.object({ roleId: z.string(), permissions: OverrideField }),
  /** A role was deleted; it leaves every member and every channel override. */
  RoleDeleted: z.object({ roleId: z.string() }),
  /** Roles were reordered: `ranks` holds every role id, highest first; each role's rank = its index. */
  RoleRanksSet: z.object({ ranks: z.array(z.string()) }),

  /** A user became a member (server create for the owner, or an invite). */
  MemberJoined: z.object({
    member: MemberObject,
    /** The invite code used, if any. */
    invite: z.string().optional(),
    /** The user who added the member: a bot invited by its owner or a server manager (`POST /bots/:id/invite`). */
    by: z.string().optional(),
  }),
  /** Member fields changed; `remove` cleared fields first. */
  MemberEdited: z.object({
    userId: z.string(),
    data: z.object({
      nickname: z.string().optional(),
      /** The member's new avatar (an `avatars` upload, consumed by this edit). */
      avatar: FileObject.optional(),
      roles: z.array(z.string()).optional(),
      timeout: z.string().optional(),
      can_publish: z.boolean().optional(),
      can_receive: z.boolean().optional(),
    }),
    remove: z.array(FieldsMember),
  }),
  /** A member left the server: by leaving, by being kicked or by being banned (then `UserBanned` follows). */
  MemberLeft: z.object({
    userId: z.string(),
    reason: LeaveReason,
    /** `leave_silently`: no system message for this departure. */
    silent: z.boolean().optional(),
  }),
  /** A user was banned (and cannot join again until unbanned). */
  UserBanned: z.object({ userId: z.string(), reason: z.string().optional() }),
  /** A ban was lifted. */
  UserUnbanned: z.object({ userId: z.string() }),
  /**
   * A user took a server slot by creating or joining `server` (stream `serverslots-<userId>`, scope the user;
   * appended atomically with the membership it stands for): orders one user's creates and joins, so the
   * per-user server limit holds exactly under concurrency.
   */
  ServerSlotTaken: z.object({ server: z.string() }),

  /** An invite to one of the server's channels was created. */
  InviteCreated: z.object({ invite: InviteObject }),
  /** An invite was deleted. */
  InviteDeleted: z.object({ code: z.string() }),

  /** A custom emoji was added to the server (at most 100 per server, held by this stream's revision). */
  EmojiCreated: z.object({ emoji: EmojiObject }),
  /** A custom emoji was deleted. */
  EmojiDeleted: z.object({ emojiId: z.string() }),
  /** A custom emoji was renamed (Stoat's emoji edit: the name is its only editable field). */
  EmojiEdited: z.object({ emojiId: z.string(), name: z.string() }),
};
