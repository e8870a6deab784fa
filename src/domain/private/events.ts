/**
 * Events of private channels — Saved Notes, DMs and groups (Stoat's `SavedMessages`, `DirectMessage`,
 * `Group`): stream `channel-<channelId>`, scope = the channel id itself (a private channel belongs to no
 * server, so it is its own projector partition key; its messages use the same scope). A DM is also claimed
 * on `dmpair-<lowId>-<highId>` (Saved Notes: `dmpair-<id>-<id>`) with `no_stream` in the same atomic append,
 * so two users opening their DM at the same moment end with one channel.
 */
import { z } from 'zod';
import { FileObject } from '../shared.ts';

/** Saved Notes: the self-DM. */
export const SavedMessagesObject = z.object({
  channel_type: z.literal('SavedMessages'),
  _id: z.string(),
  /** Its only user. */
  user: z.string(),
});

/** A DM between two users. */
export const DirectMessageObject = z.object({
  channel_type: z.literal('DirectMessage'),
  _id: z.string(),
  /** Shown in the clients' DM list (false once closed, true again with the next message). */
  active: z.boolean(),
  recipients: z.array(z.string()),
  last_message_id: z.string().optional(),
});

/** A group channel. */
export const GroupObject = z.object({
  channel_type: z.literal('Group'),
  _id: z.string(),
  name: z.string(),
  owner: z.string(),
  description: z.string().optional(),
  recipients: z.array(z.string()),
  icon: FileObject.optional(),
  last_message_id: z.string().optional(),
  /** The members' permission value (allow bits); absent = Stoat's DM default. */
  permissions: z.number().int().nonnegative().optional(),
  /** Omitted when false. */
  nsfw: z.literal(true).optional(),
});

/** Any private channel as stored and served. */
export const PrivateChannelObject = z.discriminatedUnion('channel_type', [SavedMessagesObject, DirectMessageObject, GroupObject]);
/** A private channel. */
export type PrivateChannelObject = z.infer<typeof PrivateChannelObject>;
/** A group channel. */
export type GroupObject = z.infer<typeof GroupObject>;

/** A group invite as stored in `invite:<code>` and served (Stoat's `Invite::Group`). */
export const GroupInviteObject = z.object({ type: z.literal('Group'), _id: z.string(), creator: z.string(), channel: z.string() });
/** A stored group invite. */
export type GroupInviteObject = z.infer<typeof GroupInviteObject>;

/** Removable group fields. */
export const FieldsGroup = z.enum(['Description', 'Icon']);

export const privateChannelEvents = {
  /** Saved Notes or a DM was opened for the first time. */
  PrivateChannelOpened: z.object({ channel: z.union([SavedMessagesObject, DirectMessageObject]) }),
  /** The pair's DM is this channel (uniqueness stream `dmpair-…`). */
  DirectMessagePaired: z.object({ channelId: z.string() }),
  /** A DM was closed (`active: false`) or reopened by a message (`active: true`). */
  DirectMessageActiveSet: z.object({ channelId: z.string(), active: z.boolean() }),
  /** A group was created with its first recipients (the owner among them). */
  GroupCreated: z.object({ channel: GroupObject }),
  /** `userId` was added to the group by `by`. */
  GroupMemberAdded: z.object({ channelId: z.string(), userId: z.string(), by: z.string() }),
  /** `userId` left the group (`by` absent) or was removed by `by`. */
  GroupMemberRemoved: z.object({ channelId: z.string(), userId: z.string(), by: z.string().optional() }),
  /** Group fields changed (`owner`: ownership transferred); `remove` cleared fields first. */
  GroupEdited: z.object({
    channelId: z.string(),
    data: z.object({
      name: z.string().optional(),
      description: z.string().optional(),
      icon: FileObject.optional(),
      nsfw: z.boolean().optional(),
      owner: z.string().optional(),
    }),
    remove: z.array(FieldsGroup),
  }),
  /** The group's member permission value was replaced. */
  GroupPermissionsSet: z.object({ channelId: z.string(), permissions: z.number().int().nonnegative() }),
  /** A group invite was created by `creator` (a recipient with InviteOthers). */
  GroupInviteCreated: z.object({ channelId: z.string(), code: z.string(), creator: z.string() }),
  /** A group invite was deleted by its creator. */
  GroupInviteDeleted: z.object({ channelId: z.string(), code: z.string() }),
  /** The last member left: the group is gone. `recipients` = who was told. */
  GroupDeleted: z.object({ channelId: z.string(), recipients: z.array(z.string()) }),
};

/** Stream claiming the DM of two users (or a user's Saved Notes). */
export function dmPairStream(a: string, b: string): string {
  return a <= b ? `dmpair-${a}-${b}` : `dmpair-${b}-${a}`;
}
