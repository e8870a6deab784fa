/**
 * The events protocol (Revolt's "bonfire", version 1, JSON text frames; reference §9): what clients may
 * send, the frames the gateway answers with, and which event types are client events at all.
 */
import { z } from 'zod';

/** Ping data: a number (revolt.js, stoat.js) or a byte array (Revolt's own schema allows both). */
const PingData = z.union([z.number(), z.array(z.number().int().min(0).max(255)).max(1024)]);

/** A frame a client may send (`ClientMessage`, tagged by `type`). Unknown types are ignored. */
export const ClientFrame = z.discriminatedUnion('type', [
  /** Authenticates a socket opened without `?token=`. */
  z.object({ type: z.literal('Authenticate'), token: z.string().min(1).max(256) }),
  /** Heartbeat; answered with `Pong` carrying the same data unless `responded` is set. */
  z.object({ type: z.literal('Ping'), data: PingData, responded: z.unknown().optional() }),
  /** A client's answer to a server `Ping`; nothing to do. */
  z.object({ type: z.literal('Pong'), data: z.unknown().optional() }),
  /** The user started typing in a channel. */
  z.object({ type: z.literal('BeginTyping'), channel: z.string().min(1).max(64) }),
  /** The user stopped typing in a channel. */
  z.object({ type: z.literal('EndTyping'), channel: z.string().min(1).max(64) }),
  /** Marks a server active for this socket (its members' profile changes; 15 minutes, 5 servers at most). */
  z.object({ type: z.literal('Subscribe'), server_id: z.string().min(1).max(64) }),
]);
/** A parsed client frame. */
export type ClientFrame = z.infer<typeof ClientFrame>;

/** Client frame types this gateway knows (anything else is ignored, as bonfire does). */
export const CLIENT_FRAME_TYPES: ReadonlySet<string> = new Set(['Authenticate', 'Ping', 'Pong', 'BeginTyping', 'EndTyping', 'Subscribe']);

/** The errors the gateway sends in `{"type":"Error","data":{...}}` (bonfire's `WebSocketError`). */
export type GatewayError =
  /** The token is not a live session. The socket is closed after this frame. */
  | { type: 'InvalidSession' }
  /** The session's account has not chosen a username yet. The socket is closed after this frame. */
  | { type: 'OnboardingNotFinished' }
  /** `Authenticate` on a socket that is already authenticated. */
  | { type: 'AlreadyAuthenticated' }
  /** A frame that is not JSON, or a known frame type with a bad shape. */
  | { type: 'MalformedData'; msg: string }
  /** The service cannot serve the socket now (read models rebuilding, Redis unreachable). */
  | { type: 'InternalError'; at: string };

/** The Error frame for a gateway error. */
export function errorFrame(data: GatewayError): Record<string, unknown> {
  return { type: 'Error', data };
}

/**
 * Every server → client event type of Revolt/Stoat's `EventV1` that this gateway may forward. A payload
 * emitted by a projection whose type is not listed here never reaches a client (it is logged and dropped).
 */
export const CLIENT_EVENT_TYPES: ReadonlySet<string> = new Set([
  'Bulk',
  'WebhookCreate',
  'WebhookUpdate',
  'WebhookDelete',
  'Message',
  'MessageUpdate',
  'MessageAppend',
  'MessageDelete',
  'MessageReact',
  'MessageUnreact',
  'MessageRemoveReaction',
  'BulkMessageDelete',
  'ChannelCreate',
  'ChannelUpdate',
  'ChannelDelete',
  'ChannelGroupJoin',
  'ChannelGroupLeave',
  'ChannelAck',
  'ServerCreate',
  'ServerUpdate',
  'ServerDelete',
  'ServerMemberJoin',
  'ServerMemberUpdate',
  'ServerMemberLeave',
  'ServerRoleUpdate',
  'ServerRoleDelete',
  'ServerRoleRanksUpdate',
  'UserUpdate',
  'UserRelationship',
  'UserSettingsUpdate',
  'UserPlatformWipe',
  'UserSlowmodes',
  'EmojiCreate',
  'EmojiUpdate',
  'EmojiDelete',
  'WebhookCreate',
  'WebhookUpdate',
  'WebhookDelete',
  'VoiceChannelJoin',
  'VoiceChannelLeave',
  'VoiceChannelMove',
  'UserVoiceStateUpdate',
  'UserMoveVoiceChannel',
  'VoiceCallUpdate',
  'ReportCreate',
]);

/**
 * Internal events: emitted by projections for the gateway itself, never forwarded. `DeleteSession` (Stoat's
 * name) closes the sockets of a revoked session after sending them `Logout`.
 */
export const INTERNAL_EVENT_TYPES: ReadonlySet<string> = new Set(['DeleteSession']);

/** The Ready fields a client can ask for with `?ready=<field>` (bonfire's `ReadyPayloadFields`). */
export const READY_FIELDS = ['users', 'servers', 'channels', 'members', 'emojis', 'voice_states', 'policy_changes', 'channel_unreads'] as const;
/** One Ready field. */
export type ReadyField = (typeof READY_FIELDS)[number];
/** Fields sent when the client does not ask (bonfire's defaults: everything but `channel_unreads`). */
export const DEFAULT_READY_FIELDS: ReadonlySet<ReadyField> = new Set(READY_FIELDS.filter((f) => f !== 'channel_unreads'));

/**
 * The Ready fields selected by the query: bonfire's rule — without any `ready` parameter the defaults; with
 * one or more, exactly those named (unknown names ignored).
 */
export function readyFields(params: URLSearchParams): ReadonlySet<ReadyField> {
  const asked = params.getAll('ready');
  if (asked.length === 0) return DEFAULT_READY_FIELDS;
  return new Set(READY_FIELDS.filter((f) => asked.includes(f)));
}

/** Most settings keys one Ready carries (the per-user key limit of settings sync). */
export const READY_SETTINGS_KEYS_MAX = 64;

/**
 * The settings keys asked for with `?ready=user_settings[key]` (bonfire's `ReadyPayloadFields.user_settings`):
 * Ready then carries `user_settings {key: [timestamp, value]}` for those of them the user has stored.
 */
export function readySettingsKeys(params: URLSearchParams): string[] {
  const keys: string[] = [];
  for (const v of params.getAll('ready')) {
    const key = /^user_settings\[(\S{1,100})\]$/u.exec(v)?.[1];
    if (key !== undefined && !keys.includes(key)) keys.push(key);
  }
  return keys.slice(0, READY_SETTINGS_KEYS_MAX);
}
