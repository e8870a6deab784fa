/**
 * Events of the message aggregate: one stream `message-<messageId>` per message (sent, edited, reacted,
 * pinned, deleted), scope = the server id of its channel. Every event names the channel, so the messages
 * projection never has to look a message up to know where it lives. Shapes are Revolt's v0 Message
 * (reference §8); a stored message is exactly what clients get, minus the stream revision.
 */
import { z } from 'zod';
import { FileObject } from '../shared.ts';

/** Author id of system messages (Revolt's `SystemMessage::into_message`). */
export const SYSTEM_AUTHOR = '00000000000000000000000000';

/** A message's masquerade: display name, avatar URL and colour overrides. */
export const MasqueradeObject = z.object({
  name: z.string().optional(),
  /** URL of an `avatars` upload on this service's media server (DESIGN §4 "masquerade"). */
  avatar: z.string().optional(),
  /** `#rgb` or `#rrggbb`. */
  colour: z.string().optional(),
});
/** A stored masquerade. */
export type MasqueradeObject = z.infer<typeof MasqueradeObject>;

/** A text embed as stored and served (Revolt's `Embed::Text`); `media` is the claimed File. */
export const TextEmbedObject = z.object({
  type: z.literal('Text'),
  icon_url: z.string().optional(),
  url: z.string().optional(),
  title: z.string().optional(),
  description: z.string().optional(),
  media: FileObject.optional(),
  colour: z.string().optional(),
});
/** A stored text embed. */
export type TextEmbedObject = z.infer<typeof TextEmbedObject>;

/** An image in a generated embed (Revolt's `Image`): `Large` below the card, `Preview` beside it. */
export const EmbedImageObject = z.object({ url: z.string(), width: z.number().int().min(0), height: z.number().int().min(0), size: z.enum(['Large', 'Preview']) });
/** A video in a generated embed (Revolt's `Video`). */
export const EmbedVideoObject = z.object({ url: z.string(), width: z.number().int().min(0), height: z.number().int().min(0) });
/** Remote content a client may play inline (Revolt's `Special`), recognised from the page's URL and metadata. */
export const SpecialObject = z.union([
  z.object({ type: z.enum(['None', 'GIF', 'Soundcloud']) }),
  z.object({ type: z.literal('YouTube'), id: z.string(), timestamp: z.string().optional() }),
  z.object({ type: z.literal('Lightspeed'), content_type: z.literal('Channel'), id: z.string() }),
  z.object({ type: z.literal('Twitch'), content_type: z.enum(['Channel', 'Video', 'Clip']), id: z.string() }),
  z.object({ type: z.literal('Spotify'), content_type: z.string(), id: z.string() }),
  z.object({ type: z.literal('Bandcamp'), content_type: z.enum(['Album', 'Track']), id: z.string() }),
  z.object({ type: z.literal('AppleMusic'), album_id: z.string(), track_id: z.string().optional() }),
  z.object({ type: z.literal('Streamable'), id: z.string() }),
]);
/** A link preview (Revolt's `Embed::Website`, `Embed::Image`, `Embed::Video`), generated from a URL in the content. */
export const GeneratedEmbedObject = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('Website'),
    url: z.string().optional(),
    original_url: z.string().optional(),
    special: SpecialObject.optional(),
    title: z.string().optional(),
    description: z.string().optional(),
    image: EmbedImageObject.optional(),
    video: EmbedVideoObject.optional(),
    site_name: z.string().optional(),
    icon_url: z.string().optional(),
    colour: z.string().optional(),
  }),
  EmbedImageObject.extend({ type: z.literal('Image') }),
  EmbedVideoObject.extend({ type: z.literal('Video') }),
]);
/** A generated embed. */
export type GeneratedEmbedObject = z.infer<typeof GeneratedEmbedObject>;
/** Any embed a message carries: the sender's text embeds and the generated link previews. */
export const EmbedObject = z.union([TextEmbedObject, GeneratedEmbedObject]);
/** A stored embed. */
export type EmbedObject = z.infer<typeof EmbedObject>;

/** How a message may be interacted with (Revolt's `Interactions`); omitted when default. */
export const InteractionsObject = z.object({
  /** Reactions that always appear (and, with `restrict_reactions`, the only ones allowed). */
  reactions: z.array(z.string()).optional(),
  /** Omitted when false. */
  restrict_reactions: z.literal(true).optional(),
});
/** Stored interactions. */
export type InteractionsObject = z.infer<typeof InteractionsObject>;

/** A system message (Revolt's `SystemMessage`, tagged by `type`). */
export const SystemMessageObject = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), content: z.string() }),
  z.object({ type: z.literal('user_added'), id: z.string(), by: z.string() }),
  z.object({ type: z.literal('user_remove'), id: z.string(), by: z.string() }),
  z.object({ type: z.literal('user_joined'), id: z.string() }),
  z.object({ type: z.literal('user_left'), id: z.string() }),
  z.object({ type: z.literal('user_kicked'), id: z.string() }),
  z.object({ type: z.literal('user_banned'), id: z.string() }),
  z.object({ type: z.literal('channel_renamed'), name: z.string(), by: z.string() }),
  z.object({ type: z.literal('channel_description_changed'), by: z.string() }),
  z.object({ type: z.literal('channel_icon_changed'), by: z.string() }),
  z.object({ type: z.literal('channel_ownership_changed'), from: z.string(), to: z.string() }),
  z.object({ type: z.literal('message_pinned'), id: z.string(), by: z.string() }),
  z.object({ type: z.literal('message_unpinned'), id: z.string(), by: z.string() }),
  /** A DM's or group's call started (by the first to join); `finished_at` (ISO) once the last one left. */
  z.object({ type: z.literal('call_started'), by: z.string(), finished_at: z.string().optional() }),
]);
/** A stored system message body. */
export type SystemMessageObject = z.infer<typeof SystemMessageObject>;

