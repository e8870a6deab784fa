/**
 * SendMessage: POST /channels/:id/messages (spec "Message"; reference §3.7 processing order; DESIGN §4
 * "lengths", "content + embeds ceiling", "counts", "masquerade", "mentions and emoji").
 *
 * One pure decision: the route builds the command (mentions parsed once, `mentionsOf`), one loader beside
 * the route gathers every fact (`src/http/routes/messages/sendFacts.ts`: the sender's permissions, reply
 * targets, which mentioned users can see the channel, the audience of mass mentions, the usable files, the
 * slowmode slot), and `decideSendMessage` runs every check once, in Stoat's order, and returns `MessageSent`.
 */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { has, requireAll, require as requirePermission } from '../../permissions/calculate.ts';
import { previewUrls } from '../../previews/urls.ts';
import { codepointLength } from '../../text.ts';
import type { DomainEvent } from '../events.ts';
import type { FileObject } from '../shared.ts';
import { emojiKind } from './emoji.ts';
import type { InteractionsObject, MasqueradeObject, MessageObject, TextEmbedObject } from './events.ts';
import { parseMentions, type ParsedMentions } from './mentions.ts';
import { own } from '../../own.ts';

/** The message limits (spec "Limits"; reference §3.7). */
export const MESSAGE_LIMITS = {
  /** Code points of content (400 FailedValidation above it, checked by the body schema). */
  content: 2000,
  /** Code points of content plus every embed's title and description (422 PayloadTooLarge above it). */
  bodyCeiling: 2000,
  attachments: 5,
  embeds: 5,
  replies: 5,
  /** Distinct emoji on one message. */
  reactions: 20,
} as const;

/** Message flags a client may set (Revolt: SuppressNotifications); the mention flags are computed. */
const FLAG_MENTIONS_EVERYONE = 4;
const FLAG_MENTIONS_ONLINE = 8;
const CLIENT_FLAGS_MAX = 7;

/** An embed as sent: `media` is the id of an `attachments` upload. */
export interface SendableEmbed {
  icon_url?: string | undefined;
  url?: string | undefined;
  title?: string | undefined;
  description?: string | undefined;
  media?: string | undefined;
  colour?: string | undefined;
}

/** A reply as sent. */
export interface ReplyIntent {
  id: string;
  /** Mention the replied message's author. */
  mention: boolean;
  /** false: a missing target is skipped instead of 404. */
  fail_if_not_exists?: boolean | undefined;
}

/** Input of SendMessage (the validated body plus the ids the route chose). */
export interface SendMessage {
  messageId: string;
  channelId: string;
  authorId: string;
  /** The idempotency key, body nonce or a fresh ULID. */
  nonce: string;
  content?: string | undefined;
  /** Ids of `attachments` uploads. */
  attachments: string[];
  embeds: SendableEmbed[];
  replies: ReplyIntent[];
  masquerade?: MasqueradeObject | undefined;
  interactions?: { reactions?: string[] | undefined; restrict_reactions?: boolean | undefined } | undefined;
  flags?: number | undefined;
  /** The sender is a bot: only bots may set the mention flags (Stoat). */
  bot?: boolean | undefined;
  /** What the content mentions, parsed once when the command is made (`mentionsOf`). */
  mentions: ParsedMentions;
}

/** The mentions of a send: the content's, plus `@everyone` for a bot's mention flag (4), which mentions like the text. */
export function mentionsOf(content: string | undefined, bot: boolean, flags: number | undefined): ParsedMentions {
  const parsed = content === undefined ? { users: [], roles: [], everyone: false, online: false } : parseMentions(content);
  if (bot && ((flags ?? 0) & FLAG_MENTIONS_EVERYONE) !== 0) parsed.everyone = true;
  return parsed;
}

/**
 * The slowmode that applies to a send (seconds; 0: none): the channel's, unless the sender has
 * BypassSlowmode (Stoat) or ManageMessages, or cannot send there at all (the decision refuses that anyway).
 */
