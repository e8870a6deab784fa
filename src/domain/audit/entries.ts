/**
 * The audit log's entries (issue 9, DESIGN §4 "audit"): their shape, the closed list of actions, their
 * deterministic ids, and the pure mapping from one event plus the state just before it to its entry.
 * `projections/audit.ts` loads that state and stores the entries; `GET /servers/:id/audit_logs` serves them.
 *
 * An entry: `{_id, server, action, actor, target: {type, id}, at, reason?, changes, context?}`.
 * - `_id` is a ULID: its time is the event's `at`, its 80 "random" bits are the first bits of
 *   SHA-256(event id). The same event always gives the same id (a rebuild, or a replay after a migration
 *   between stores, which keeps event ids, reproduces every entry byte for byte), and ids sort by time, so
 *   paging by id is paging by time. Entries decided within the same millisecond sort in a fixed but
 *   arbitrary order.
 * - `actor` is the user who acted (`metadata.actor`; null for the system), `at` the event's time, `reason`
 *   the `X-Audit-Log-Reason` of the request (`metadata.reason`), absent when none was sent.
 * - `changes` maps a field of the target to `{before?, after?}`: the value before and after the action, a
 *   side omitted when the field had no value. Edits list every field the request touched (also when the value
 *   did not change); creations list the new object's fields (after only); deletions the deleted object's
 *   fields (before only). Values are shown as the API shows them, except that fields the API omits when
 *   false or empty appear explicitly: `nsfw`, `hoist`, `can_publish`, `can_receive` as booleans, member
 *   `roles` and channel `role_permissions` as `[]` / `{}`.
 * - `context` carries the ids that locate the target where its id alone does not: the role of a channel
 *   override; the channel and author of a message; the emoji and user of a removed reaction.
 *
 * Messages: a deletion is audited when someone other than the author deleted it (`MessageDelete`, with the
 * message's content, attachments, embeds, masquerade and system body before); a bulk delete is one
 * `MessageBulkDelete` entry on the channel listing every deleted message with its author (its events are
 * appended together and only the last names the bulk, so the projection collects the others' authors on
 * the way); pins and unpins (`MessagePin`, `MessageUnpin`); a reaction removed from another user, every
 * reaction with one emoji (`ReactionRemove`) or all reactions (`ReactionsClear`). Removing one's own
 * reaction or deleting one's own message is not audited.
 *
 * An event whose target was already gone when it was applied (an edit decided concurrently with a deletion)
 * changed nothing and gives no entry, exactly as the read models ignore it.
 */
import { createHash } from 'node:crypto';
import { encodeTime } from 'ulid';
import type { StoredEvent } from '../events.ts';
import { evolveChannel, type ChannelState } from '../channel/state.ts';
import type { EmojiObject, InviteObject, MemberObject, RoleObject, ServerBanObject } from '../models.ts';
import { evolveMessage, type MessageState } from '../message/state.ts';
import { evolveMember, evolveServer, type ServerState } from '../server/state.ts';
import { own, setOwn } from '../../own.ts';
import type { WebhookState } from '../webhook/state.ts';

/** Every action an entry can record (the `action` query filter accepts exactly these). */
export const AUDIT_ACTIONS = [
  'ServerEdit',
  'ServerDefaultPermissionsEdit',
  'ChannelCreate',
  'ChannelEdit',
  'ChannelDelete',
  'ChannelDefaultPermissionsEdit',
  'ChannelRolePermissionsEdit',
  'RoleCreate',
  'RoleEdit',
  'RolePermissionsEdit',
  'RoleDelete',
  'RolesReorder',
  'MemberEdit',
  'MemberKick',
  'BanCreate',
  'BanDelete',
  'InviteCreate',
  'InviteDelete',
  'EmojiCreate',
  'EmojiUpdate',
  'EmojiDelete',
  'MessageDelete',
  'MessageBulkDelete',
  'MessagePin',
  'MessageUnpin',
  'ReactionRemove',
  'ReactionsClear',
  'BotAdd',
  'WebhookCreate',
  'WebhookEdit',
  'WebhookDelete',
] as const;