/** A message as sent (Revolt's Message without `user`, `member`, `edited`, `reactions`, `pinned`). */
export const MessageObject = z.object({
  _id: z.string(),
  /** The idempotency key or body nonce it was sent with (a fresh ULID without either); absent on system messages. */
  nonce: z.string().optional(),
  channel: z.string(),
  /** User id of the sender; `SYSTEM_AUTHOR` for system messages. */
  author: z.string(),
  content: z.string().optional(),
  system: SystemMessageObject.optional(),
  /** The claimed `attachments` uploads, as File objects. */
  attachments: z.array(FileObject).optional(),
  /** Text embeds as sent, then link previews as they are appended (`MessageAppended`). */
  embeds: z.array(EmbedObject).optional(),
  /** Users mentioned (who can view the channel), in order of first mention. */
  mentions: z.array(z.string()).optional(),
  /** Roles mentioned (of the server). */
  role_mentions: z.array(z.string()).optional(),
  /** Ids of the messages replied to. */
  replies: z.array(z.string()).optional(),
  interactions: InteractionsObject.optional(),
  masquerade: MasqueradeObject.optional(),
  /** Set on a message a webhook sent (`author` is the webhook id): its name and avatar (file id) at the time. */
  webhook: z.object({ name: z.string(), avatar: z.string().optional() }).optional(),
  /** Message flags (Revolt: 2 SuppressNotifications, 4 MentionsEveryone, 8 MentionsOnline); omitted when 0. */
  flags: z.number().int().positive().optional(),
});
/** A sent message. */
export type MessageObject = z.infer<typeof MessageObject>;

export const messageEvents = {
  /** A message was posted (by a user, or a system message such as `message_pinned`). */
  MessageSent: z.object({
    message: MessageObject,
    /**
     * Every user whose unread state records this message as a mention, decided at send time among those who
     * could view the channel: `<@id>`, replies with `mention`, holders of a mentioned role, and everyone
     * (`@everyone`) or everyone online (`@online`). Present only when it differs from `message.mentions` (a
     * mass mention); absent = `message.mentions`. A message flagged SuppressNotifications (2) records nobody.
     */
    mentionedUsers: z.array(z.string()).optional(),
    /**
     * The content has links to preview and the sender held SendEmbeds: the preview worker (Stoat's January)
     * fetches them from this event (`workers/previews/worker.ts`). Absent: no previews.
     */
    previews: z.literal(true).optional(),
  }),
  /** The author edited the message: the fields in `data` replace the old ones; `edited` is the ISO time. */
  MessageEdited: z.object({
    channel: z.string(),
    data: z.object({ content: z.string().optional(), embeds: z.array(EmbedObject).optional() }),
    edited: z.string(),
    /** The new content has links to preview and the author held SendEmbeds (as `MessageSent.previews`). */
    previews: z.literal(true).optional(),
  }),
  /**
   * Link previews of the content were fetched (the preview worker, Stoat's January): `embeds` are added after
   * the message's own. `revision` is the stream revision of the content they were made for (the send or the
   * edit), so a retried job never appends twice and an outdated one appends nothing.
   */
  MessageAppended: z.object({ channel: z.string(), embeds: z.array(GeneratedEmbedObject), revision: z.number().int().min(0) }),
  /** A user reacted with an emoji (a unicode emoji or a custom emoji id). */
  MessageReacted: z.object({ channel: z.string(), userId: z.string(), emoji: z.string() }),
  /** A user's reaction was removed (by the user, or by a moderator with `user_id`). */
  MessageUnreacted: z.object({ channel: z.string(), userId: z.string(), emoji: z.string() }),
  /** Every user's reaction with one emoji was removed (`remove_all=true`). */
  MessageReactionRemoved: z.object({ channel: z.string(), emoji: z.string() }),
  /** Every reaction was removed (`DELETE …/reactions`). */
  MessageReactionsCleared: z.object({ channel: z.string() }),
  /** The call a `call_started` system message announced ended (the last participant left) at `finished_at` (ISO). */
  CallFinished: z.object({ channel: z.string(), finished_at: z.string() }),
  /** The message was pinned by `by`. */
  MessagePinned: z.object({ channel: z.string(), by: z.string() }),
  /** The message was unpinned by `by`. */
  MessageUnpinned: z.object({ channel: z.string(), by: z.string() }),
  /**
   * The message was deleted. A bulk delete appends one to every message stream in one atomic append; the
   * last of them lists every id in `bulkIds` (one BulkMessageDelete client event), the others say `inBulk`.
   */
  MessageDeleted: z.object({
    channel: z.string(),
    bulkIds: z.array(z.string()).optional(),
    inBulk: z.literal(true).optional(),
  }),
  /**
   * The retention sweep erased the message: it was older than its channel's policy and no legal hold covered it
   * (issue 39). Readers drop it as if deleted; the log keeps id, author, channel and time, and its content
   * becomes unreadable when its time bucket's key is destroyed (`RetentionBucketShredded`).
   */
  MessageErased: z.object({
    channel: z.string(),
    /** The message's author (kept for the audit: the content goes, who wrote when does not). */
    author: z.string(),
    /** Ids of the files it used (attachments, embed media), detached and purged with it. */
    files: z.array(z.string()),
    /** The policy that expired it, in seconds. */
    max_age_seconds: z.number().int().positive(),
  }),
};

/** Stream of a message. */
export const messageStream = (messageId: string) => `message-${messageId}`;
/** Prefix of the message streams. */
export const MESSAGE_STREAM = 'message-';
