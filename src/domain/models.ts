/**
 * Revolt's v0 data shapes (reference §8) for servers, channels, roles, members, bans and invites, as zod
 * schemas. Events carry them and read models store them in exactly this shape, so presenting a stored
 * object is (almost) the identity: optional fields are omitted, not null, and `can_publish` /
 * `can_receive` appear only when false.
 */
import { z } from 'zod';
import { FileObject } from './shared.ts';

/** A permission override as stored and served: `a` = allow bits, `d` = deny bits (defined bits only, < 2^41). */
export const OverrideField = z.object({
  /** Allowed bits. */
  a: z.number().int().nonnegative(),
  /** Denied bits. */
  d: z.number().int().nonnegative(),
});
/** A stored permission override. */
export type OverrideField = z.infer<typeof OverrideField>;

/** A server role (Stoat adds `_id`). A lower `rank` is a higher role; 0 is the top. */
export const RoleObject = z.object({
  /** The role id (its key in `server.roles`). */
  _id: z.string(),
  name: z.string(),
  /** The role's server-level override. */
  permissions: OverrideField,
  /** `#rgb` or `#rrggbb`. */
  colour: z.string().optional(),
  /** Shown separately in the member list; omitted when false. */
  hoist: z.literal(true).optional(),
  rank: z.number().int(),
  /** The role's icon (an `icons` upload; the spec adds it to Stoat's role). */
  icon: FileObject.optional(),
});
/** A stored role. */
export type RoleObject = z.infer<typeof RoleObject>;

/** One element of `server.categories`; ids are chosen by the client. */
export const CategoryObject = z.object({
  id: z.string(),
  title: z.string(),
  /** Channel ids of this category (each channel in at most one category). */
  channels: z.array(z.string()),
});
/** A stored category. */
export type CategoryObject = z.infer<typeof CategoryObject>;

/** Channels that receive the server's system messages (each one of the server's channels). */
export const SystemMessagesObject = z.object({
  user_joined: z.string().optional(),
  user_left: z.string().optional(),
  user_kicked: z.string().optional(),
  user_banned: z.string().optional(),
});
/** Stored system-message channels. */
export type SystemMessagesObject = z.infer<typeof SystemMessagesObject>;

/** Voice settings of a channel (Stoat: a voice channel is a TextChannel with `voice` set). */
export const VoiceObject = z.object({
  /** Most users at once in the call. */
  max_users: z.number().int().positive().optional(),
});

/** A server channel (Stoat's `TextChannel`, a voice channel when `voice` is present). */
export const ServerChannelObject = z.object({
  channel_type: z.literal('TextChannel'),
  _id: z.string(),
  /** The server the channel belongs to. */
  server: z.string(),
  name: z.string(),
  description: z.string().optional(),
  /** The channel's icon (an `icons` upload). */
  icon: FileObject.optional(),
  /** Id of the last message (maintained by the messages projection). */
  last_message_id: z.string().optional(),
  /** Override for everyone in this channel (applied below role overrides). */
  default_permissions: OverrideField.optional(),
  /** Overrides by role id; omitted when empty. */
  role_permissions: z.record(z.string(), OverrideField).optional(),
  /** Omitted when false. */
  nsfw: z.literal(true).optional(),
  /** Present on voice channels. */
  voice: VoiceObject.optional(),
  /** Stoat's slowmode: seconds a member waits between two messages here (0 or absent: none). */
  slowmode: z.number().int().min(0).optional(),
});
/** A stored server channel. */
export type ServerChannelObject = z.infer<typeof ServerChannelObject>;

/** The `{server, user}` key of a member or a ban. */
export const MemberKey = z.object({ server: z.string(), user: z.string() });

/** A server member as stored and served. */
export const MemberObject = z.object({
  _id: MemberKey,
  /** ISO time of joining. */
  joined_at: z.string(),
  nickname: z.string().optional(),
  /** The member's avatar in this server (an `avatars` upload). */
  avatar: FileObject.optional(),
  /** Role ids; omitted when empty. */
  roles: z.array(z.string()).optional(),
  /** ISO time until which the member is timed out. */
  timeout: z.string().optional(),
  /** Present (false) only when the member may not publish voice or video. */
  can_publish: z.literal(false).optional(),
  /** Present (false) only when the member may not receive voice or video. */
  can_receive: z.literal(false).optional(),
});
/** A stored member. */
export type MemberObject = z.infer<typeof MemberObject>;

/** A server ban. */
export const ServerBanObject = z.object({
  _id: MemberKey,
  reason: z.string().optional(),
});
/** A stored ban. */
export type ServerBanObject = z.infer<typeof ServerBanObject>;

/** A server invite; `_id` is the code. */
export const InviteObject = z.object({
  type: z.literal('Server'),
  _id: z.string(),
  server: z.string(),
  /** User id of whoever created it. */
  creator: z.string(),
  /** The channel it points to. */
  channel: z.string(),
});
/** A stored invite. */
export type InviteObject = z.infer<typeof InviteObject>;

/** Removable server fields (`remove` of the server PATCH). */
export const FieldsServer = z.enum(['Description', 'Categories', 'SystemMessages', 'Icon', 'Banner']);
/** Removable channel fields. */
export const FieldsChannel = z.enum(['Description', 'Icon', 'DefaultPermissions', 'Voice', 'Slowmode']);
/** Removable role fields (`Icon` goes with the spec's role icon). */
export const FieldsRole = z.enum(['Colour', 'Icon']);
/** Removable member fields (`JoinedAt` is accepted and has no effect, as in Revolt). */
export const FieldsMember = z.enum(['Nickname', 'Avatar', 'Roles', 'Timeout', 'CanReceive', 'CanPublish', 'JoinedAt']);

/** Why a member left (ServerMemberLeave `reason`). */
export const LeaveReason = z.enum(['Leave', 'Kick', 'Ban']);

/** What owns a custom emoji: a server (Revolt also has `Detached`, which cannot be created). */
export const EmojiParent = z.object({ type: z.literal('Server'), id: z.string() });

/** A custom emoji (reference §8); its `_id` is the id of its `emojis` upload. */
export const EmojiObject = z.object({
  _id: z.string(),
  parent: EmojiParent,
  /** User id of whoever created it. */
  creator_id: z.string(),
  name: z.string(),
  /** Omitted when false (a GIF upload is animated). */
  animated: z.literal(true).optional(),
  /** Omitted when false. */
  nsfw: z.literal(true).optional(),
});
/** A stored custom emoji. */
export type EmojiObject = z.infer<typeof EmojiObject>;