/** One audited action. */
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** What an entry is about. */
export type AuditTargetType = 'Server' | 'Channel' | 'Role' | 'User' | 'Invite' | 'Emoji' | 'Message' | 'Webhook';

/** The before and after value of one field; a side is omitted when the field had no value. */
export interface AuditChange {
  before?: unknown;
  after?: unknown;
}

/** One audit log entry. */
export interface AuditEntry {
  /** ULID from the event's time and id (deterministic). */
  _id: string;
  /** The server the entry belongs to. */
  server: string;
  action: AuditAction;
  /** The user who acted; null for the system. */
  actor: string | null;
  /** The object acted on. */
  target: { type: AuditTargetType; id: string };
  /** ISO time of the action. */
  at: string;
  /** The `X-Audit-Log-Reason` of the request, when one was sent. */
  reason?: string;
  /** Field → before/after. */
  changes: Record<string, AuditChange>;
  /** Further ids locating the target (`{role}` of a channel role override, `{channel, author}` of a message …). */
  context?: Record<string, string>;
  /**
   * Set (only in the route's answer, never stored) when the reader cannot view the entry's channel: the
   * entry keeps its action, actor, target, time and reason and `context.channel`; `changes` is empty.
   */
  redacted?: true;
}

/** The channel an entry is about or happened in (`context.channel`, or a Channel target); none for others. */
export function auditEntryChannel(e: AuditEntry): string | undefined {
  if (e.context !== undefined && Object.hasOwn(e.context, 'channel')) return e.context.channel;
  if (e.target.type === 'Channel') return e.target.id;
  return undefined;
}

/** The entry as a reader who cannot view its channel sees it: no changes, no context but the channel. */
export function redactAuditEntry(e: AuditEntry): AuditEntry {
  const { changes: _changes, context: _context, ...rest } = e;
  const out: AuditEntry = { ...rest, changes: {}, redacted: true };
  const channel = auditEntryChannel(e);
  if (channel !== undefined && e.target.type !== 'Channel') out.context = { channel };
  return out;
}

/** The event types that can produce an entry, plus `ServerDeleted` (which drops the server's log). */
export const AUDITED_EVENT_TYPES = [
  'ServerEdited',
  'ServerDefaultPermissionsSet',
  'ServerDeleted',
  'ChannelCreated',
  'ChannelDeleted',
  'ChannelEdited',
  'ChannelDefaultPermissionsSet',
  'ChannelRolePermissionsSet',
  'RoleCreated',
  'RoleEdited',
  'RolePermissionsSet',
  'RoleDeleted',
  'RoleRanksSet',
  'MemberEdited',
  'MemberLeft',
  'UserBanned',
  'UserUnbanned',
  'InviteCreated',
  'InviteDeleted',
  'EmojiCreated',
  'EmojiEdited',
  'EmojiDeleted',
  'MessageDeleted',
  'MessagePinned',
  'MessageUnpinned',
  'MessageUnreacted',
  'MessageReactionRemoved',
  'MessageReactionsCleared',
  'MemberJoined',
  'WebhookCreated',
  'WebhookEdited',
  'WebhookDeleted',
] as const satisfies readonly StoredEvent['type'][];

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The entry id of an event: ULID time = `at`, randomness = the first 80 bits of SHA-256(event id). */
export function auditId(at: string, eventId: string): string {
  const ms = Date.parse(at);
  if (!Number.isFinite(ms)) throw new RangeError(`audit entry of event ${eventId}: bad time "${at}"`);
  const digest = createHash('sha256').update(eventId).digest();
  let bits = 0n;
  for (let i = 0; i < 10; i++) bits = (bits << 8n) | BigInt(digest[i]!);
  let random = '';
  for (let i = 0; i < 16; i++) {
    random = CROCKFORD[Number(bits & 31n)]! + random;
    bits >>= 5n;
  }
  return encodeTime(ms, 10) + random;
}