export function slowmodeFor(channelSlowmode: number | undefined, permissions: bigint): number {
  if (channelSlowmode === undefined || channelSlowmode <= 0) return 0;
  if (has(permissions, Permission.BypassSlowmode) || has(permissions, Permission.ManageMessages)) return 0;
  if (!has(permissions, Permission.ViewChannel) || !has(permissions, Permission.SendMessage)) return 0;
  return channelSlowmode;
}

/** The facts of a send (gathered by one loader beside the route). */
export interface SendFacts {
  /** The sender's channel permission value. */
  permissions: bigint;
  /** Role ids of the server (role mentions of other ids are dropped). */
  roles: ReadonlySet<string>;
  /** Each reply target in this channel: its author, or null when there is no such message. */
  replies: Readonly<Record<string, { author: string } | null>>;
  /** For each user mentioned in the content or by a reply: whether it is a member who can view the channel. */
  canView: Readonly<Record<string, boolean>>;
  /** The usable files (attachments and embed media) by id; a file that cannot be used is absent (404). */
  files: Readonly<Record<string, FileObject>>;
  /** Whether the masquerade avatar can be used (false → 404); absent without one. */
  avatar?: boolean | undefined;
  /**
   * The channel's slowmode as it applies to the sender (`slowmodeFor`): its delay and the milliseconds left
   * of the sender's previous slot (0: this send holds the slot). Absent when no slowmode applies.
   */
  slowmode?: { seconds: number; waitMs: number } | undefined;
  /** Custom emoji ids of the server (for `interactions.reactions`). */
  emojis: ReadonlySet<string>;
  /**
   * The members who can view the channel, with their roles and whether they are online: loaded only for a
   * message with role mentions, `@everyone` or `@online` (whom those mention). Absent otherwise.
   */
  audience?: ReadonlyArray<AudienceMember> | undefined;
}

/** A member who can view the channel, as mass mentions see it. */
export interface AudienceMember {
  userId: string;
  roles: readonly string[];
  online: boolean;
}

/** Message flag: send no notifications (Stoat records no mentions for such a message). */
export const FLAG_SUPPRESS_NOTIFICATIONS = 2;

/**
 * The users whose unread state records the message as a mention: the explicit ones (content and replies,
 * already limited to those who can view the channel), then, from the audience, holders of a mentioned role
 * and everyone (`@everyone`) or everyone online (`@online`) but the author. None with SuppressNotifications.
 */
export function mentionedUsersOf(
  explicit: readonly string[],
  mass: { roles: readonly string[]; everyone: boolean; online: boolean },
  authorId: string,
  flags: number,
  audience: ReadonlyArray<AudienceMember> = [],
): string[] {
  if ((flags & FLAG_SUPPRESS_NOTIFICATIONS) !== 0) return [];
  const out = new Set(explicit);
  if (mass.everyone || mass.online || mass.roles.length > 0) {
    const roles = new Set(mass.roles);
    for (const m of audience) {
      if (m.userId === authorId) continue;
      if (mass.everyone || (mass.online && m.online) || m.roles.some((r) => roles.has(r))) out.add(m.userId);
    }
  }
  return [...out];
}

/** Whether a send needs the audience loaded: it mentions roles of the server, `@everyone` or `@online`. */
export function needsAudience(parsed: { roles: readonly string[]; everyone: boolean; online: boolean }, serverRoles: ReadonlySet<string>): boolean {
  return parsed.everyone || parsed.online || parsed.roles.some((id) => serverRoles.has(id));
}

/** Code points that count against the body ceiling: content plus every embed's title and description. */
export function bodyLength(content: string | undefined, embeds: ReadonlyArray<{ title?: string | undefined; description?: string | undefined }>): number {
  let n = content === undefined ? 0 : codepointLength(content);
  for (const e of embeds) n += (e.title === undefined ? 0 : codepointLength(e.title)) + (e.description === undefined ? 0 : codepointLength(e.description));
  return n;
}

/** The file ids a send claims: attachments, then embed media. */
export function fileIdsOf(cmd: Pick<SendMessage, 'attachments' | 'embeds'>): string[] {
  return [...cmd.attachments, ...cmd.embeds.flatMap((e) => (e.media === undefined ? [] : [e.media]))];
}

