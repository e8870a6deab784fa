// Relationship, user-permission and group decisions without Redis: Stoat's state machine, the outgoing limit
// at N and N+1, who may DM whom, the private channel permission values, and the group rules.
import t from 'tap';
import { decideAddFriend, decideBlock, decideRemoveFriend, decideUnblock } from '../src/domain/relationship/decide.ts';
import type { RelationshipStatus } from '../src/domain/relationship/events.ts';
import type { RelationsState } from '../src/domain/relationship/state.ts';
import { decideAddGroupMember, decideCreateGroup, decideEditGroup, decideLeaveGroup, decideRemoveGroupMember } from '../src/domain/private/group.ts';
import type { GroupObject } from '../src/domain/private/events.ts';
import { privateChannelPermissions } from '../src/access.ts';
import { GRANT_ALL_SAFE, Permission as P } from '../src/permissions/bits.ts';
import { DEFAULT_PERMISSION_DIRECT_MESSAGE, DEFAULT_PERMISSION_VIEW_ONLY, UserPermission, userPermissions } from '../src/permissions/user.ts';
import { AppError } from '../src/errors.ts';

const A = '01AAAAAAAAAAAAAAAAAAAAAAAA';
const B = '01BBBBBBBBBBBBBBBBBBBBBBBB';
const C = '01CCCCCCCCCCCCCCCCCCCCCCCC';
const state = (userId: string, relations: Record<string, RelationshipStatus> = {}): RelationsState => ({ userId, relations, revision: 0 });
const pair = (mine?: RelationshipStatus, theirs?: RelationshipStatus) => ({
  me: state(A, mine ? { [B]: mine } : {}),
  them: state(B, theirs ? { [A]: theirs } : {}),
});
const statuses = (c: ReturnType<typeof decideAddFriend>) => [c.mine[0]!.data, c.theirs[0]!.data].map((d) => (d as unknown as { status: string }).status);
const errorOf = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e instanceof AppError ? e.body : e;
  }
  return undefined;
};

t.test('add friend: every state', async (t) => {
  const ctx = { maxOutgoing: 10 };
  t.same(statuses(decideAddFriend(pair(), ctx)), ['Outgoing', 'Incoming'], 'None → request');
  t.same(statuses(decideAddFriend(pair('Incoming', 'Outgoing'), ctx)), ['Friend', 'Friend'], 'Incoming → accept');
  for (const [s, type] of [['Friend', 'AlreadyFriends'], ['Outgoing', 'AlreadySentRequest'], ['Blocked', 'Blocked'], ['BlockedOther', 'BlockedByOther']] as const) {
    t.same(errorOf(() => decideAddFriend(pair(s), ctx)), { type }, s);
  }
  t.same(errorOf(() => decideAddFriend({ me: state(A), them: state(A) }, ctx)), { type: 'NoEffect' }, 'oneself');
});

t.test('outgoing limit: N-1 pending may send the Nth, N pending may not', async (t) => {
  const with_ = (n: number) => ({ me: state(A, Object.fromEntries(Array.from({ length: n }, (_, i) => [`01X${String(i).padStart(23, '0')}`, 'Outgoing' as const]))), them: state(B) });
  t.same(statuses(decideAddFriend(with_(2), { maxOutgoing: 3 })), ['Outgoing', 'Incoming']);
  t.same(errorOf(() => decideAddFriend(with_(3), { maxOutgoing: 3 })), { type: 'TooManyPendingFriendRequests', max: 3 });
  const mixed = { me: state(A, { [C]: 'Friend', '01D0000000000000000000000D': 'Incoming', '01E0000000000000000000000E': 'Blocked' }), them: state(B) };
  t.same(statuses(decideAddFriend(mixed, { maxOutgoing: 1 })), ['Outgoing', 'Incoming'], 'only Outgoing counts');
});

