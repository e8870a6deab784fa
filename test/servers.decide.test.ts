// Decider tests of the server and channel aggregates: given events → when a command → then events or a typed error.
import t from 'tap';
import type { DomainEvent } from '../src/domain/events.ts';
import { decideBanUser } from '../src/domain/server/banUser.ts';
import { decideCreateChannel } from '../src/domain/server/createChannel.ts';
import { decideCreateInvite } from '../src/domain/server/createInvite.ts';
import { decideCreateRole, lowestRank } from '../src/domain/server/createRole.ts';
import { decideCreateServer } from '../src/domain/server/createServer.ts';
import { decideDeleteChannel } from '../src/domain/server/deleteChannel.ts';
import { decideDeleteInvite } from '../src/domain/server/deleteInvite.ts';
import { decideDeleteRole } from '../src/domain/server/deleteRole.ts';
import { decideDeleteServer } from '../src/domain/server/deleteServer.ts';
import { decideEditMember, type EditMember } from '../src/domain/server/editMember.ts';
import { decideEditRole } from '../src/domain/server/editRole.ts';
import { decideEditServer, type EditServer } from '../src/domain/server/editServer.ts';
import { decideJoinServer } from '../src/domain/server/joinServer.ts';
import { decideKickMember } from '../src/domain/server/kickMember.ts';
import { decideSetServerDefaultPermissions } from '../src/domain/server/setDefaultPermissions.ts';
import { decideSetRolePermissions } from '../src/domain/server/setRolePermissions.ts';
import { decideSetRoleRanks } from '../src/domain/server/setRoleRanks.ts';
import { decideUnbanUser } from '../src/domain/server/unbanUser.ts';
import { evolveChannel, newChannelState, withoutRole } from '../src/domain/channel/state.ts';
import { decideEditChannel } from '../src/domain/channel/editChannel.ts';
import { decideSetChannelDefaultPermissions } from '../src/domain/channel/setDefaultPermissions.ts';
import { decideSetChannelRolePermissions } from '../src/domain/channel/setRolePermissions.ts';
import { DEFAULT_PERMISSION_SERVER, GRANT_ALL_SAFE, Permission as P } from '../src/permissions/bits.ts';
import { NOW, callerIn, expectError, given, viewOf } from './helpers/decider.ts';

const S = 'SERVER';
const OWNER = 'owner';
const ALICE = 'alice';
const BOB = 'bob';
const CAROL = 'carol';
const at = new Date(NOW).toISOString();

const created = decideCreateServer({ serverId: S, channelId: 'general', ownerId: OWNER, name: 'Test' }, null, { now: new Date(NOW) });
const joined = (user: string): DomainEvent => ({ type: 'MemberJoined', data: { member: { _id: { server: S, user }, joined_at: at } } });
const role = (id: string, rank: number, allow = 0n, deny = 0n): DomainEvent => ({
  type: 'RoleCreated',
  data: { roleId: id, role: { _id: id, name: id, permissions: { a: Number(allow), d: Number(deny) }, rank } },
});
const assign = (user: string, roles: string[]): DomainEvent => ({ type: 'MemberEdited', data: { userId: user, data: { roles }, remove: [] } });
const channel = (id: string): DomainEvent => ({ type: 'ChannelCreated', data: { channel: { channel_type: 'TextChannel', _id: id, server: S, name: id } } });
const timeout = (user: string, until: number): DomainEvent => ({
  type: 'MemberEdited',
  data: { userId: user, data: { timeout: new Date(until).toISOString() }, remove: [] },
});

/** Owner, alice (role "mod" rank 0 with the given bits), bob (role "low" rank 1), carol (no role). */
function community(modBits: bigint, lowBits = 0n): DomainEvent[] {
  return [
    ...created,
    joined(ALICE),
    joined(BOB),
    joined(CAROL),
    role('mod', 0, modBits),
    role('low', 1, lowBits),
    assign(ALICE, ['mod']),
    assign(BOB, ['low']),
  ];
}

const noEdit: EditServer = { remove: [] };

t.test('CreateServer: "General", Stoat default permissions, the owner joins', async (t) => {
  t.same(created, [
    {
      type: 'ServerCreated',
      data: {
        server: { _id: S, owner: OWNER, name: 'Test', default_permissions: Number(DEFAULT_PERMISSION_SERVER) },
        channels: [{ channel_type: 'TextChannel', _id: 'general', server: S, name: 'General' }],
      },
    },
    { type: 'MemberJoined', data: { member: { _id: { server: S, user: OWNER }, joined_at: at } } },
  ]);
  t.equal(Number(DEFAULT_PERMISSION_SERVER), 0x11ee701400);
  const view = viewOf(created);
  t.same(view.server.channels, ['general']);
  t.ok(view.members[OWNER]);
  t.equal(callerIn(view, OWNER).permissions, GRANT_ALL_SAFE, 'owner gets GrantAllSafe');
  t.equal(callerIn(view, OWNER).ranking, Number.NEGATIVE_INFINITY);
});