/** What the mapping needs besides the event: the state just before it (read from the server's read models). */
export interface AuditFacts {
  /** The server before the event. */
  server: ServerState;
  /** The channel before the event (channel-stream events and `ChannelDeleted`). */
  channel?: ChannelState | null;
  /** The member before the event (`MemberEdited`, `MemberLeft`). */
  member?: MemberObject | null;
  /** The ban before the event (`UserUnbanned`). */
  ban?: ServerBanObject | null;
  /** The invite before the event (`InviteDeleted`). */
  invite?: InviteObject | null;
  /** The emoji before the event (`EmojiEdited`, `EmojiDeleted`). */
  emoji?: EmojiObject | null;
  /** The message before the event (message-stream events). */
  message?: MessageState | null;
  /** The messages of a bulk delete with their authors, in the bulk's order (its last `MessageDeleted`). */
  bulk?: Array<{ _id: string; author: string }>;
  /** The webhook before the event (`WebhookEdited`, `WebhookDeleted`). */
  webhook?: WebhookState | null;
}

/** Which facts an event needs loaded: the server id, and the ids of the other objects it reads. */
export interface AuditNeeds {
  /** Server id; for channel-stream events it is read from the channel (`channelId`). */
  serverId?: string;
  channelId?: string;
  memberId?: string;
  banId?: string;
  inviteCode?: string;
  emojiId?: string;
  /** Message id (message-stream events; the channel is `channelId`). */
  messageId?: string;
  /** Webhook id (webhook-stream events). */
  webhookId?: string;
}

/** The facts an audited event needs, or null when the event type gives no entry. */
export function auditNeeds(e: StoredEvent): AuditNeeds | null {
  const serverId = e.stream.startsWith('server-') ? e.stream.slice('server-'.length) : undefined;
  switch (e.type) {
    case 'ServerEdited':
    case 'ServerDefaultPermissionsSet':
    case 'ChannelCreated':
    case 'RoleCreated':
    case 'RoleEdited':
    case 'RolePermissionsSet':
    case 'RoleDeleted':
    case 'RoleRanksSet':
    case 'UserBanned':
    case 'InviteCreated':
      return { serverId };
    case 'ChannelDeleted':
      return { serverId, channelId: e.data.channelId };
    case 'MemberEdited':
      return { serverId, memberId: e.data.userId };
    case 'MemberLeft':
      return e.data.reason === 'Kick' ? { serverId, memberId: e.data.userId } : null;
    case 'UserUnbanned':
      return { serverId, banId: e.data.userId };
    case 'InviteDeleted':
      return { serverId, inviteCode: e.data.code };
    case 'ChannelEdited':
    case 'ChannelDefaultPermissionsSet':
    case 'ChannelRolePermissionsSet':
      return { channelId: e.data.channelId };
    case 'EmojiCreated':
      return { serverId };
    case 'EmojiEdited':
    case 'EmojiDeleted':
      return { serverId, emojiId: e.data.emojiId };
    case 'MessageDeleted':
    case 'MessagePinned':
    case 'MessageUnpinned':
    case 'MessageUnreacted':
    case 'MessageReactionRemoved':
    case 'MessageReactionsCleared':
      return { channelId: e.data.channel, messageId: e.stream.slice('message-'.length) };
    case 'MemberJoined':
      // Only a bot invite (`by`) is audited; joins through invites are not (Stoat).
      return e.data.by !== undefined ? { serverId } : null;
    case 'WebhookCreated':
      return { channelId: e.data.channel_id };
    case 'WebhookEdited':
    case 'WebhookDeleted':
      return { channelId: e.data.channel_id, webhookId: e.stream.slice('webhook-'.length) };
    default:
      return null;
  }
}