t.test('remove, block, unblock', async (t) => {
  for (const s of ['Friend', 'Outgoing', 'Incoming'] as const) t.same(statuses(decideRemoveFriend(pair(s))), ['None', 'None'], `remove ${s}`);
  for (const s of [undefined, 'Blocked', 'BlockedOther'] as const) t.same(errorOf(() => decideRemoveFriend(pair(s))), { type: 'NoEffect' }, `remove ${s}`);
  for (const s of [undefined, 'Friend', 'Incoming', 'Outgoing'] as const) t.same(statuses(decideBlock(pair(s))), ['Blocked', 'BlockedOther'], `block from ${s}`);
  t.same(statuses(decideBlock(pair('BlockedOther', 'Blocked'))), ['Blocked', 'Blocked'], 'blocking back');
  t.same(errorOf(() => decideBlock(pair('Blocked'))), { type: 'NoEffect' });
  t.same(statuses(decideUnblock(pair('Blocked', 'BlockedOther'))), ['None', 'None']);
  t.same(statuses(decideUnblock(pair('Blocked', 'Blocked'))), ['BlockedOther', 'Blocked'], 'the other block stays');
  t.same(errorOf(() => decideUnblock(pair('BlockedOther', 'Blocked'))), { type: 'NoEffect' });
});

t.test('user permissions (Stoat order)', async (t) => {
  const all = UserPermission.Access | UserPermission.ViewProfile | UserPermission.SendMessage | UserPermission.Invite;
  const f = (relationship: Parameters<typeof userPermissions>[0]['relationship'], mutual = false, bot = false) => userPermissions({ same: false, relationship, mutual, targetIsBot: false, viewerIsBot: bot });
  t.equal(f('Friend'), all);
  t.equal(f('Blocked', true), UserPermission.Access, 'a block wins over a mutual connection');
  t.equal(f('BlockedOther', true, true), UserPermission.Access);
  t.equal(f('Outgoing'), UserPermission.Access);
  t.equal(f('None'), 0n);
  t.equal(f('None', true), UserPermission.Access | UserPermission.ViewProfile, 'mutual: profile, no messages');
  t.equal(f('None', true, true), UserPermission.Access | UserPermission.ViewProfile | UserPermission.SendMessage, 'a bot with a mutual connection');
  t.equal(userPermissions({ same: true, relationship: 'None', mutual: false, targetIsBot: false, viewerIsBot: false }), all);
});

t.test('private channel permission values', async (t) => {
  const dm = { channel_type: 'DirectMessage' as const, _id: C, active: true, recipients: [A, B], revision: 0 };
  t.equal(privateChannelPermissions(dm, A, state(A, { [B]: 'Friend' })), DEFAULT_PERMISSION_DIRECT_MESSAGE);
  for (const s of ['None', 'Blocked', 'BlockedOther', 'Incoming'] as const) {
    t.equal(privateChannelPermissions(dm, A, state(A, s === 'None' ? {} : { [B]: s })), DEFAULT_PERMISSION_VIEW_ONLY, `DM, ${s}: view only`);
  }
  t.equal(privateChannelPermissions(dm, C, state(C)), 0n, 'not a recipient');
  const notes = { channel_type: 'SavedMessages' as const, _id: C, user: A, revision: 0 };
  t.equal(privateChannelPermissions(notes, A, null), GRANT_ALL_SAFE);
  t.equal(privateChannelPermissions(notes, B, null), 0n);
  const group = { channel_type: 'Group' as const, _id: C, name: 'g', owner: A, recipients: [A, B], revision: 0 };
  t.equal(privateChannelPermissions(group, A, null), GRANT_ALL_SAFE, 'owner');
  t.equal(privateChannelPermissions(group, B, null), DEFAULT_PERMISSION_VIEW_ONLY | DEFAULT_PERMISSION_DIRECT_MESSAGE, 'member: the DM default');
  t.equal(privateChannelPermissions({ ...group, permissions: 0 }, B, null), DEFAULT_PERMISSION_VIEW_ONLY, 'value 0: view only');
  t.equal(privateChannelPermissions({ ...group, permissions: Number(P.React) }, B, null), DEFAULT_PERMISSION_VIEW_ONLY | P.React);
  t.equal(privateChannelPermissions(group, C, null), 0n);
});

