/**
 * What Stoat's pushd sends to phones (pure): the platform-neutral notification a fan-out records in each send
 * job, and the FCM and APNs bodies built from it as Stoat's `outbound/fcm.rs` and `outbound/apn.rs` build them.
 * FCM gets a data message (every value a string: FCM HTTP v1 refuses others); APNs gets `aps.alert` (title and
 * body, or the localisation key of a friend request) and, for a message, the message itself.
 */
import type { MessageObject } from '../domain/message/events.ts';
import { cutUtf8, PUSH_BODY_BYTES, type PushNotification } from './notification.ts';

/** The endpoint value of a subscription that Firebase delivers (`auth` is the FCM registration token). */
export const FCM_ENDPOINT = 'fcm';
/** The endpoint value of a subscription that Apple delivers (`auth` is the APNs device token). */
export const APN_ENDPOINT = 'apn';

/** A notification for a phone, whatever the platform. */
export type MobileNotification =
  | {
      kind: 'message';
      /** Stoat's `format_title`: the author in a DM, `author, #group` in a group, `author in #channel` in a server. */
      title: string;
      body: string;
      /** The author's avatar URL. */
      icon: string;
      /** The channel id (FCM's collapse key, APNs' thread id). */
      tag: string;
      url: string;
      author: string;
      /** The channel's name (a DM's: the title). */
      channelName: string;
      message: MessageObject;
    }
  | { kind: 'friend'; accepted: boolean; userId: string; name: string }
  | { kind: 'call'; initiatorId: string; channelId: string; startedAt: string; ended: boolean }
  /** Stoat's `BadgeUpdate` after an ack: APNs only, the app icon's new number and nothing else. */
  | { kind: 'badge'; count: number };

/** Where a message was sent, as the title needs it. */
export type MessagePlace = { type: 'DirectMessage' } | { type: 'Group'; name: string } | { type: 'TextChannel'; name: string };

/** Stoat's `format_title` for a message notification. */
export function mobileTitle(author: string, place: MessagePlace): string {
  if (place.type === 'DirectMessage') return author;
  if (place.type === 'Group') return `${author}, #${place.name}`;
  return `${author} in #${place.name}`;
}

/** Most UTF-8 bytes of the message's content repeated in an APNs payload (Apple takes at most 4,096 bytes in all). */
const APNS_CONTENT_BYTES = 1000;

/** The mobile notification of a message, from the web payload already built for it. */
export function mobileMessageNotification(web: PushNotification, message: MessageObject, place: MessagePlace): MobileNotification {
  const title = mobileTitle(web.author, place);
  return {
    kind: 'message',
    title,
    body: cutUtf8(web.body, PUSH_BODY_BYTES),
    icon: web.icon,
    tag: web.tag,
    url: web.url,
    author: web.author,
    channelName: place.type === 'DirectMessage' ? title : place.name,
    message,
  };
}

/** An FCM HTTP v1 `message` (without its `token`). */
export interface FcmMessage {
  data: Record<string, string>;
  android?: { collapse_key?: string; priority?: 'HIGH' | 'NORMAL'; ttl?: string };
}

/** The FCM message of a notification, as Stoat's fcm.rs builds it (`ringSeconds`: how long a call rings). */
export function fcmMessage(n: MobileNotification, ringSeconds: number): FcmMessage {
  switch (n.kind) {
    case 'message':
      return { data: { title: n.title, body: n.body, image: n.icon }, android: { collapse_key: n.tag } };
    case 'friend':
      return { data: { type: n.accepted ? 'push.fr.accept' : 'push.fr.receive', id: n.userId, username: n.name } };
    case 'call':
      return {
        data: { initiator_id: n.initiatorId, channel_id: n.channelId, started_at: n.startedAt, ended: String(n.ended) },
        android: { priority: 'HIGH', ttl: `${ringSeconds}s` },
      };
    case 'badge':
      // Stoat's fcm.rs sends nothing for a badge update; the fan-out queues it for APNs subscriptions only.
      throw new Error('a badge update goes to APNs only');
  }
}

/**
 * The APNs JSON payload of a notification, as Stoat's apn.rs builds it. `badge` is the app icon's number:
 * Stoat's `get_badge_count`, the user's unread mentions over all channels (left out when it could not be read).
 */
export function apnsPayload(n: MobileNotification, badge?: number): Record<string, unknown> {
  const p = apnsBody(n);
  if (badge !== undefined) p.aps = { ...(p.aps as Record<string, unknown>), badge };
  return p;
}

function apnsBody(n: MobileNotification): Record<string, unknown> {
  switch (n.kind) {
    case 'message': {
      // The message rides along for the app's notification extension; its text is cut so the payload fits.
      const message = n.message.content ? { ...n.message, content: cutUtf8(n.message.content, APNS_CONTENT_BYTES) } : n.message;
      return {
        aps: { alert: { title: n.title, body: n.body }, sound: 'default', 'thread-id': n.tag, 'mutable-content': 1 },
        message,
        url: n.url,
        // Stoat's struct means these camelCase (its serde attribute renames all three to one literal key by mistake).
        authorAvatar: n.icon,
        authorDisplayName: n.author,
        channelName: n.channelName,
      };
    }
    case 'friend':
      return {
        aps: { alert: { 'loc-key': n.accepted ? 'push.fr.accepted' : 'push.fr.received', 'loc-args': [n.name] }, sound: 'default', 'mutable-content': 1 },
      };
    case 'call':
      return { aps: { 'mutable-content': 1 }, initiator_id: n.initiatorId, channelId: n.channelId, startedAt: n.startedAt, ended: n.ended };
    case 'badge':
      return { aps: { badge: n.count } };
  }
}
