// The pure part of the audit log: deterministic entry ids, which events give entries, and how `changes` is
// computed from the state before an event (no Redis; the HTTP tests cover the same end to end).
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { AUDIT_ACTIONS, AUDITED_EVENT_TYPES, auditEntryOf, auditId, auditNeeds, isBulkDeletion, type AuditFacts } from '../src/domain/audit/entries.ts';
import type { MessageState } from '../src/domain/message/state.ts';
import type { ChannelState } from '../src/domain/channel/state.ts';
import type { DomainEvent, StoredEvent } from '../src/domain/events.ts';
import type { EventMetadata } from '../src/eventstore/port.ts';
import { isUlid, ulidTime } from '../src/ids.ts';
import type { ServerState } from '../src/domain/server/state.ts';

const S = '01JAAAAAAAAAAAAAAAAAAAAAAS';
const OWNER = '01JAAAAAAAAAAAAAAAAAAAAOWN';
const MOD = '01JAAAAAAAAAAAAAAAAAAAAMOD';
const AT = '2030-01-02T03:04:05.678Z';

let position = 0n;
/** A recorded event of `server-S` (or `channel-<id>`) with the given metadata. */
function stored(e: DomainEvent, meta: Partial<EventMetadata> = {}, stream = `server-${S}`): StoredEvent {
  return {
    ...e,
    id: randomUUID(),
    stream,
    revision: 7,
    position: ++position,
    metadata: { actor: MOD, requestId: 'r', at: AT, scope: S, ...meta },
  } as StoredEvent;
}

const server: ServerState = {
  _id: S,
  owner: OWNER,
  name: 'Before',
  channels: ['C1'],
  roles: {
    R1: { _id: 'R1', name: 'Top', permissions: { a: 1, d: 0 }, rank: 0 },
    R2: { _id: 'R2', name: 'Low', permissions: { a: 0, d: 0 }, rank: 1, hoist: true, colour: '#fff' },
  },
  default_permissions: 5,
  revision: 6,
};
const channel: ChannelState = { channel_type: 'TextChannel', _id: 'C1', server: S, name: 'general', revision: 2 };
const facts: AuditFacts = { server };

t.test('entry ids: a ULID of the event time, derived from the event id', async (t) => {
  const id = randomUUID();
  const a = auditId(AT, id);
  t.ok(isUlid(a), `${a} is a ULID`);
  t.equal(ulidTime(a), Date.parse(AT), 'its time is the event time');
  t.equal(auditId(AT, id), a, 'the same event gives the same id');
  t.not(auditId(AT, randomUUID()), a, 'another event, another id');
  t.equal(auditId(AT, id).slice(0, 10), auditId(AT, randomUUID()).slice(0, 10), 'the time part depends on the time only');
  for (let i = 0; i < 200; i++) {
    const earlier = auditId(new Date(Date.parse(AT) + i).toISOString(), randomUUID());
    const later = auditId(new Date(Date.parse(AT) + i + 1).toISOString(), randomUUID());
    if (!(earlier < later)) t.fail(`ids sort by time: ${earlier} < ${later}`);
  }
  t.throws(() => auditId('not a time', id), RangeError);
});

t.test('the action list and the audited event types are closed and distinct', async (t) => {
  t.equal(new Set(AUDIT_ACTIONS).size, AUDIT_ACTIONS.length);
  t.equal(new Set(AUDITED_EVENT_TYPES).size, AUDITED_EVENT_TYPES.length);
});

t.test('events that are not audited give no entry', async (t) => {
  const events: DomainEvent[] = [
    { type: 'ServerCreated', data: { server: { _id: S, owner: OWNER, name: 'x', default_permissions: 0 }, channels: [] } },
    { type: 'MemberJoined', data: { member: { _id: { server: S, user: MOD }, joined_at: AT } } },
    { type: 'MemberLeft', data: { userId: MOD, reason: 'Leave' } },
    { type: 'MemberLeft', data: { userId: MOD, reason: 'Ban' } },
    { type: 'ServerDeleted', data: { channels: [] } },
  ];
  for (const e of events) {
    const s = stored(e);
    t.equal(auditNeeds(s), null, `${e.type} needs nothing`);
    t.equal(auditEntryOf(s, { ...facts, member: { _id: { server: S, user: MOD }, joined_at: AT } }), null, `${e.type}: no entry`);
  }
});