t.test('groups', async (t) => {
  const rel = state(A, { [B]: 'Friend', [C]: 'Outgoing' });
  const ids = () => { let n = 0; return () => `01S${String(++n).padStart(23, '0')}`; };
  t.same(errorOf(() => decideCreateGroup({ channelId: C, ownerId: A, name: 'g', users: [C] }, { relations: rel, maxSize: 10 })), { type: 'NotFriends' });
  t.same(errorOf(() => decideCreateGroup({ channelId: C, ownerId: A, name: 'g', users: [B] }, { relations: rel, maxSize: 1 })), { type: 'GroupTooLarge', max: 1 });
  const created = decideCreateGroup({ channelId: C, ownerId: A, name: 'g', users: [B, A] }, { relations: rel, maxSize: 2 });
  t.same((created[0]!.data as { channel: GroupObject }).channel.recipients, [A, B], 'the owner counted once; size 2 at limit 2');
  const g: GroupObject = { channel_type: 'Group', _id: C, name: 'g', owner: A, recipients: [A, B] };
  const friendsC = state(A, { [C]: 'Friend' });
  t.same(errorOf(() => decideAddGroupMember(g, C, { callerId: A, permissions: DEFAULT_PERMISSION_VIEW_ONLY, relations: friendsC, maxSize: 3, newId: ids() })), { type: 'MissingPermission', permission: 'InviteOthers' });
  t.same(errorOf(() => decideAddGroupMember(g, C, { callerId: A, permissions: GRANT_ALL_SAFE, relations: rel, maxSize: 3, newId: ids() })), { type: 'NotFriends' });
  t.same(errorOf(() => decideAddGroupMember(g, B, { callerId: A, permissions: GRANT_ALL_SAFE, relations: rel, maxSize: 3, newId: ids() })), { type: 'AlreadyInGroup' });
  t.same(errorOf(() => decideAddGroupMember(g, C, { callerId: A, permissions: GRANT_ALL_SAFE, relations: friendsC, maxSize: 2, newId: ids() })), { type: 'GroupTooLarge', max: 2 });
  const added = decideAddGroupMember(g, C, { callerId: A, permissions: GRANT_ALL_SAFE, relations: friendsC, maxSize: 3, newId: ids() });
  t.same([added.events[0]!.type, (added.system[0]!.event.data as any).message.system], ['GroupMemberAdded', { type: 'user_added', id: C, by: A }], 'at size 2 of 3');
  t.same(errorOf(() => decideRemoveGroupMember(g, A, { callerId: B, newId: ids() })), { type: 'MissingPermission', permission: 'ManageChannel' });
  t.same(errorOf(() => decideRemoveGroupMember(g, A, { callerId: A, newId: ids() })), { type: 'CannotRemoveYourself' });
  t.same(errorOf(() => decideRemoveGroupMember(g, C, { callerId: A, newId: ids() })), { type: 'NotInGroup' });
  const left = decideLeaveGroup(g, { callerId: A, silent: false, newId: ids() });
  t.same(left.events.map((e) => e.type), ['GroupEdited', 'GroupMemberRemoved'], 'the owner leaves: ownership first');
  t.same(left.system.map((s) => (s.event.data as any).message.system.type), ['channel_ownership_changed', 'user_left']);
  t.same(decideLeaveGroup({ ...g, recipients: [A] }, { callerId: A, silent: false, newId: ids() }).events.map((e) => e.type), ['GroupDeleted'], 'the last one');
  t.same(decideLeaveGroup(g, { callerId: B, silent: true, newId: ids() }).system, [], 'silently');
  t.same(errorOf(() => decideEditGroup(g, { name: 'x', remove: [] }, { callerId: B, permissions: DEFAULT_PERMISSION_VIEW_ONLY, newId: ids() })), { type: 'MissingPermission', permission: 'ManageChannel' });
  t.same(errorOf(() => decideEditGroup(g, { owner: B, remove: [] }, { callerId: B, permissions: GRANT_ALL_SAFE, newId: ids() })), { type: 'NotOwner' });
  t.same(errorOf(() => decideEditGroup(g, { owner: C, remove: [] }, { callerId: A, permissions: GRANT_ALL_SAFE, newId: ids() })), { type: 'NotInGroup' });
  const edited = decideEditGroup(g, { name: 'n', description: 'd', owner: B, remove: [] }, { callerId: A, permissions: GRANT_ALL_SAFE, newId: ids() });
  t.same(edited.system.map((s) => (s.event.data as any).message.system.type), ['channel_ownership_changed', 'channel_renamed', 'channel_description_changed']);
});
