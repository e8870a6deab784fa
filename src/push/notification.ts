/**
 * What a push says and who gets one (pure). The payload is Stoat's `PushNotification` (author, icon, image,
 * body, tag, timestamp, url), as its pushd hands it to the service worker. Who: the recipients of a DM or
 * group, or the users a server message mentions (`MessageSent.mentionedUsers`, else `message.mentions`),
 * never the author, nobody for a message flagged SuppressNotifications; then — in the worker — only those
 * not online on a socket (Stoat's `filter_online`), and only as the user's synced `notifications` setting
 * allows (the web clients' per-server and per-channel states).
 */
import type { MessageObject } from '../domain/message/events.ts';
import type { FileObject } from '../domain/shared.ts';
import { ulidTime } from '../ids.ts';

/** Stoat's PushNotification, what the service worker receives. */
export interface PushNotification {
  /** The author's name as the channel shows it (masquerade, display name, username). */
  author: string;
  /** URL of the author's avatar (their upload, or the default avatar). */
  icon: string;
  /** URL of the first image attachment. */
  image?: string;
  /** The message text (cut to fit a push payload), or what it carries. */
  body: string;
  /** The channel id: one notification per channel replaces the previous one. */
  tag: string;
  /** Seconds since the epoch at which the message was sent. */
  timestamp: number;
  /** Where a click goes: the message in the web app. */
  url: string;
}

/** The author as the payload needs it. */
export interface PushAuthor {
  _id: string;
  username: string;
  display_name?: string;
  avatar?: FileObject;
}

/** Public URLs the payload links to. */
export interface PushUrls {
  /** APP_URL. */
  app: string;
  /** The API (default avatars). */
  api: string;
  /** The media server (uploads). */
  media: string;
}

/** Most UTF-8 bytes of `body`: the encrypted payload must stay under the 4,096 bytes push services take. */
export const PUSH_BODY_BYTES = 1500;

/** Message flag SuppressNotifications (Revolt). */
const SUPPRESS_NOTIFICATIONS = 2;

/** Cuts a string to at most `bytes` UTF-8 bytes on a code point boundary, marking the cut with an ellipsis. */
export function cutUtf8(s: string, bytes: number): string {
  if (Buffer.byteLength(s) <= bytes) return s;
  let out = '';
  let used = 0;
  for (const ch of s) {
    const n = Buffer.byteLength(ch);
    if (used + n > bytes - 3) break;
    out += ch;
    used += n;
  }
  return `${out}…`;
}

/** The push payload of a message. */
export function pushNotificationOf(message: MessageObject, author: PushAuthor | null, urls: PushUrls): PushNotification {
  const name = message.masquerade?.name ?? author?.display_name ?? author?.username ?? 'Unknown user';
  const icon = message.masquerade?.avatar
    ?? (author?.avatar ? `${urls.media}/avatars/${author.avatar._id}` : `${urls.api}/users/${message.author}/default_avatar`);
  const image = message.attachments?.find((a) => a.metadata.type === 'Image');
  const n = message.attachments?.length ?? 0;
  const text = message.content && message.content.trim() !== '' ? message.content : n > 0 ? (n === 1 ? 'Sent an attachment' : `Sent ${n} attachments`) : 'Empty message';
  return {
    author: name,
    icon,
    ...(image ? { image: `${urls.media}/attachments/${image._id}` } : {}),
    body: cutUtf8(text, PUSH_BODY_BYTES),
    tag: message.channel,
    timestamp: Math.floor(ulidTime(message._id) / 1000),
    url: `${urls.app}/channel/${message.channel}/${message._id}`,
  };
}

/**
 * Whether anyone could be pushed for a sent message, judged from its event alone (the log follower's filter, so
 * a message that cannot push costs no queue job): a private channel's message can (its recipients are read
 * later); a server channel's only when `pushCandidates` names someone (a mention, `@everyone`'s or a role's
 * expansion in `mentionedUsers`); nothing with SuppressNotifications. The fan-out never pushes where this is false.
 */
export function couldPush(message: MessageObject, mentionedUsers: readonly string[] | undefined, inPrivateChannel: boolean): boolean {
  if (((message.flags ?? 0) & SUPPRESS_NOTIFICATIONS) !== 0) return false;
  return inPrivateChannel || pushCandidates(message, mentionedUsers, null).length > 0;
}

/** Who may be notified of a message before presence and settings: recipients of a private channel, else the mentioned. */
export function pushCandidates(message: MessageObject, mentionedUsers: readonly string[] | undefined, privateRecipients: readonly string[] | null): string[] {
  if (((message.flags ?? 0) & SUPPRESS_NOTIFICATIONS) !== 0) return [];
  const base = privateRecipients ?? mentionedUsers ?? message.mentions ?? [];
  return [...new Set(base)].filter((u) => u !== message.author);
}

/** A notification state of the web clients' `notifications` setting. */
export type NotificationState = 'all' | 'mention' | 'none' | 'muted';

const STATES: ReadonlySet<string> = new Set(['all', 'mention', 'none', 'muted']);

/** The parsed `notifications` setting: per-server and per-channel states (anything else is ignored). */
export interface NotificationSettings {
  server: Map<string, NotificationState>;
  channel: Map<string, NotificationState>;
}

/** Parses the synced `notifications` value (a JSON string `{server: {id: state}, channel: {id: state}}`); malformed parts are ignored. */
export function parseNotificationSettings(value: unknown): NotificationSettings {
  const out: NotificationSettings = { server: new Map(), channel: new Map() };
  let v: unknown = value;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return out;
    }
  }
  if (!v || typeof v !== 'object') return out;
  for (const kind of ['server', 'channel'] as const) {
    const m = (v as Record<string, unknown>)[kind];
    if (!m || typeof m !== 'object' || Array.isArray(m)) continue;
    for (const [id, state] of Object.entries(m as Record<string, unknown>)) {
      if (typeof state === 'string' && STATES.has(state)) out[kind].set(id, state as NotificationState);
    }
  }
  return out;
}

/**
 * Whether a user's settings let a push through: the channel's state, else its server's, else the default
 * (`all` for DMs and groups, `mention` for server channels, as the web clients have it). `all` notifies
 * everything, `mention` only mentions, `none` and `muted` nothing.
 */
export function settingsAllow(settings: NotificationSettings, where: { channelId: string; serverId: string | null }, mentioned: boolean): boolean {
  const state = settings.channel.get(where.channelId) ?? (where.serverId ? settings.server.get(where.serverId) : undefined) ?? (where.serverId ? 'mention' : 'all');
  if (state === 'all') return true;
  if (state === 'mention') return mentioned;
  return false;
}