/** True for the `MessageDeleted` events of a bulk delete (the last one, with `bulkIds`, gives the entry). */
export function isBulkDeletion(e: StoredEvent): boolean {
  return e.type === 'MessageDeleted' && (e.data.inBulk === true || e.data.bulkIds !== undefined);
}

type Fields = Record<string, unknown>;

/** The touched fields (in `order`) with their values before and after; fields without a value on both sides are left out. */
function diff(before: Fields | null, after: Fields | null, fields: readonly string[]): Record<string, AuditChange> {
  const out: Record<string, AuditChange> = {};
  for (const f of fields) {
    const b = before?.[f];
    const a = after?.[f];
    if (b === undefined && a === undefined) continue;
    const change: AuditChange = {};
    if (b !== undefined) change.before = b;
    if (a !== undefined) change.after = a;
    out[f] = change;
  }
  return out;
}

/** `fields` in canonical order, keeping those named in `touched`. */
function touchedIn(order: readonly string[], touched: Iterable<string>): string[] {
  const set = new Set(touched);
  return order.filter((f) => set.has(f));
}

const SERVER_FIELDS = ['name', 'description', 'categories', 'system_messages', 'analytics', 'icon', 'banner'] as const;
const SERVER_REMOVE: Record<string, string> = { Description: 'description', Categories: 'categories', SystemMessages: 'system_messages', Icon: 'icon', Banner: 'banner' };

/** Server fields as audited. */
function serverFields(s: ServerState): Fields {
  return { name: s.name, description: s.description, categories: s.categories, system_messages: s.system_messages, analytics: s.analytics };
}

const CHANNEL_FIELDS = ['name', 'description', 'nsfw', 'voice', 'slowmode', 'default_permissions', 'role_permissions'] as const;
const CHANNEL_CREATED_FIELDS = ['name', 'description', 'nsfw', 'voice'] as const;
const CHANNEL_REMOVE: Record<string, string> = { Description: 'description', Icon: 'icon', DefaultPermissions: 'default_permissions', Voice: 'voice', Slowmode: 'slowmode' };

/** Channel fields as audited (`nsfw` and `role_permissions` explicit). */
function channelFields(c: ChannelState): Fields {
  return {
    name: c.name,
    description: c.description,
    nsfw: c.nsfw === true,
    voice: c.voice,
    slowmode: c.slowmode,
    default_permissions: c.default_permissions,
    role_permissions: c.role_permissions ?? {},
  };
}

const ROLE_FIELDS = ['name', 'colour', 'hoist', 'rank', 'permissions'] as const;
const ROLE_REMOVE: Record<string, string> = { Colour: 'colour' };

/** Role fields as audited (`hoist` explicit). */
function roleFields(r: RoleObject): Fields {
  return { name: r.name, colour: r.colour, hoist: r.hoist === true, rank: r.rank, permissions: r.permissions };
}

const MEMBER_FIELDS = ['nickname', 'roles', 'timeout', 'can_publish', 'can_receive', 'avatar'] as const;
const MEMBER_KICKED_FIELDS = ['nickname', 'roles', 'timeout', 'joined_at'] as const;
const MEMBER_REMOVE: Record<string, string> = {
  Nickname: 'nickname',
  Roles: 'roles',
  Timeout: 'timeout',
  CanPublish: 'can_publish',
  CanReceive: 'can_receive',
  Avatar: 'avatar',
};

/** Member fields as audited (`roles`, `can_publish`, `can_receive` explicit). */
function memberFields(m: MemberObject): Fields {
  return {
    nickname: m.nickname,
    roles: m.roles ?? [],
    timeout: m.timeout,
    can_publish: m.can_publish !== false,
    can_receive: m.can_receive !== false,
    joined_at: m.joined_at,
  };
}

const MESSAGE_FIELDS = ['content', 'system', 'attachments', 'embeds', 'masquerade'] as const;

/** Message fields as audited. */
function messageFields(m: MessageState): Fields {
  return { content: m.content, system: m.system, attachments: m.attachments, embeds: m.embeds, masquerade: m.masquerade, pinned: m.pinned === true };
}