t.test('EditServer', async (t) => {
  const g = given(community(P.ManageServer, P.ManageChannel));
  g.as(CAROL).when((v, c) => decideEditServer(noEdit, v, { caller: c })).then(t, [], 'an empty edit changes nothing and needs nothing');
  g.as(CAROL).when((v, c) => decideEditServer({ name: 'x', remove: [] }, v, { caller: c })).thenThrows(t, { type: 'MissingPermission', permission: 'ManageServer' });
  g.as(CAROL).when((v, c) => decideEditServer({ remove: ['Description'] }, v, { caller: c })).thenThrows(t, { permission: 'ManageServer' }, 'remove needs ManageServer');
  g.as(ALICE).when((v, c) => decideEditServer({ name: 'x', description: 'd', analytics: true, remove: ['Icon'] }, v, { caller: c })).then(t, [
    { type: 'ServerEdited', data: { data: { name: 'x', description: 'd', analytics: true }, remove: ['Icon'] } },
  ]);
  g.as(OWNER).when((v, c) => decideEditServer({ flags: 1, remove: [] }, v, { caller: c })).thenThrows(t, { type: 'NotPrivileged' });
  g.as(OWNER).when((v, c) => decideEditServer({ discoverable: true, remove: [] }, v, { caller: c })).thenThrows(t, { type: 'NotPrivileged' });
  g.as(OWNER).when((v, c) => decideEditServer({ flags: 2, discoverable: true, remove: [] }, v, { caller: c, privileged: true })).then(t, [{ type: 'ServerEdited', data: { data: { flags: 2, discoverable: true }, remove: [] } }]);
  // Categories need ManageChannel, not ManageServer.
  g.as(ALICE).when((v, c) => decideEditServer({ categories: [], remove: [] }, v, { caller: c })).thenThrows(t, { permission: 'ManageChannel' });
  g.as(BOB).when((v, c) => decideEditServer({ categories: [{ id: 'a', title: 'A', channels: ['general', 'unknown'] }], remove: [] }, v, { caller: c })).then(
    t,
    [{ type: 'ServerEdited', data: { data: { categories: [{ id: 'a', title: 'A', channels: ['general'] }] }, remove: [] } }],
    'unknown channel ids are dropped',
  );
  const twice = { categories: [{ id: 'a', title: 'A', channels: ['general'] }, { id: 'b', title: 'B', channels: ['general'] }], remove: [] };
  g.as(BOB).when((v, c) => decideEditServer(twice, v, { caller: c })).thenThrows(t, { type: 'InvalidOperation' }, 'a channel in two categories');
  const twiceInOne = { categories: [{ id: 'a', title: 'A', channels: ['general', 'general'] }], remove: [] };
  g.as(BOB).when((v, c) => decideEditServer(twiceInOne, v, { caller: c })).thenThrows(t, { type: 'InvalidOperation' }, 'twice in one category');
  g.as(ALICE).when((v, c) => decideEditServer({ system_messages: { user_joined: 'nope' }, remove: [] }, v, { caller: c })).thenThrows(t, { type: 'NotFound' });
  g.as(ALICE).when((v, c) => decideEditServer({ system_messages: { user_joined: 'general' }, remove: [] }, v, { caller: c })).then(t, [
    { type: 'ServerEdited', data: { data: { system_messages: { user_joined: 'general' } }, remove: [] } },
  ]);
});

t.test('evolve: a deleted channel leaves the channel list, every category and the system messages', async (t) => {
  const view = viewOf([
    ...created,
    channel('two'),
    { type: 'ServerEdited', data: { data: { categories: [{ id: 'a', title: 'A', channels: ['general', 'two'] }], system_messages: { user_joined: 'two', user_left: 'general' } }, remove: [] } },
    { type: 'ChannelDeleted', data: { channelId: 'two' } },
  ]);
  t.same(view.server.channels, ['general']);
  t.same(view.server.categories, [{ id: 'a', title: 'A', channels: ['general'] }]);
  t.same(view.server.system_messages, { user_left: 'general' });
  t.equal(view.server.revision, 4);
});

t.test('DeleteServer: the owner deletes, a member leaves', async (t) => {
  const g = given([...created, channel('two'), joined(ALICE)]);
  g.as(OWNER).when((v, c) => decideDeleteServer({ silent: false }, v, { caller: c })).then(t, [{ type: 'ServerDeleted', data: { channels: ['general', 'two'] } }]);
  g.as(ALICE).when((v, c) => decideDeleteServer({ silent: true }, v, { caller: c })).then(t, [{ type: 'MemberLeft', data: { userId: ALICE, reason: 'Leave', silent: true } }]);
  t.throws(() => viewOf([...created, { type: 'ServerDeleted', data: { channels: ['general'] } }]), 'a deleted server has no state');
});