t.test('an event whose target was already gone changed nothing: no entry', async (t) => {
  t.equal(auditEntryOf(stored({ type: 'RoleEdited', data: { roleId: 'gone', data: { name: 'x' }, remove: [] } }), facts), null, 'role edit');
  t.equal(auditEntryOf(stored({ type: 'RolePermissionsSet', data: { roleId: 'gone', permissions: { a: 1, d: 0 } } }), facts), null, 'role permissions');
  t.equal(auditEntryOf(stored({ type: 'RoleDeleted', data: { roleId: 'gone' } }), facts), null, 'role delete');
  t.equal(auditEntryOf(stored({ type: 'MemberEdited', data: { userId: MOD, data: { nickname: 'n' }, remove: [] } }), { ...facts, member: null }), null, 'member edit');
  t.equal(auditEntryOf(stored({ type: 'MemberLeft', data: { userId: MOD, reason: 'Kick' } }), { ...facts, member: null }), null, 'kick');
  const edit = stored({ type: 'ChannelEdited', data: { channelId: 'C1', data: { name: 'x' }, remove: [] } }, {}, 'channel-C1');
  t.equal(auditEntryOf(edit, { ...facts, channel: null }), null, 'channel edit');
  const override = stored({ type: 'ChannelRolePermissionsSet', data: { channelId: 'C1', roleId: 'gone', permissions: { a: 1, d: 0 } } }, {}, 'channel-C1');
  t.equal(auditEntryOf(override, { ...facts, channel }), null, 'override of a deleted role');
  t.ok(auditEntryOf(edit, { ...facts, channel }), 'but with the channel present there is one');
});

t.test('actor, time and reason come from the metadata; no reason, no key', async (t) => {
  const e = stored({ type: 'ServerDefaultPermissionsSet', data: { permissions: 7 } }, { reason: 'répété 🚫', actor: null });
  const entry = auditEntryOf(e, facts)!;
  t.strictSame(entry, {
    _id: auditId(AT, e.id),
    server: S,
    action: 'ServerDefaultPermissionsEdit',
    actor: null,
    target: { type: 'Server', id: S },
    at: AT,
    changes: { default_permissions: { before: 5, after: 7 } },
    reason: 'répété 🚫',
  });
  const without = auditEntryOf(stored({ type: 'ServerDefaultPermissionsSet', data: { permissions: 7 } }), facts)!;
  t.notOk('reason' in without, 'no reason key without a reason');
  t.equal(without.actor, MOD);
});

t.test('changes: touched fields in a fixed order, a side omitted when the field had no value', async (t) => {
  const e = stored({ type: 'ServerEdited', data: { data: { description: 'new', name: 'Before' }, remove: ['Icon', 'SystemMessages'] } });
  const entry = auditEntryOf(e, facts)!;
  t.equal(JSON.stringify(entry.changes), '{"name":{"before":"Before","after":"Before"},"description":{"after":"new"}}', 'unchanged name listed; nothing for fields empty on both sides');
  const removed = auditEntryOf(stored({ type: 'ServerEdited', data: { data: {}, remove: ['Description'] } }), { server: { ...server, description: 'old' } })!;
  t.strictSame(removed.changes, { description: { before: 'old' } });
});

t.test('changes: flags and lists the API omits appear explicitly', async (t) => {
  const member = { _id: { server: S, user: MOD }, joined_at: AT, roles: ['R2'], can_publish: false as const };
  const e = stored({ type: 'MemberEdited', data: { userId: MOD, data: { roles: [], can_publish: true, can_receive: false }, remove: ['Avatar', 'JoinedAt'] } });
  t.strictSame(auditEntryOf(e, { ...facts, member })!.changes, {
    roles: { before: ['R2'], after: [] },
    can_publish: { before: false, after: true },
    can_receive: { before: true, after: false },
  });
  const role = auditEntryOf(stored({ type: 'RoleEdited', data: { roleId: 'R2', data: { hoist: false }, remove: ['Colour'] } }), facts)!;
  t.strictSame(role.changes, { colour: { before: '#fff' }, hoist: { before: true, after: false } });
  const ch = auditEntryOf(stored({ type: 'ChannelEdited', data: { channelId: 'C1', data: { nsfw: true }, remove: ['DefaultPermissions'] } }, {}, 'channel-C1'), { ...facts, channel })!;
  t.strictSame(ch.changes, { nsfw: { before: false, after: true } }, 'no default override before or after: not listed');
  t.strictSame(ch.target, { type: 'Channel', id: 'C1' });
});