const EMOJI_FIELDS = ['name', 'creator_id', 'animated', 'nsfw'] as const;

/** Emoji fields as audited (`animated`, `nsfw` explicit). */
function emojiFields(e: EmojiObject): Fields {
  return { name: e.name, creator_id: e.creator_id, animated: e.animated === true, nsfw: e.nsfw === true };
}

/** The reactions of the given emoji (all of them when `emojis` is undefined), as `{emoji: user ids}`. */
function reactionsOf(m: MessageState, emojis?: string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [emoji, users] of Object.entries(m.reactions ?? {})) if (!emojis || emojis.includes(emoji)) setOwn(out, emoji, users);
  return out;
}

/** Role ids from the highest role (rank 0) down; ties by id, so the order is total. */
function rankOrder(s: ServerState): string[] {
  return Object.values(s.roles)
    .sort((a, b) => a.rank - b.rank || (a._id < b._id ? -1 : a._id > b._id ? 1 : 0))
    .map((r) => r._id);
}

/** Fields named by an event's `data` and `remove`, in canonical order. */
function edited(order: readonly string[], data: object, remove: readonly string[], removeMap: Record<string, string>): string[] {
  return touchedIn(order, [...Object.keys(data), ...remove.map((f) => removeMap[f]).filter((f): f is string => f !== undefined)]);
}

/**
 * The entry of an event given the state before it, or null when the event is not audited or changed nothing
 * (its target was already gone). Pure: the same event and facts always give the same entry.
 */