t.test('SetServerDefaultPermissions: ManagePermissions and CannotGiveMissingPermissions', async (t) => {
  const g = given(community(P.ManagePermissions | P.ViewChannel | P.SendMessage));
  const ctx = (c: ReturnType<typeof callerIn>) => ({ caller: c });
  g.as(CAROL).when((v, c) => decideSetServerDefaultPermissions({ permissions: P.ViewChannel }, v, ctx(c))).thenThrows(t, { permission: 'ManagePermissions' });
  g.as(ALICE).when((v, c) => decideSetServerDefaultPermissions({ permissions: P.ViewChannel | P.Video }, v, ctx(c))).then(t, [
    { type: 'ServerDefaultPermissionsSet', data: { permissions: Number(P.ViewChannel | P.Video) } },
  ], 'Video comes from the default permissions alice already holds');
  g.as(ALICE).when((v, c) => decideSetServerDefaultPermissions({ permissions: P.BanMembers }, v, ctx(c))).thenThrows(t, { type: 'CannotGiveMissingPermissions' });
  g.as(OWNER).when((v, c) => decideSetServerDefaultPermissions({ permissions: P.BanMembers | P.ViewAuditLogs }, v, ctx(c))).then(t, [
    { type: 'ServerDefaultPermissionsSet', data: { permissions: Number(P.BanMembers | P.ViewAuditLogs) } },
  ]);
});

t.test('CreateChannel: ManageChannel, voice, limit', async (t) => {
  const g = given(community(P.ManageChannel));
  const cmd = { channelId: 'new', type: 'Text' as const, name: 'new' };
  const ctx = (c: ReturnType<typeof callerIn>, channelLimit = 200, voiceEnabled = false) => ({ caller: c, channelLimit, voiceEnabled });
  g.as(CAROL).when((v, c) => decideCreateChannel(cmd, v, ctx(c))).thenThrows(t, { type: 'MissingPermission', permission: 'ManageChannel' });
  g.as(ALICE).when((v, c) => decideCreateChannel({ ...cmd, description: 'd', nsfw: true }, v, ctx(c))).then(t, [
    { type: 'ChannelCreated', data: { channel: { channel_type: 'TextChannel', _id: 'new', server: S, name: 'new', description: 'd', nsfw: true } } },
  ]);
  g.as(ALICE).when((v, c) => decideCreateChannel({ ...cmd, type: 'Voice' }, v, ctx(c))).thenThrows(t, { type: 'FeatureDisabled', feature: 'voice' });
  g.as(ALICE).when((v, c) => decideCreateChannel({ ...cmd, voice: {} }, v, ctx(c))).thenThrows(t, { type: 'FeatureDisabled', feature: 'voice' });
  g.as(ALICE).when((v, c) => decideCreateChannel({ ...cmd, type: 'Voice' }, v, ctx(c, 200, true))).then(t, [
    { type: 'ChannelCreated', data: { channel: { channel_type: 'TextChannel', _id: 'new', server: S, name: 'new', voice: {} } } },
  ]);
  g.as(ALICE).when((v, c) => decideCreateChannel({ ...cmd, voice: { max_users: 5 } }, v, ctx(c, 200, true))).then(t, [
    { type: 'ChannelCreated', data: { channel: { channel_type: 'TextChannel', _id: 'new', server: S, name: 'new', voice: { max_users: 5 } } } },
  ]);
  // One channel exists: a limit of 2 allows one more, a limit of 1 none.
  g.as(ALICE).when((v, c) => decideCreateChannel(cmd, v, ctx(c, 2))).then(t, [
    { type: 'ChannelCreated', data: { channel: { channel_type: 'TextChannel', _id: 'new', server: S, name: 'new' } } },
  ]);
  g.as(ALICE).when((v, c) => decideCreateChannel(cmd, v, ctx(c, 1))).thenThrows(t, { type: 'TooManyChannels', max: 1 });
});

t.test('DeleteChannel: ViewChannel then ManageChannel, channel of this server', async (t) => {
  const g = given(community(P.ManageChannel));
  const withView = (c: ReturnType<typeof callerIn>, bits: bigint) => ({ caller: { ...c, permissions: bits } });
  g.as(ALICE).when((v, c) => decideDeleteChannel({ channelId: 'general' }, v, withView(c, P.ManageChannel))).thenThrows(t, { permission: 'ViewChannel' });
  g.as(ALICE).when((v, c) => decideDeleteChannel({ channelId: 'general' }, v, withView(c, P.ViewChannel))).thenThrows(t, { permission: 'ManageChannel' });
  g.as(ALICE).when((v, c) => decideDeleteChannel({ channelId: 'other' }, v, withView(c, P.ViewChannel | P.ManageChannel))).thenThrows(t, { type: 'NotFound' });
  g.as(ALICE).when((v, c) => decideDeleteChannel({ channelId: 'general' }, v, withView(c, P.ViewChannel | P.ManageChannel))).then(t, [
    { type: 'ChannelDeleted', data: { channelId: 'general' } },
  ]);
});