t.test('role order: before and after, highest first', async (t) => {
  const e = stored({ type: 'RoleRanksSet', data: { ranks: ['R2', 'R1'] } });
  t.strictSame(auditEntryOf(e, facts)!.changes, { ranks: { before: ['R1', 'R2'], after: ['R2', 'R1'] } });
});

t.test('a channel role override names its role in context', async (t) => {
  const e = stored({ type: 'ChannelRolePermissionsSet', data: { channelId: 'C1', roleId: 'R1', permissions: { a: 1, d: 2 } } }, {}, 'channel-C1');
  const entry = auditEntryOf(e, { ...facts, channel: { ...channel, role_permissions: { R1: { a: 0, d: 1 } } } })!;
  t.strictSame([entry.action, entry.context, entry.changes], ['ChannelRolePermissionsEdit', { role: 'R1' }, { permissions: { before: { a: 0, d: 1 }, after: { a: 1, d: 2 } } }]);
});

t.test('messages: only moderation gives entries', async (t) => {
  const message: MessageState = { _id: 'M1', channel: 'C1', author: 'AUTHOR', content: 'hi', revision: 0, reactions: { x: ['AUTHOR', MOD] } };
  const m = (e: DomainEvent, actor = MOD) => stored(e, { actor }, 'message-M1');
  const f = { ...facts, channel, message };
  t.equal(auditEntryOf(m({ type: 'MessageDeleted', data: { channel: 'C1' } }, 'AUTHOR'), f), null, 'the author deleting: none');
  t.match(auditEntryOf(m({ type: 'MessageDeleted', data: { channel: 'C1' } }), f), { action: 'MessageDelete', context: { author: 'AUTHOR' } }, 'someone else: MessageDelete');
  t.equal(auditEntryOf(m({ type: 'MessageDeleted', data: { channel: 'C1', inBulk: true } }), f), null, 'a bulk member: none (the bulk has one entry)');
  const bulk = auditEntryOf(m({ type: 'MessageDeleted', data: { channel: 'C1', bulkIds: ['M0', 'M1'] } }, 'AUTHOR'), { ...f, bulk: [{ _id: 'M0', author: 'A' }, { _id: 'M1', author: 'AUTHOR' }] })!;
  t.strictSame([bulk.action, bulk.target, bulk.changes], ['MessageBulkDelete', { type: 'Channel', id: 'C1' }, { messages: { before: [{ _id: 'M0', author: 'A' }, { _id: 'M1', author: 'AUTHOR' }] } }], 'the last of a bulk: one entry, even by an author');
  t.equal(auditEntryOf(m({ type: 'MessageUnreacted', data: { channel: 'C1', userId: MOD, emoji: 'x' } }), f), null, 'removing one\'s own reaction: none');
  t.strictSame(auditEntryOf(m({ type: 'MessageUnreacted', data: { channel: 'C1', userId: 'AUTHOR', emoji: 'x' } }), f)!.changes, { reactions: { before: { x: ['AUTHOR', MOD] }, after: { x: [MOD] } } });
  t.equal(auditEntryOf(m({ type: 'MessagePinned', data: { channel: 'C1', by: MOD } }), { ...f, message: null }), null, 'a message already gone: none');
  t.same(auditNeeds(m({ type: 'MessagePinned', data: { channel: 'C1', by: MOD } })), { channelId: 'C1', messageId: 'M1' });
  t.ok(isBulkDeletion(m({ type: 'MessageDeleted', data: { channel: 'C1', inBulk: true } })));
  t.notOk(isBulkDeletion(m({ type: 'MessageDeleted', data: { channel: 'C1' } })));
  t.strictSame(auditEntryOf(stored({ type: 'EmojiDeleted', data: { emojiId: 'E' } }), { ...facts, emoji: null })!.changes, {}, 'an emoji the read models did not hold: no values');
});