export function auditEntryOf(e: StoredEvent, facts: AuditFacts): AuditEntry | null {
  const { server } = facts;
  const entry = (action: AuditAction, target: AuditEntry['target'], changes: Record<string, AuditChange>, context?: Record<string, string>): AuditEntry => {
    const out: AuditEntry = { _id: auditId(e.metadata.at, e.id), server: server._id, action, actor: e.metadata.actor, target, at: e.metadata.at, changes };
    if (e.metadata.reason !== undefined) out.reason = e.metadata.reason;
    if (context) out.context = context;
    return out;
  };
  const serverTarget = { type: 'Server', id: server._id } as const;
  switch (e.type) {
    case 'ServerEdited': {
      const after = evolveServer(server, e, e.revision)!;
      const fields = edited(SERVER_FIELDS, e.data.data, e.data.remove, SERVER_REMOVE);
      return entry('ServerEdit', serverTarget, diff(serverFields(server), serverFields(after), fields));
    }
    case 'ServerDefaultPermissionsSet':
      return entry('ServerDefaultPermissionsEdit', serverTarget, {
        default_permissions: { before: server.default_permissions, after: e.data.permissions },
      });
    case 'ChannelCreated': {
      const c = e.data.channel;
      return entry('ChannelCreate', { type: 'Channel', id: c._id }, diff(null, channelFields({ ...c, revision: -1 }), CHANNEL_CREATED_FIELDS));
    }
    case 'ChannelDeleted': {
      const c = facts.channel;
      return entry('ChannelDelete', { type: 'Channel', id: e.data.channelId }, c ? diff(channelFields(c), null, CHANNEL_FIELDS) : {});
    }
    case 'ChannelEdited':
    case 'ChannelDefaultPermissionsSet':
    case 'ChannelRolePermissionsSet': {
      const before = facts.channel;
      if (!before) return null;
      if (e.type === 'ChannelRolePermissionsSet' && !Object.hasOwn(server.roles, e.data.roleId)) return null;
      const after = evolveChannel(before, e, e.revision, (roleId) => Object.hasOwn(server.roles, roleId))!;
      const target = { type: 'Channel', id: before._id } as const;
      if (e.type === 'ChannelEdited') {
        const fields = edited(CHANNEL_FIELDS, e.data.data, e.data.remove, CHANNEL_REMOVE);
        return entry('ChannelEdit', target, diff(channelFields(before), channelFields(after), fields));
      }
      if (e.type === 'ChannelDefaultPermissionsSet') {
        return entry('ChannelDefaultPermissionsEdit', target, diff(channelFields(before), channelFields(after), ['default_permissions']));
      }
      const roleId = e.data.roleId;
      return entry(
        'ChannelRolePermissionsEdit',
        target,
        diff({ permissions: own(before.role_permissions, roleId) }, { permissions: own(after.role_permissions, roleId) }, ['permissions']),
        { role: roleId },
      );
    }
    case 'RoleCreated':
      return entry('RoleCreate', { type: 'Role', id: e.data.roleId }, diff(null, roleFields(e.data.role), ROLE_FIELDS));
    case 'RoleEdited':
    case 'RolePermissionsSet': {
      const before = Object.hasOwn(server.roles, e.data.roleId) ? server.roles[e.data.roleId] : undefined;
      if (!before) return null;
      const after = own(evolveServer(server, e, e.revision)!.roles, e.data.roleId)!;
      const target = { type: 'Role', id: e.data.roleId } as const;
      if (e.type === 'RolePermissionsSet') return entry('RolePermissionsEdit', target, diff(roleFields(before), roleFields(after), ['permissions']));
      return entry('RoleEdit', target, diff(roleFields(before), roleFields(after), edited(ROLE_FIELDS, e.data.data, e.data.remove, ROLE_REMOVE)));
    }
    case 'RoleDeleted': {
      const before = Object.hasOwn(server.roles, e.data.roleId) ? server.roles[e.data.roleId] : undefined;
      if (!before) return null;
      return entry('RoleDelete', { type: 'Role', id: e.data.roleId }, diff(roleFields(before), null, ROLE_FIELDS));
    }
    case 'RoleRanksSet':
      return entry('RolesReorder', serverTarget, { ranks: { before: rankOrder(server), after: rankOrder(evolveServer(server, e, e.revision)!) } });
    case 'MemberEdited': {
      const before = facts.member;
      if (!before) return null;
      const after = evolveMember(before, e)!;
      const fields = edited(MEMBER_FIELDS, e.data.data, e.data.remove, MEMBER_REMOVE);
      return entry('MemberEdit', { type: 'User', id: e.data.userId }, diff(memberFields(before), memberFields(after), fields));
    }
    case 'MemberLeft': {
      if (e.data.reason !== 'Kick' || !facts.member) return null;
      return entry('MemberKick', { type: 'User', id: e.data.userId }, diff(memberFields(facts.member), null, MEMBER_KICKED_FIELDS));
    }
    case 'UserBanned':
      return entry('BanCreate', { type: 'User', id: e.data.userId }, diff(null, { reason: e.data.reason }, ['reason']));
    case 'UserUnbanned':
      return entry('BanDelete', { type: 'User', id: e.data.userId }, diff({ reason: facts.ban?.reason }, null, ['reason']));
    case 'InviteCreated': {
      const i = e.data.invite;
      return entry('InviteCreate', { type: 'Invite', id: i._id }, diff(null, { channel: i.channel, creator: i.creator }, ['channel', 'creator']));
    }
    case 'InviteDeleted': {
      const i = facts.invite;
      return entry('InviteDelete', { type: 'Invite', id: e.data.code }, diff(i ? { channel: i.channel, creator: i.creator } : null, null, ['channel', 'creator']));
    }
    case 'EmojiCreated':
      return entry('EmojiCreate', { type: 'Emoji', id: e.data.emoji._id }, diff(null, emojiFields(e.data.emoji), EMOJI_FIELDS));
    case 'EmojiEdited': {
      const before = facts.emoji;
      return entry('EmojiUpdate', { type: 'Emoji', id: e.data.emojiId }, before ? diff({ name: before.name }, { name: e.data.name }, ['name']) : {});
    }
    case 'EmojiDeleted': {
      const before = facts.emoji;
      return entry('EmojiDelete', { type: 'Emoji', id: e.data.emojiId }, before ? diff(emojiFields(before), null, EMOJI_FIELDS) : {});
    }
    case 'MessageDeleted': {
      const channel = e.data.channel;
      if (e.data.bulkIds) {
        return entry('MessageBulkDelete', { type: 'Channel', id: channel }, { messages: { before: facts.bulk ?? [] } });
      }
      const m = facts.message;
      if (e.data.inBulk || !m || m.author === e.metadata.actor) return null;
      return entry('MessageDelete', { type: 'Message', id: m._id }, diff(messageFields(m), null, MESSAGE_FIELDS), { channel, author: m.author });
    }
    case 'MessagePinned':
    case 'MessageUnpinned': {
      const m = facts.message;
      if (!m) return null;
      const after = evolveMessage(m, e, e.revision)!;
      const action = e.type === 'MessagePinned' ? 'MessagePin' : 'MessageUnpin';
      return entry(action, { type: 'Message', id: m._id }, diff(messageFields(m), messageFields(after), ['pinned']), { channel: e.data.channel, author: m.author });
    }
    case 'MessageUnreacted':
    case 'MessageReactionRemoved':
    case 'MessageReactionsCleared': {
      const m = facts.message;
      if (!m) return null;
      // Removing one's own reaction is not moderation.
      if (e.type === 'MessageUnreacted' && e.data.userId === e.metadata.actor) return null;
      const emojis = e.type === 'MessageReactionsCleared' ? undefined : [e.data.emoji];
      const after = evolveMessage(m, e, e.revision)!;
      const context: Record<string, string> = { channel: e.data.channel, author: m.author };
      if (e.type !== 'MessageReactionsCleared') context.emoji = e.data.emoji;
      if (e.type === 'MessageUnreacted') context.user = e.data.userId;
      const action = e.type === 'MessageReactionsCleared' ? 'ReactionsClear' : 'ReactionRemove';
      return entry(action, { type: 'Message', id: m._id }, { reactions: { before: reactionsOf(m, emojis), after: reactionsOf(after, emojis) } }, context);
    }
    case 'MemberJoined':
      if (e.data.by === undefined) return null;
      return entry('BotAdd', { type: 'User', id: e.data.member._id.user }, {});
    case 'WebhookCreated': {
      const w = e.data;
      const changes: Record<string, AuditChange> = { name: { after: w.name }, channel_id: { after: w.channel_id }, permissions: { after: Number(BigInt(w.permissions)) } };
      if (w.avatar) changes.avatar = { after: w.avatar._id };
      return entry('WebhookCreate', { type: 'Webhook', id: w.id }, changes, { channel: w.channel_id });
    }
    case 'WebhookEdited': {
      const w = facts.webhook;
      if (!w) return null;
      const changes: Record<string, AuditChange> = {};
      const pair = (before: unknown, after: unknown): AuditChange => ({ ...(before !== undefined ? { before } : {}), ...(after !== undefined ? { after } : {}) });
      if (e.data.name !== undefined) changes.name = pair(w.name, e.data.name);
      if (e.data.permissions !== undefined) changes.permissions = pair(Number(BigInt(w.permissions)), Number(BigInt(e.data.permissions)));
      if (e.data.avatar !== undefined || e.data.remove.includes('Avatar')) changes.avatar = pair(w.avatar?._id, e.data.avatar?._id);
      return entry('WebhookEdit', { type: 'Webhook', id: w.id }, changes, { channel: w.channel_id });
    }
    case 'WebhookDeleted': {
      const w = facts.webhook;
      if (!w) return null;
      const changes: Record<string, AuditChange> = { name: { before: w.name }, channel_id: { before: w.channel_id }, permissions: { before: Number(BigInt(w.permissions)) } };
      if (w.avatar) changes.avatar = { before: w.avatar._id };
      return entry('WebhookDelete', { type: 'Webhook', id: w.id }, changes, { channel: w.channel_id, creator: w.creator_id });
    }
    default:
      return null;
  }
}