t.test('CreateRole: ManageRole, rank = lowest, limit', async (t) => {
  const g = given(community(P.ManageRole));
  g.as(CAROL).when((v, c) => decideCreateRole({ roleId: 'r', name: 'R' }, v, { caller: c, roleLimit: 200 })).thenThrows(t, { permission: 'ManageRole' });
  g.as(ALICE).when((v, c) => decideCreateRole({ roleId: 'r', name: 'R', colour: '#abc', hoist: true }, v, { caller: c, roleLimit: 200 })).then(t, [
    { type: 'RoleCreated', data: { roleId: 'r', role: { _id: 'r', name: 'R', permissions: { a: 0, d: 0 }, rank: 2, colour: '#abc', hoist: true } } },
  ], 'two roles exist: the new one gets rank 2');
  g.as(ALICE).when((v, c) => decideCreateRole({ roleId: 'r', name: 'R' }, v, { caller: c, roleLimit: 3 })).then(t, [
    { type: 'RoleCreated', data: { roleId: 'r', role: { _id: 'r', name: 'R', permissions: { a: 0, d: 0 }, rank: 2 } } },
  ]);
  g.as(ALICE).when((v, c) => decideCreateRole({ roleId: 'r', name: 'R' }, v, { caller: c, roleLimit: 2 })).thenThrows(t, { type: 'TooManyRoles', max: 2 });
  // After deleting the top role, "number of roles" (1) is taken by "low": the new role still goes below it.
  const afterDelete = viewOf([...community(P.ManageRole), { type: 'RoleDeleted', data: { roleId: 'mod' } }]);
  t.equal(lowestRank(afterDelete.server.roles), 2);
  t.same(afterDelete.members[ALICE]!.roles, undefined, 'a deleted role leaves its members');
});

t.test('EditRole / DeleteRole: NotElevated at or above the caller, owner passes', async (t) => {
  const g = given([...community(P.ManageRole), role('bottom', 2)]);
  g.as(BOB).when((v, c) => decideEditRole({ roleId: 'bottom', name: 'x', remove: [] }, v, { caller: c })).thenThrows(t, { permission: 'ManageRole' });
  g.as(ALICE).when((v, c) => decideEditRole({ roleId: 'mod', name: 'x', remove: [] }, v, { caller: c })).thenThrows(t, { type: 'NotElevated' }, 'own role');
  g.as(ALICE).when((v, c) => decideEditRole({ roleId: 'nope', name: 'x', remove: [] }, v, { caller: c })).thenThrows(t, { type: 'NotFound' });
  g.as(ALICE).when((v, c) => decideEditRole({ roleId: 'low', name: 'x', hoist: false, remove: ['Colour'] }, v, { caller: c })).then(t, [
    { type: 'RoleEdited', data: { roleId: 'low', data: { name: 'x', hoist: false }, remove: ['Colour'] } },
  ]);
  g.as(ALICE).when((v, c) => decideEditRole({ roleId: 'low', remove: [] }, v, { caller: c })).then(t, [], 'nothing to change');
  g.as(OWNER).when((v, c) => decideEditRole({ roleId: 'mod', colour: '#fff', remove: [] }, v, { caller: c })).then(t, [
    { type: 'RoleEdited', data: { roleId: 'mod', data: { colour: '#fff' }, remove: [] } },
  ]);
  g.as(ALICE).when((v, c) => decideDeleteRole({ roleId: 'mod' }, v, { caller: c })).thenThrows(t, { type: 'NotElevated' });
  g.as(ALICE).when((v, c) => decideDeleteRole({ roleId: 'low' }, v, { caller: c })).then(t, [{ type: 'RoleDeleted', data: { roleId: 'low' } }]);
  g.as(OWNER).when((v, c) => decideDeleteRole({ roleId: 'mod' }, v, { caller: c })).then(t, [{ type: 'RoleDeleted', data: { roleId: 'mod' } }]);
});

t.test('SetRoleRanks', async (t) => {
  const g = given([...community(P.ManageRole), role('bottom', 2)]);
  g.as(ALICE).when((v, c) => decideSetRoleRanks({ ranks: ['mod', 'bottom', 'low'] }, v, { caller: c })).then(t, [
    { type: 'RoleRanksSet', data: { ranks: ['mod', 'bottom', 'low'] } },
  ]);
  g.as(ALICE).when((v, c) => decideSetRoleRanks({ ranks: ['low', 'mod', 'bottom'] }, v, { caller: c })).thenThrows(t, { type: 'NotElevated' });
  g.as(ALICE).when((v, c) => decideSetRoleRanks({ ranks: ['mod', 'low'] }, v, { caller: c })).thenThrows(t, { type: 'InvalidOperation' });
  g.as(OWNER).when((v, c) => decideSetRoleRanks({ ranks: ['bottom', 'low', 'mod'] }, v, { caller: c })).then(t, [
    { type: 'RoleRanksSet', data: { ranks: ['bottom', 'low', 'mod'] } },
  ]);
  const after = viewOf([...community(P.ManageRole), role('bottom', 2), { type: 'RoleRanksSet', data: { ranks: ['bottom', 'low', 'mod'] } }]);
  t.same(Object.values(after.server.roles).map((r) => [r._id, r.rank]), [['mod', 2], ['low', 1], ['bottom', 0]]);
});