/**
 * The checks of the body against the sender's permissions, in Stoat's order: ViewChannel, SendMessage,
 * Masquerade (ManageRole too for a colour), SendEmbeds, UploadFiles (attachments or embed media); then the
 * slowmode (429 InSlowmode); then React (interaction reactions), PayloadTooLarge, EmptyMessage, flags,
 * `restrict_reactions`, TooManyReplies, TooManyAttachments, TooManyEmbeds, and the interaction reactions'
 * form and count. The first step of `decideSendMessage` (exported for its tests).
 */
export function checkSendMessage(cmd: SendMessage, permissions: bigint, slowmode?: SendFacts['slowmode']): void {
  requireAll(permissions, Permission.ViewChannel, Permission.SendMessage);
  if (cmd.masquerade !== undefined) {
    requirePermission(permissions, Permission.Masquerade);
    if (cmd.masquerade.colour !== undefined) requirePermission(permissions, Permission.ManageRole);
  }
  if (cmd.embeds.length > 0) requirePermission(permissions, Permission.SendEmbeds);
  if (fileIdsOf(cmd).length > 0) requirePermission(permissions, Permission.UploadFiles);
  if (slowmode !== undefined && slowmode.waitMs > 0) throw new AppError({ type: 'InSlowmode', retry_after: Math.max(1, Math.ceil(slowmode.waitMs / 1000)) });
  const interactionReactions = cmd.interactions?.reactions ?? [];
  if (interactionReactions.length > 0) requirePermission(permissions, Permission.React);

  if (bodyLength(cmd.content, cmd.embeds) > MESSAGE_LIMITS.bodyCeiling) throw new AppError({ type: 'PayloadTooLarge' });
  if ((cmd.content === undefined || cmd.content.length === 0) && cmd.attachments.length === 0 && cmd.embeds.length === 0) {
    throw new AppError({ type: 'EmptyMessage' });
  }
  if (cmd.flags !== undefined) {
    if (cmd.flags > CLIENT_FLAGS_MAX) throw new AppError({ type: 'InvalidProperty' });
    // The mention flags are for bots (Stoat); a bot's `@everyone` flag needs MentionEveryone like the text.
    if ((cmd.flags & FLAG_MENTIONS_EVERYONE) !== 0 && cmd.bot !== true) throw new AppError({ type: 'IsNotBot' });
  }
  if (cmd.interactions?.restrict_reactions === true && interactionReactions.length === 0) throw new AppError({ type: 'InvalidProperty' });
  if (cmd.replies.length > MESSAGE_LIMITS.replies) throw new AppError({ type: 'TooManyReplies', max: MESSAGE_LIMITS.replies });
  if (cmd.attachments.length > MESSAGE_LIMITS.attachments) throw new AppError({ type: 'TooManyAttachments', max: MESSAGE_LIMITS.attachments });
  if (cmd.embeds.length > MESSAGE_LIMITS.embeds) throw new AppError({ type: 'TooManyEmbeds', max: MESSAGE_LIMITS.embeds });
  if (new Set(interactionReactions).size > MESSAGE_LIMITS.reactions) throw new AppError({ type: 'InvalidOperation' });
  for (const emoji of interactionReactions) if (emojiKind(emoji) === 'invalid') throw new AppError({ type: 'InvalidOperation' });
}