t.test('SetRolePermissions: NotFound, ManagePermissions, NotElevated, CannotGiveMissingPermissions', async (t) => {
  const g = given(community(P.ManagePermissions | P.KickMembers));
  const set = (roleId: string, allow: bigint, deny = 0n) => ({ roleId, permissions: { allow, deny } });
  g.as(ALICE).when((v, c) => decideSetRolePermissions(set('nope', 0n), v, { caller: c })).thenThrows(t, { type: 'NotFound' });
  g.as(CAROL).when((v, c) => decideSetRolePermissions(set('low', 0n), v, { caller: c })).thenThrows(t, { permission: 'ManagePermissions' });
  g.as(ALICE).when((v, c) => decideSetRolePermissions(set('mod', 0n), v, { caller: c })).thenThrows(t, { type: 'NotElevated' });
  g.as(ALICE).when((v, c) => decideSetRolePermissions(set('low', P.KickMembers, P.Video), v, { caller: c })).then(t, [
    { type: 'RolePermissionsSet', data: { roleId: 'low', permissions: { a: Number(P.KickMembers), d: Number(P.Video) } } },
  ]);
  g.as(ALICE).when((v, c) => decideSetRolePermissions(set('low', P.BanMembers), v, { caller: c })).thenThrows(t, { type: 'CannotGiveMissingPermissions' });
  // Un-denying a bit the caller lacks is giving it too.
  const denied = given([...community(P.ManagePermissions), { type: 'RolePermissionsSet', data: { roleId: 'low', permissions: { a: 0, d: Number(P.BanMembers) } } }]);
  denied.as(ALICE).when((v, c) => decideSetRolePermissions(set('low', 0n, 0n), v, { caller: c })).thenThrows(t, { type: 'CannotGiveMissingPermissions' });
  denied.as(OWNER).when((v, c) => decideSetRolePermissions(set('low', 0n, 0n), v, { caller: c })).then(t, [
    { type: 'RolePermissionsSet', data: { roleId: 'low', permissions: { a: 0, d: 0 } } },
  ]);
});

t.test('JoinServer: Banned, AlreadyInServer', async (t) => {
  const g = given([...created, joined(ALICE), { type: 'UserBanned', data: { userId: BOB, reason: 'spam' } }]);
  g.when((v) => decideJoinServer({ userId: BOB, invite: 'code' }, v, { now: new Date(NOW) })).thenThrows(t, { type: 'Banned' });
  g.when((v) => decideJoinServer({ userId: ALICE, invite: 'code' }, v, { now: new Date(NOW) })).thenThrows(t, { type: 'AlreadyInServer' });
  g.when((v) => decideJoinServer({ userId: CAROL, invite: 'code' }, v, { now: new Date(NOW) })).then(t, [
    { type: 'MemberJoined', data: { member: { _id: { server: S, user: CAROL }, joined_at: at }, invite: 'code' } },
  ]);
  const unbanned = given([...created, { type: 'UserBanned', data: { userId: BOB } }, { type: 'UserUnbanned', data: { userId: BOB } }]);
  unbanned.when((v) => decideJoinServer({ userId: BOB, invite: 'c' }, v, { now: new Date(NOW) })).then(t, [
    { type: 'MemberJoined', data: { member: { _id: { server: S, user: BOB }, joined_at: at }, invite: 'c' } },
  ]);
});

t.test('EditMember: Stoat checks in Stoat order', async (t) => {
  const all = P.ManageNicknames | P.AssignRoles | P.TimeoutMembers | P.MuteMembers | P.DeafenMembers | P.RemoveAvatars;
  const g = given([...community(all), role('bottom', 2)]);
  const edit = (userId: string, rest: Partial<EditMember>): EditMember => ({ userId, remove: [], ...rest });
  const ctx = (c: ReturnType<typeof callerIn>) => ({ caller: c, now: new Date(NOW) });
  const future = new Date(NOW + 60_000).toISOString();
  // Nickname: self needs ChangeNickname (default permissions have it), others ManageNicknames.
  g.as(CAROL).when((v, c) => decideEditMember(edit(CAROL, { nickname: 'me' }), v, ctx(c))).then(t, [
    { type: 'MemberEdited', data: { userId: CAROL, data: { nickname: 'me' }, remove: [] } },
  ]);
  g.as(CAROL).when((v, c) => decideEditMember(edit(BOB, { nickname: 'x' }), v, ctx(c))).thenThrows(t, { permission: 'ManageNicknames' });
  g.as(CAROL).when((v, c) => decideEditMember(edit(BOB, { remove: ['Nickname'] }), v, ctx(c))).thenThrows(t, { permission: 'ManageNicknames' });
  g.as(ALICE).when((v, c) => decideEditMember(edit(BOB, { nickname: 'x' }), v, ctx(c))).then(t, [
    { type: 'MemberEdited', data: { userId: BOB, data: { nickname: 'x' }, remove: [] } },
  ]);
  // Avatar removal: self ChangeAvatar, others RemoveAvatars.
  g.as(CAROL).when((v, c) => decideEditMember(edit(BOB, { remove: ['Avatar'] }), v, ctx(c))).thenThrows(t, { permission: 'RemoveAvatars' });
  g.as(CAROL).when((v, c) => decideEditMember(edit(CAROL, { remove: ['Avatar'] }), v, ctx(c))).then(t, [
    { type: 'MemberEdited', data: { userId: CAROL, data: {}, remove: ['Avatar'] } },
  ]);
  // Roles: AssignRoles; added roles must exist and rank below the caller.
  g.as(CAROL).when((v, c) => decideEditMember(edit(CAROL, { roles: [] }), v, ctx(c))).thenThrows(t, { permission: 'AssignRoles' });
  g.as(ALICE).when((v, c) => decideEditMember(edit(BOB, { roles: ['low', 'nope'] }), v, ctx(c))).thenThrows(t, { type: 'InvalidRole' });
  g.as(ALICE).when((v, c) => decideEditMember(edit(CAROL, { roles: ['mod'] }), v, ctx(c))).thenThrows(t, { type: 'NotElevated' }, 'giving own rank');
  g.as(ALICE).when((v, c) => decideEditMember(edit(CAROL, { roles: ['low', 'bottom', 'low'] }), v, ctx(c))).then(t, [
    { type: 'MemberEdited', data: { userId: CAROL, data: { roles: ['low', 'bottom'] }, remove: [] } },
  ]);
  // Timeout.
  g.as(ALICE).when((v, c) => decideEditMember(edit(ALICE, { timeout: future }), v, ctx(c))).thenThrows(t, { type: 'CannotTimeoutYourself' });
  g.as(CAROL).when((v, c) => decideEditMember(edit(BOB, { timeout: future }), v, ctx(c))).thenThrows(t, { permission: 'TimeoutMembers' });
  g.as(OWNER).when((v, c) => decideEditMember(edit(ALICE, { timeout: future }), v, ctx(c))).thenThrows(t, { type: 'IsElevated' }, 'target holds TimeoutMembers');
  g.as(ALICE).when((v, c) => decideEditMember(edit(BOB, { timeout: future }), v, ctx(c))).then(t, [
    { type: 'MemberEdited', data: { userId: BOB, data: { timeout: future }, remove: [] } },
  ]);
  g.as(CAROL).when((v, c) => decideEditMember(edit(BOB, { remove: ['Timeout'] }), v, ctx(c))).thenThrows(t, { permission: 'TimeoutMembers' });
  // Voice flags.
  g.as(CAROL).when((v, c) => decideEditMember(edit(BOB, { can_publish: false }), v, ctx(c))).thenThrows(t, { permission: 'MuteMembers' });
  g.as(CAROL).when((v, c) => decideEditMember(edit(BOB, { can_receive: false }), v, ctx(c))).thenThrows(t, { permission: 'DeafenMembers' });
  g.as(ALICE).when((v, c) => decideEditMember(edit(BOB, { can_publish: false, can_receive: true }), v, ctx(c))).then(t, [
    { type: 'MemberEdited', data: { userId: BOB, data: { can_publish: false, can_receive: true }, remove: [] } },
  ]);
  // Rank: a target at or above the caller.
  g.as(BOB).when((v, c) => decideEditMember(edit(ALICE, { nickname: 'x' }), v, { ...ctx(c), caller: { ...c, permissions: all } })).thenThrows(t, { type: 'NotElevated' });
  g.as(ALICE).when((v, c) => decideEditMember(edit(OWNER, { nickname: 'x' }), v, ctx(c))).then(t, [
    { type: 'MemberEdited', data: { userId: OWNER, data: { nickname: 'x' }, remove: [] } },
  ], 'the owner without roles ranks below a role holder (Revolt: get_ranking ignores ownership)');
  g.as(ALICE).when((v, c) => decideEditMember(edit('stranger', { nickname: 'x' }), v, ctx(c))).thenThrows(t, { type: 'NotFound' });
  g.as(ALICE).when((v, c) => decideEditMember(edit(BOB, {}), v, ctx(c))).then(t, [], 'an empty edit');
  // A timed-out moderator keeps only ViewChannel and ReadMessageHistory.
  const timedOut = given([...community(all), timeout(ALICE, NOW + 1000)]);
  timedOut.as(ALICE).when((v, c) => decideEditMember(edit(BOB, { nickname: 'x' }), v, ctx(c))).thenThrows(t, { permission: 'ManageNicknames' });
  timedOut.as(ALICE, NOW + 1000).when((v, c) => decideEditMember(edit(BOB, { nickname: 'x' }), v, ctx(c))).then(t, [
    { type: 'MemberEdited', data: { userId: BOB, data: { nickname: 'x' }, remove: [] } },
  ], 'the timeout has ended');
});