/** Checks everything once and returns the `MessageSent` event. */
export function decideSendMessage(cmd: SendMessage, facts: SendFacts): DomainEvent[] {
  checkSendMessage(cmd, facts.permissions, facts.slowmode);
  const interactionReactions = [...new Set(cmd.interactions?.reactions ?? [])];
  for (const emoji of interactionReactions) {
    if (emojiKind(emoji) === 'custom' && !facts.emojis.has(emoji)) throw new AppError({ type: 'NotFound' });
  }

  const parsed = cmd.mentions;
  if (parsed.everyone || parsed.online) requirePermission(facts.permissions, Permission.MentionEveryone);
  const roleMentions = parsed.roles.filter((id) => facts.roles.has(id));
  if (roleMentions.length > 0) requirePermission(facts.permissions, Permission.MentionRoles);

  const replies: string[] = [];
  const mentioned = [...parsed.users];
  for (const r of cmd.replies) {
    if (replies.includes(r.id)) continue;
    const target = own(facts.replies, r.id);
    if (target === null || target === undefined) {
      if (r.fail_if_not_exists === false) continue;
      throw new AppError({ type: 'NotFound' });
    }
    replies.push(r.id);
    if (r.mention && !mentioned.includes(target.author)) mentioned.push(target.author);
  }
  const mentions = mentioned.filter((id) => own(facts.canView, id) === true);

  // A file is used once: the same id twice is as unusable as an unknown one.
  const fileIds = fileIdsOf(cmd);
  if (new Set(fileIds).size !== fileIds.length) throw new AppError({ type: 'NotFound' });
  const file = (id: string): FileObject => {
    const f = own(facts.files, id);
    if (!f) throw new AppError({ type: 'NotFound' });
    return f;
  };
  for (const id of fileIds) file(id);
  if (cmd.masquerade?.avatar !== undefined && facts.avatar !== true) throw new AppError({ type: 'NotFound' });
  const message: MessageObject = { _id: cmd.messageId, nonce: cmd.nonce, channel: cmd.channelId, author: cmd.authorId };
  if (cmd.content !== undefined && cmd.content.length > 0) message.content = cmd.content;
  if (cmd.attachments.length > 0) message.attachments = cmd.attachments.map(file);
  if (cmd.embeds.length > 0) message.embeds = cmd.embeds.map((e) => toTextEmbed(e, file));
  if (mentions.length > 0) message.mentions = mentions;
  if (roleMentions.length > 0) message.role_mentions = roleMentions;
  if (replies.length > 0) message.replies = replies;
  const interactions: InteractionsObject = {};
  if (interactionReactions.length > 0) interactions.reactions = interactionReactions;
  if (cmd.interactions?.restrict_reactions === true) interactions.restrict_reactions = true;
  if (Object.keys(interactions).length > 0) message.interactions = interactions;
  if (cmd.masquerade !== undefined && Object.keys(cmd.masquerade).length > 0) message.masquerade = cmd.masquerade;
  const flags = (cmd.flags ?? 0) | (parsed.everyone ? FLAG_MENTIONS_EVERYONE : 0) | (parsed.online ? FLAG_MENTIONS_ONLINE : 0);
  if (flags !== 0) message.flags = flags;
  const mentionedUsers = mentionedUsersOf(mentions, { roles: roleMentions, everyone: parsed.everyone, online: parsed.online }, cmd.authorId, flags, facts.audience);
  // A suppressed message says so by its flag (the projection records nothing for it): no field needed.
  const suppressed = (flags & FLAG_SUPPRESS_NOTIFICATIONS) !== 0;
  const sameAsMessage = mentionedUsers.length === mentions.length && mentionedUsers.every((id, i) => id === mentions[i]);
  const data: Extract<DomainEvent, { type: 'MessageSent' }>['data'] = suppressed || sameAsMessage ? { message } : { message, mentionedUsers };
  // Link previews are the worker's, from this event: only for senders who may embed (Stoat's January).
  if (message.content !== undefined && has(facts.permissions, Permission.SendEmbeds) && previewUrls(message.content).length > 0) data.previews = true;
  return [{ type: 'MessageSent', data }];
}

/** A sendable embed as stored: a Text embed with its media File. */
export function toTextEmbed(e: SendableEmbed, file: (id: string) => FileObject): TextEmbedObject {
  const out: TextEmbedObject = { type: 'Text' };
  if (e.icon_url !== undefined) out.icon_url = e.icon_url;
  if (e.url !== undefined) out.url = e.url;
  if (e.title !== undefined) out.title = e.title;
  if (e.description !== undefined) out.description = e.description;
  if (e.media !== undefined) out.media = file(e.media);
  if (e.colour !== undefined) out.colour = e.colour;
  return out;
}