t.test('KickMember / BanUser / UnbanUser', async (t) => {
  const g = given(community(P.KickMembers | P.BanMembers));
  g.as(ALICE).when((v, c) => decideKickMember({ userId: ALICE }, v, { caller: c })).thenThrows(t, { type: 'CannotRemoveYourself' });
  g.as(ALICE).when((v, c) => decideKickMember({ userId: OWNER }, v, { caller: c })).thenThrows(t, { type: 'InvalidOperation' });
  g.as(CAROL).when((v, c) => decideKickMember({ userId: BOB }, v, { caller: c })).thenThrows(t, { permission: 'KickMembers' });
  g.as(ALICE).when((v, c) => decideKickMember({ userId: 'stranger' }, v, { caller: c })).thenThrows(t, { type: 'NotFound' });
  g.as(ALICE).when((v, c) => decideKickMember({ userId: BOB }, v, { caller: c })).then(t, [{ type: 'MemberLeft', data: { userId: BOB, reason: 'Kick' } }]);
  const peers = given([...community(P.KickMembers | P.BanMembers), assign(BOB, ['mod'])]);
  peers.as(ALICE).when((v, c) => decideKickMember({ userId: BOB }, v, { caller: c })).thenThrows(t, { type: 'NotElevated' }, 'same rank');
  peers.as(ALICE).when((v, c) => decideBanUser({ userId: BOB }, v, { caller: c })).thenThrows(t, { type: 'NotElevated' });
  g.as(ALICE).when((v, c) => decideBanUser({ userId: ALICE }, v, { caller: c })).thenThrows(t, { type: 'CannotRemoveYourself' });
  g.as(ALICE).when((v, c) => decideBanUser({ userId: OWNER }, v, { caller: c })).thenThrows(t, { type: 'InvalidOperation' });
  g.as(CAROL).when((v, c) => decideBanUser({ userId: BOB }, v, { caller: c })).thenThrows(t, { permission: 'BanMembers' });
  g.as(ALICE).when((v, c) => decideBanUser({ userId: BOB, reason: 'r' }, v, { caller: c })).then(t, [
    { type: 'MemberLeft', data: { userId: BOB, reason: 'Ban' } },
    { type: 'UserBanned', data: { userId: BOB, reason: 'r' } },
  ]);
  g.as(ALICE).when((v, c) => decideBanUser({ userId: 'stranger' }, v, { caller: c })).then(t, [{ type: 'UserBanned', data: { userId: 'stranger' } }]);
  g.as(ALICE).when((v, c) => decideUnbanUser({ userId: BOB }, v, { caller: c })).thenThrows(t, { type: 'NotFound' });
  const banned = given([...community(P.BanMembers), { type: 'UserBanned', data: { userId: 'x' } }]);
  banned.as(CAROL).when((v, c) => decideUnbanUser({ userId: 'x' }, v, { caller: c })).thenThrows(t, { permission: 'BanMembers' });
  banned.as(ALICE).when((v, c) => decideUnbanUser({ userId: 'x' }, v, { caller: c })).then(t, [{ type: 'UserUnbanned', data: { userId: 'x' } }]);
});

t.test('CreateInvite / DeleteInvite', async (t) => {
  const g = given(community(P.ManageServer));
  const inChannel = (c: ReturnType<typeof callerIn>, permissions: bigint) => ({ caller: { ...c, permissions } });
  g.as(BOB).when((v, c) => decideCreateInvite({ code: 'abc', channelId: 'general' }, v, inChannel(c, P.ViewChannel))).thenThrows(t, { permission: 'InviteOthers' });
  g.as(BOB).when((v, c) => decideCreateInvite({ code: 'abc', channelId: 'other' }, v, inChannel(c, GRANT_ALL_SAFE))).thenThrows(t, { type: 'NotFound' });
  g.as(BOB).when((v, c) => decideCreateInvite({ code: 'abc', channelId: 'general' }, v, inChannel(c, P.ViewChannel | P.InviteOthers))).then(t, [
    { type: 'InviteCreated', data: { invite: { type: 'Server', _id: 'abc', server: S, creator: BOB, channel: 'general' } } },
  ]);
  const invite = { type: 'Server' as const, _id: 'abc', server: S, creator: BOB, channel: 'general' };
  g.as(BOB).when((v, c) => decideDeleteInvite({ invite }, v, { caller: c })).then(t, [{ type: 'InviteDeleted', data: { code: 'abc' } }], 'the creator');
  g.as(CAROL).when((v, c) => decideDeleteInvite({ invite }, v, { caller: c })).thenThrows(t, { permission: 'ManageServer' });
  g.as(ALICE).when((v, c) => decideDeleteInvite({ invite }, v, { caller: c })).then(t, [{ type: 'InviteDeleted', data: { code: 'abc' } }]);
  g.as(ALICE).when((v, c) => decideDeleteInvite({ invite: undefined }, v, { caller: c })).thenThrows(t, { type: 'NotFound' });
});

t.test('channel aggregate: edit, default and role overrides', async (t) => {
  const view = viewOf(community(P.ManagePermissions | P.ManageChannel | P.KickMembers));
  const ch = newChannelState({ channel_type: 'TextChannel', _id: 'general', server: S, name: 'General' });
  const caller = (u: string, permissions: bigint) => ({ ...callerIn(view, u), permissions });
  expectError(t, () => decideEditChannel({ name: 'x', remove: [] }, ch, { caller: caller(CAROL, P.ViewChannel), voiceEnabled: false }), { permission: 'ManageChannel' });
  t.same(decideEditChannel({ remove: [] }, ch, { caller: caller(ALICE, P.ManageChannel), voiceEnabled: false }), []);
  expectError(t, () => decideEditChannel({ owner: 'x', remove: [] }, ch, { caller: caller(ALICE, P.ManageChannel), voiceEnabled: false }), { type: 'InvalidOperation' });
  expectError(t, () => decideEditChannel({ voice: {}, remove: [] }, ch, { caller: caller(ALICE, P.ManageChannel), voiceEnabled: false }), { type: 'FeatureDisabled' });
  const edited = decideEditChannel({ name: 'x', nsfw: true, remove: ['Description'] }, ch, { caller: caller(ALICE, P.ManageChannel), voiceEnabled: false });
  t.same(edited, [{ type: 'ChannelEdited', data: { channelId: 'general', data: { name: 'x', nsfw: true }, remove: ['Description'] } }]);
  t.same(evolveChannel(ch, edited[0]!, 0), { ...ch, name: 'x', nsfw: true, revision: 0 });

  const dflt = { allow: P.SendMessage, deny: P.React };
  expectError(t, () => decideSetChannelDefaultPermissions({ permissions: dflt }, ch, { caller: caller(ALICE, P.SendMessage) }), { permission: 'ManagePermissions' });
  expectError(t, () => decideSetChannelDefaultPermissions({ permissions: dflt }, ch, { caller: caller(ALICE, P.ManagePermissions) }), { type: 'CannotGiveMissingPermissions' });
  t.same(decideSetChannelDefaultPermissions({ permissions: dflt }, ch, { caller: caller(ALICE, P.ManagePermissions | P.SendMessage) }), [
    { type: 'ChannelDefaultPermissionsSet', data: { channelId: 'general', permissions: { a: Number(P.SendMessage), d: Number(P.React) } } },
  ]);

  const roles = view.server.roles;
  const set = (roleId: string, allow: bigint) => ({ roleId, permissions: { allow, deny: 0n } });
  expectError(t, () => decideSetChannelRolePermissions(set('nope', 0n), ch, { caller: caller(ALICE, P.ManagePermissions), role: undefined }), { type: 'NotFound' });
  expectError(t, () => decideSetChannelRolePermissions(set('mod', 0n), ch, { caller: caller(ALICE, P.ManagePermissions), role: roles.mod }), { type: 'NotElevated' });
  expectError(t, () => decideSetChannelRolePermissions(set('low', P.BanMembers), ch, { caller: caller(ALICE, P.ManagePermissions), role: roles.low }), { type: 'CannotGiveMissingPermissions' });
  // Stoat judges against the role's server-level override: bits the role already has server-wide pass.
  const withKick = { ...roles.low!, permissions: { a: Number(P.BanMembers), d: 0 } };
  t.same(decideSetChannelRolePermissions(set('low', P.BanMembers), ch, { caller: caller(ALICE, P.ManagePermissions), role: withKick }), [
    { type: 'ChannelRolePermissionsSet', data: { channelId: 'general', roleId: 'low', permissions: { a: Number(P.BanMembers), d: 0 } } },
  ]);
  t.same(decideSetChannelRolePermissions(set('mod', P.BanMembers), ch, { caller: { ...callerIn(view, OWNER) }, role: roles.mod }).length, 1, 'owner passes every check');
  const withOverride = evolveChannel(ch, { type: 'ChannelRolePermissionsSet', data: { channelId: 'general', roleId: 'low', permissions: { a: 1, d: 0 } } }, 0)!;
  t.same(withOverride.role_permissions, { low: { a: 1, d: 0 } });
  t.same(evolveChannel(ch, { type: 'ChannelRolePermissionsSet', data: { channelId: 'general', roleId: 'gone', permissions: { a: 1, d: 0 } } }, 0, () => false)!.role_permissions, undefined);
  t.equal(withoutRole(withOverride, 'low').role_permissions, undefined);
  t.equal(evolveChannel(null, edited[0]!, 1), null, 'a deleted channel stays deleted');
});
