import t from 'tap';
import { AppError, type ErrorBody } from '../src/errors.ts';
import {
  ALLOW_IN_TIMEOUT,
  DEFAULT_PERMISSION_SERVER,
  DEFINED_BITS,
  GRANT_ALL_SAFE,
  PERMISSION_NAMES,
  Permission as P,
  assertDefinedBits,
  parsePermissionOverride,
  parsePermissionValue,
  permissionName,
  toNumber,
} from '../src/permissions/bits.ts';
import {
  NO_RANKING,
  OWNER_RANKING,
  applyOverride,
  canGrantOverride,
  channelPermissions,
  has,
  isElevatedOver,
  ranking,
  require as requirePerm,
  requireAll,
  requireCanGrant,
  requireCanGrantValue,
  requireCanReorderRoles,
  requireElevatedOver,
  rolesInApplicationOrder,
  serverPermissions,
  subjectRanking,
  type ChannelOverrides,
  type PermissionSubject,
  type SubjectRole,
} from '../src/permissions/calculate.ts';

// The assertions the helpers use; both the root `t` and subtests provide them.
type Test = Pick<typeof t, 'ok' | 'same' | 'equal' | 'fail'>;

/** Asserts that `fn` throws an AppError with this body (type and every given field) and the table's status. */
function throwsApp(t: Test, fn: () => unknown, body: ErrorBody, status: number, message: string): void {
  try {
    fn();
  } catch (err) {
    t.ok(err instanceof AppError, `${message}: is an AppError`);
    if (err instanceof AppError) {
      t.same(
        Object.fromEntries(Object.keys(body).map((k) => [k, (err.body as Record<string, unknown>)[k]])),
        body,
        `${message}: body`,
      );
      t.equal(err.status, status, `${message}: status`);
    }
    return;
  }
  t.fail(`${message}: did not throw`);
}

/** Asserts FailedValidation (400) without looking at the message. */
function rejects(t: Test, input: unknown, message: string): void {
  try {
    parsePermissionValue(input);
  } catch (err) {
    t.ok(err instanceof AppError && err.body.type === 'FailedValidation' && err.status === 400, message);
    return;
  }
  t.fail(`${message}: accepted`);
}

function member(over: Partial<PermissionSubject> = {}): PermissionSubject {
  return {
    isOwner: false,
    isMember: true,
    serverDefault: 0n,
    memberRoles: [],
    canPublish: true,
    canReceive: true,
    timedOut: false,
    ...over,
  };
}

function role(id: string, rank: number, allow = 0n, deny = 0n): SubjectRole {
  return { id, rank, allow, deny };
}

const NO_CHANNEL_OVERRIDES: ChannelOverrides = { channelRoleOverrides: {} };
const VIEW = P.ViewChannel;
// High bits (≥ 32) that a Number-based implementation would lose.
const HIGH = P.Video | P.MuteMembers | P.Listen | P.BypassSlowmode | P.ViewAuditLogs;

// ---------------------------------------------------------------- bits

t.test('bit values follow the spec table', async (t) => {
  const table: Record<string, number> = {
    ManageChannel: 0, ManageServer: 1, ManagePermissions: 2, ManageRole: 3, ManageCustomisation: 4,
    KickMembers: 6, BanMembers: 7, TimeoutMembers: 8, AssignRoles: 9, ChangeNickname: 10, ManageNicknames: 11,
    ChangeAvatar: 12, RemoveAvatars: 13, ViewChannel: 20, ReadMessageHistory: 21, SendMessage: 22,
    ManageMessages: 23, ManageWebhooks: 24, InviteOthers: 25, SendEmbeds: 26, UploadFiles: 27, Masquerade: 28,
    React: 29, Connect: 30, Speak: 31, Video: 32, MuteMembers: 33, DeafenMembers: 34, MoveMembers: 35,
    Listen: 36, MentionEveryone: 37, MentionRoles: 38, BypassSlowmode: 39, ViewAuditLogs: 40,
  };
  t.same([...PERMISSION_NAMES].sort(), Object.keys(table).sort(), 'exactly the spec names');
  for (const [name, bit] of Object.entries(table)) {
    t.equal((P as Record<string, bigint>)[name], 1n << BigInt(bit), `${name} is bit ${bit}`);
    t.equal(permissionName(1n << BigInt(bit)), name, `permissionName of bit ${bit}`);
  }
  t.equal(P.ManageCustomisation, 16n, 'British ManageCustomisation');
  t.notOk('ManageCustomization' in P, 'no American spelling');
});

t.test('fixed masks', async (t) => {
  t.equal(GRANT_ALL_SAFE, 4503599627370495n, 'GrantAllSafe = 2^52 - 1');
  t.equal(ALLOW_IN_TIMEOUT, 0x300000n, 'timeout keeps view + history');
  t.equal(DEFINED_BITS, 0x1f_ffff_ffff_ffffn & ~((1n << 5n) | (0x3fn << 14n)) & ((1n << 41n) - 1n), 'bits 0–4, 6–13, 20–40');
  t.equal(DEFINED_BITS, 0x1ff_fff0_3fdfn, 'literal value of the defined mask');
  t.equal(
    DEFAULT_PERMISSION_SERVER,
    P.ViewChannel | P.ReadMessageHistory | P.SendMessage | P.InviteOthers | P.SendEmbeds | P.UploadFiles |
      P.Connect | P.Speak | P.Video | P.Listen | P.React | P.ChangeNickname | P.ChangeAvatar,
    'new-server default is the DESIGN list',
  );
  t.equal(DEFAULT_PERMISSION_SERVER, 77014766592n, "Stoat's 0x11EE701400");
});

t.test('permissionName refuses what is not one defined bit', async (t) => {
  for (const v of [0n, 1n << 5n, 1n << 14n, 1n << 41n, P.ViewChannel | P.SendMessage]) {
    t.throws(() => permissionName(v), RangeError, `refuses ${v}`);
  }
});

t.test('toNumber', async (t) => {
  t.equal(toNumber(P.Video | P.ViewAuditLogs | P.ManageChannel), 4294967296 + 1099511627776 + 1, 'keeps bits ≥ 32');
  t.equal(toNumber(GRANT_ALL_SAFE), 4503599627370495, 'GrantAllSafe fits');
  t.equal(toNumber(DEFAULT_PERMISSION_SERVER), 77014766592, 'default fits');
  t.throws(() => toNumber(1n << 53n), RangeError, 'refuses 2^53');
  t.throws(() => toNumber(-1n), RangeError, 'refuses negatives');
});

t.test('parsePermissionValue accepts every defined bit and their union', async (t) => {
  for (const name of PERMISSION_NAMES) {
    const bit = P[name];
    t.equal(parsePermissionValue(Number(bit)), bit, `${name} as number`);
    t.equal(parsePermissionValue(bit.toString()), bit, `${name} as string`);
  }
  t.equal(parsePermissionValue(0), 0n, 'zero');
  t.equal(parsePermissionValue('0'), 0n, 'zero string');
  t.equal(parsePermissionValue(Number(DEFINED_BITS)), DEFINED_BITS, 'all defined bits as number');
  t.equal(parsePermissionValue(DEFINED_BITS.toString()), DEFINED_BITS, 'all defined bits as string');
  t.equal(parsePermissionValue(77014766592), DEFAULT_PERMISSION_SERVER, 'server default');
  t.equal(typeof parsePermissionValue(1), 'bigint', 'returns a bigint');
});

t.test('parsePermissionValue rejections → 400 FailedValidation', async (t) => {
  rejects(t, -1, 'negative');
  rejects(t, -1024, 'negative defined-bit magnitude');
  rejects(t, 1.5, 'fractional');
  rejects(t, 1024.25, 'fractional above a defined bit');
  rejects(t, 2 ** 64, '2^64 as number');
  rejects(t, '18446744073709551616', '2^64 as string');
  rejects(t, '18446744073709551615', '2^64 - 1 (undefined bits)');
  rejects(t, 32, 'bit 5');
  rejects(t, 1 << 14, 'bit 14');
  rejects(t, 1 << 19, 'bit 19');
  rejects(t, 2 ** 41, 'bit 41');
  rejects(t, 2 ** 52, 'bit 52');
  rejects(t, 2 ** 63, 'bit 63 as number');
  rejects(t, (1n << 63n).toString(), 'bit 63 as string');
  rejects(t, Number(GRANT_ALL_SAFE), 'GrantAllSafe as number');
  rejects(t, GRANT_ALL_SAFE.toString(), 'GrantAllSafe as string');
  rejects(t, Number(DEFINED_BITS | 32n), 'defined bits plus bit 5');
  rejects(t, NaN, 'NaN');
  rejects(t, Infinity, 'Infinity');
  for (const s of ['', ' ', 'abc', '1.5', '1.0', '-1', '+1', '1e3', ' 1', '1 ', '0x10', '01', '1_024', '１']) {
    rejects(t, s, `string ${JSON.stringify(s)}`);
  }
  for (const v of [null, undefined, true, {}, [], [1], 1n]) rejects(t, v, `non-number ${String(v)}`);
});

t.test('assertDefinedBits', async (t) => {
  t.doesNotThrow(() => assertDefinedBits(DEFINED_BITS), 'all defined bits pass');
  t.doesNotThrow(() => assertDefinedBits(0n), 'zero passes');
  for (const bit of [5n, 14n, 19n, 41n, 52n, 53n, 63n]) {
    throwsApp(t, () => assertDefinedBits(P.ViewChannel | (1n << bit)), { type: 'FailedValidation' } as ErrorBody, 400, `bit ${bit}`);
  }
  throwsApp(t, () => assertDefinedBits(-1n), { type: 'FailedValidation' } as ErrorBody, 400, 'negative');
  throwsApp(t, () => assertDefinedBits(1n << 64n), { type: 'FailedValidation' } as ErrorBody, 400, '2^64');
  throwsApp(t, () => assertDefinedBits(GRANT_ALL_SAFE), { type: 'FailedValidation' } as ErrorBody, 400, 'GrantAllSafe');
});

t.test('parsePermissionOverride', async (t) => {
  t.same(parsePermissionOverride({ allow: 1048576, deny: '4294967296' }), { allow: P.ViewChannel, deny: P.Video });
  for (const v of [null, [], 5, { allow: 1 }, { deny: 1 }, { allow: 32, deny: 0 }, { allow: 0, deny: -1 }]) {
    try {
      parsePermissionOverride(v);
      t.fail(`accepted ${JSON.stringify(v)}`);
    } catch (err) {
      t.ok(err instanceof AppError && err.body.type === 'FailedValidation', `rejects ${JSON.stringify(v)}`);
    }
  }
});

// ---------------------------------------------------------------- channel resolution, one step at a time

t.test('step 1: server default only', async (t) => {
  const def = VIEW | P.SendMessage | P.Video | P.Listen;
  t.equal(channelPermissions(member({ serverDefault: def }), NO_CHANNEL_OVERRIDES), def);
  t.equal(serverPermissions(member({ serverDefault: def })), def);
});

t.test('step 2: channel default override, allow and deny', async (t) => {
  const subject = member({ serverDefault: VIEW | P.SendMessage });
  t.equal(
    channelPermissions(subject, { channelDefault: { allow: P.UploadFiles, deny: 0n }, channelRoleOverrides: {} }),
    VIEW | P.SendMessage | P.UploadFiles,
    'allow adds',
  );
  t.equal(
    channelPermissions(subject, { channelDefault: { allow: 0n, deny: P.SendMessage }, channelRoleOverrides: {} }),
    VIEW,
    'deny removes',
  );
  t.equal(
    channelPermissions(subject, { channelDefault: { allow: P.React, deny: P.React }, channelRoleOverrides: {} }),
    VIEW | P.SendMessage,
    'deny beats allow within one override',
  );
  t.equal(serverPermissions(subject), VIEW | P.SendMessage, 'server level ignores channels');
});

t.test('step 3: a server-role allow beats a channel-default deny (channel default sits below roles)', async (t) => {
  const subject = member({ serverDefault: VIEW | P.SendMessage, memberRoles: [role('r1', 0, P.SendMessage)] });
  const channel: ChannelOverrides = { channelDefault: { allow: 0n, deny: P.SendMessage }, channelRoleOverrides: {} };
  t.ok(has(channelPermissions(subject, channel), P.SendMessage), 'role gives SendMessage back');
  const noRole = member({ serverDefault: VIEW | P.SendMessage });
  t.notOk(has(channelPermissions(noRole, channel), P.SendMessage), 'without the role it stays denied');
  const denyingRole = member({ serverDefault: VIEW, memberRoles: [role('r1', 0, 0n, P.UploadFiles)] });
  t.equal(
    channelPermissions(denyingRole, { channelDefault: { allow: P.UploadFiles, deny: 0n }, channelRoleOverrides: {} }),
    VIEW,
    'a server-role deny beats a channel-default allow',
  );
});

t.test('step 4: channel-role overrides beat server-role overrides, only for the member\'s roles', async (t) => {
  const subject = member({ serverDefault: VIEW, memberRoles: [role('mod', 1, P.SendMessage, P.UploadFiles)] });
  t.equal(
    channelPermissions(subject, { channelRoleOverrides: { mod: { allow: P.UploadFiles, deny: P.SendMessage } } }),
    VIEW | P.UploadFiles,
    'channel-role allow and deny win over the server role',
  );
  t.equal(
    channelPermissions(subject, { channelRoleOverrides: { other: { allow: P.ManageMessages, deny: VIEW } } }),
    VIEW | P.SendMessage,
    'an override for a role the member lacks is ignored',
  );
  t.equal(
    channelPermissions(member({ serverDefault: VIEW, memberRoles: [role('constructor', 0, P.React)] }), NO_CHANNEL_OVERRIDES),
    VIEW | P.React,
    'role ids that collide with Object.prototype names are harmless',
  );
  t.equal(serverPermissions(subject), VIEW | P.SendMessage, 'server level ignores channel-role overrides');
});

t.test('role rank order: the lower rank number is applied last and wins', async (t) => {
  const top = role('top', 1, P.SendMessage, 0n);
  const low = role('low', 5, 0n, P.SendMessage);
  for (const roles of [[top, low], [low, top]]) {
    const s = member({ serverDefault: VIEW, memberRoles: roles });
    t.ok(has(serverPermissions(s), P.SendMessage), `server: top allow wins (input ${roles.map((r) => r.id)})`);
    t.ok(has(channelPermissions(s, NO_CHANNEL_OVERRIDES), P.SendMessage), 'channel: top allow wins');
  }
  const topDeny = role('top', 1, 0n, P.SendMessage);
  const lowAllow = role('low', 5, P.SendMessage, 0n);
  for (const roles of [[topDeny, lowAllow], [lowAllow, topDeny]]) {
    const s = member({ serverDefault: VIEW, memberRoles: roles });
    t.notOk(has(serverPermissions(s), P.SendMessage), 'server: top deny wins');
    t.notOk(has(channelPermissions(s, NO_CHANNEL_OVERRIDES), P.SendMessage), 'channel: top deny wins');
  }
  // Same rule for channel-role overrides.
  const s = member({ serverDefault: VIEW, memberRoles: [role('low', 5), role('top', 1)] });
  const channel = {
    channelRoleOverrides: { top: { allow: P.React, deny: 0n }, low: { allow: 0n, deny: P.React } },
  };
  t.ok(has(channelPermissions(s, channel), P.React), 'channel-role override of the top role wins');
  const flipped = {
    channelRoleOverrides: { top: { allow: 0n, deny: P.React }, low: { allow: P.React, deny: 0n } },
  };
  t.notOk(has(channelPermissions(s, flipped), P.React), 'and its deny wins too');
  t.same(rolesInApplicationOrder([role('a', 0), role('b', 3), role('c', 1)]).map((r) => r.id), ['b', 'c', 'a']);
});

t.test('equal ranks resolve the same whatever the input order', async (t) => {
  const a = role('a', 2, P.React, 0n);
  const b = role('b', 2, 0n, P.React);
  const one = serverPermissions(member({ serverDefault: VIEW, memberRoles: [a, b] }));
  const two = serverPermissions(member({ serverDefault: VIEW, memberRoles: [b, a] }));
  t.equal(one, two);
  t.equal(one, VIEW | P.React, 'the smaller id is applied last');
});

t.test('step 5: can_publish false revokes Speak and Video only', async (t) => {
  const all = VIEW | P.Connect | P.Speak | P.Video | P.Listen | P.SendMessage | P.ViewAuditLogs;
  const s = member({ serverDefault: all, canPublish: false });
  const expected = VIEW | P.Connect | P.Listen | P.SendMessage | P.ViewAuditLogs;
  t.equal(channelPermissions(s, NO_CHANNEL_OVERRIDES), expected, 'channel');
  t.equal(serverPermissions(s), expected, 'server');
  t.equal(
    channelPermissions(s, { channelRoleOverrides: {}, channelDefault: { allow: P.Speak | P.Video, deny: 0n } }),
    expected,
    'applies after the overrides',
  );
  const withRole = member({ serverDefault: VIEW, memberRoles: [role('r', 0, P.Speak)], canPublish: false });
  t.equal(channelPermissions(withRole, { channelRoleOverrides: { r: { allow: P.Video, deny: 0n } } }), VIEW, 'after role overrides too');
});

t.test('step 6: can_receive false revokes Listen only', async (t) => {
  const all = VIEW | P.Connect | P.Speak | P.Video | P.Listen | P.DeafenMembers;
  const s = member({ serverDefault: all, canReceive: false });
  t.equal(channelPermissions(s, NO_CHANNEL_OVERRIDES), all & ~P.Listen, 'channel');
  t.equal(serverPermissions(s), all & ~P.Listen, 'server');
  const withRole = member({ serverDefault: VIEW, canReceive: false });
  t.equal(channelPermissions(withRole, { channelRoleOverrides: {}, channelDefault: { allow: P.Listen, deny: 0n } }), VIEW);
});

t.test('step 7: timeout keeps only ViewChannel and ReadMessageHistory', async (t) => {
  const mod = role('mod', 0, P.ManageChannel | P.ManageMessages | P.KickMembers | P.ViewAuditLogs);
  const s = member({ serverDefault: VIEW | P.ReadMessageHistory | P.SendMessage, memberRoles: [mod], timedOut: true });
  const server = serverPermissions(s);
  t.equal(server, VIEW | P.ReadMessageHistory, 'server level');
  t.notOk(has(server, P.ManageChannel), 'ManageChannel from a role is lost');
  t.equal(channelPermissions(s, { channelRoleOverrides: { mod: { allow: P.SendMessage, deny: 0n } } }), VIEW | P.ReadMessageHistory, 'channel level');
  const notTimedOut = member({ serverDefault: VIEW | P.ReadMessageHistory, memberRoles: [mod] });
  t.ok(has(serverPermissions(notTimedOut), P.ManageChannel), 'without the timeout the role counts');
  const noHistory = member({ serverDefault: VIEW | P.SendMessage, timedOut: true });
  t.equal(channelPermissions(noHistory, NO_CHANNEL_OVERRIDES), VIEW, 'timeout grants nothing new');
});

t.test('step 8: no ViewChannel means nothing in the channel', async (t) => {
  const s = member({ serverDefault: GRANT_ALL_SAFE & DEFINED_BITS });
  t.equal(
    channelPermissions(s, { channelDefault: { allow: 0n, deny: VIEW }, channelRoleOverrides: {} }),
    0n,
    'channel default denies view',
  );
  const viaRole = member({ serverDefault: VIEW | P.SendMessage, memberRoles: [role('r', 0, P.ManageMessages | HIGH, VIEW)] });
  t.equal(channelPermissions(viaRole, NO_CHANNEL_OVERRIDES), 0n, 'role denies view');
  t.equal(
    channelPermissions(member({ serverDefault: P.ReadMessageHistory | P.SendMessage, timedOut: true }), NO_CHANNEL_OVERRIDES),
    0n,
    'timed out without view',
  );
  t.equal(
    channelPermissions(member({ serverDefault: P.SendMessage, memberRoles: [role('r', 0)] }), {
      channelRoleOverrides: { r: { allow: VIEW, deny: 0n } },
    }),
    VIEW | P.SendMessage,
    'a channel-role override can grant view',
  );
});

t.test('serverPermissions has no ViewChannel gate', async (t) => {
  const s = member({ serverDefault: P.SendMessage | P.ManageServer | P.ViewAuditLogs });
  t.equal(serverPermissions(s), P.SendMessage | P.ManageServer | P.ViewAuditLogs, 'server level keeps the bits');
  t.equal(channelPermissions(s, NO_CHANNEL_OVERRIDES), 0n, 'channel level does not');
});

t.test('owner gets GrantAllSafe regardless of overrides and restrictions', async (t) => {
  const owner = member({
    isOwner: true,
    isMember: false,
    serverDefault: 0n,
    memberRoles: [role('r', 0, 0n, DEFINED_BITS)],
    canPublish: false,
    canReceive: false,
    timedOut: true,
  });
  const channel = { channelDefault: { allow: 0n, deny: DEFINED_BITS }, channelRoleOverrides: { r: { allow: 0n, deny: DEFINED_BITS } } };
  t.equal(channelPermissions(owner, channel), GRANT_ALL_SAFE, 'channel');
  t.equal(serverPermissions(owner), GRANT_ALL_SAFE, 'server');
});

t.test('non-member gets 0', async (t) => {
  const s = member({ isMember: false, serverDefault: DEFAULT_PERMISSION_SERVER, memberRoles: [role('r', 0, DEFINED_BITS)] });
  t.equal(channelPermissions(s, { channelDefault: { allow: DEFINED_BITS, deny: 0n }, channelRoleOverrides: {} }), 0n, 'channel');
  t.equal(serverPermissions(s), 0n, 'server');
});

t.test('bits ≥ 32 survive every step', async (t) => {
  // Speak is bit 31: a 32-bit `~Speak` would be 0x7FFFFFFF and wipe every bit above 31.
  const numberResult = (Number(VIEW | HIGH | P.Speak) | 0) & ~Number(P.Speak);
  t.not(BigInt(numberResult), VIEW | HIGH, 'precondition: Number bitwise ops lose the high bits');

  const s = member({
    serverDefault: VIEW | P.Video | P.Speak,
    memberRoles: [role('a', 2, P.Listen | P.MuteMembers, P.Speak), role('b', 1, P.BypassSlowmode)],
    canPublish: true,
    canReceive: true,
  });
  const channel: ChannelOverrides = {
    channelDefault: { allow: P.ViewAuditLogs, deny: P.Speak },
    channelRoleOverrides: { b: { allow: P.MentionRoles, deny: P.Speak | P.ManageChannel } },
  };
  const expected = VIEW | HIGH | P.MentionRoles;
  t.equal(channelPermissions(s, channel), expected, 'channel keeps Video, Listen, ViewAuditLogs …');
  t.equal(serverPermissions(s), VIEW | P.Video | P.Listen | P.MuteMembers | P.BypassSlowmode, 'server keeps them');
  t.equal(
    channelPermissions({ ...s, canReceive: false }, channel),
    expected & ~P.Listen,
    'can_receive removes bit 36 and nothing else above 31',
  );
  t.equal(
    channelPermissions({ ...s, canPublish: false }, channel),
    expected & ~P.Video,
    'can_publish removes bit 32 and nothing else above 31',
  );
  t.equal(
    channelPermissions(member({ serverDefault: VIEW, memberRoles: [role('x', 0, P.ViewAuditLogs | P.Listen)] }), {
      channelRoleOverrides: { x: { allow: 0n, deny: P.Listen } },
    }),
    VIEW | P.ViewAuditLogs,
    'a deny of bit 36 leaves bit 40',
  );
  t.equal(applyOverride(1n << 40n, { allow: 1n << 32n, deny: 1n << 31n }), (1n << 40n) | (1n << 32n), 'applyOverride');
});

t.test('channel resolution matches an independent set-based model', async (t) => {
  // A model over Sets of bit indices: no bitwise operators at all.
  const indices = PERMISSION_NAMES.map((n) => Number(P[n].toString(2).length - 1));
  let seed = 0x5eed;
  const rand = (): number => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const randomSet = (p: number): Set<number> => new Set(indices.filter(() => rand() < p));
  const toBig = (s: Set<number>): bigint => [...s].reduce((acc, i) => acc + 2n ** BigInt(i), 0n);
  const apply = (v: Set<number>, o: { allow: Set<number>; deny: Set<number> }): Set<number> =>
    new Set([...v, ...o.allow].filter((i) => !o.deny.has(i)));
  const view = 20;
  const keep = (v: Set<number>, ok: number[]): Set<number> => new Set([...v].filter((i) => ok.includes(i)));
  const drop = (v: Set<number>, gone: number[]): Set<number> => new Set([...v].filter((i) => !gone.includes(i)));

  let mismatches = 0;
  let nonZero = 0;
  for (let n = 0; n < 400; n++) {
    const def = randomSet(0.5);
    def.add(view);
    const roleCount = Math.floor(rand() * 4);
    const ranks = [0, 1, 2, 3, 4, 5].sort(() => rand() - 0.5).slice(0, roleCount);
    const roles = ranks.map((rank, i) => ({ id: `r${i}`, rank, allow: randomSet(0.2), deny: randomSet(0.1) }));
    const chDefault = rand() < 0.5 ? { allow: randomSet(0.2), deny: randomSet(0.1) } : undefined;
    const chRoles = Object.fromEntries(
      roles.filter(() => rand() < 0.6).map((r) => [r.id, { allow: randomSet(0.2), deny: randomSet(0.15) }]),
    );
    const canPublish = rand() < 0.7;
    const canReceive = rand() < 0.7;
    const timedOut = rand() < 0.2;

    // The spec's eight steps, written out over sets.
    const ordered = [...roles].sort((a, b) => b.rank - a.rank);
    let v = def;
    if (chDefault) v = apply(v, chDefault);
    for (const r of ordered) v = apply(v, r);
    for (const r of ordered) if (chRoles[r.id]) v = apply(v, chRoles[r.id]!);
    if (!canPublish) v = drop(v, [31, 32]);
    if (!canReceive) v = drop(v, [36]);
    if (timedOut) v = keep(v, [20, 21]);
    if (!v.has(view)) v = new Set();
    const expected = toBig(v);
    if (expected !== 0n) nonZero++;

    const big = (o: { allow: Set<number>; deny: Set<number> }) => ({ allow: toBig(o.allow), deny: toBig(o.deny) });
    const actual = channelPermissions(
      member({
        serverDefault: toBig(def),
        memberRoles: roles.map((r) => ({ id: r.id, rank: r.rank, ...big(r) })),
        canPublish,
        canReceive,
        timedOut,
      }),
      {
        channelDefault: chDefault ? big(chDefault) : undefined,
        channelRoleOverrides: Object.fromEntries(Object.entries(chRoles).map(([k, o]) => [k, big(o)])),
      },
    );
    if (actual !== expected) mismatches++;
  }
  t.equal(mismatches, 0, 'no mismatches in 400 random scenarios');
  t.ok(nonZero > 100, 'the scenarios are not trivially empty');
});

// ---------------------------------------------------------------- checks

t.test('has / require / requireAll', async (t) => {
  const v = VIEW | P.SendMessage | P.Video | P.ViewAuditLogs;
  t.ok(has(v, P.ViewAuditLogs), 'has bit 40');
  t.ok(has(v, P.Video | VIEW), 'has a combination');
  t.notOk(has(v, P.Video | P.Listen), 'lacks part of a combination');
  t.notOk(has(v, P.Listen), 'lacks bit 36');
  t.doesNotThrow(() => requirePerm(v, P.Video), 'require passes');
  throwsApp(t, () => requirePerm(v, P.Listen), { type: 'MissingPermission', permission: 'Listen' }, 403, 'require Listen');
  throwsApp(t, () => requirePerm(v, P.ManageCustomisation), { type: 'MissingPermission', permission: 'ManageCustomisation' }, 403, 'British name');
  throwsApp(t, () => requirePerm(v, P.ViewAuditLogs | P.ManageRole | P.Masquerade), { type: 'MissingPermission', permission: 'ManageRole' }, 403, 'lowest missing bit of a mask');
  t.doesNotThrow(() => requireAll(v, VIEW, P.SendMessage, P.ViewAuditLogs), 'requireAll passes');
  throwsApp(t, () => requireAll(v, VIEW, P.Masquerade, P.ManageRole), { type: 'MissingPermission', permission: 'Masquerade' }, 403, 'first missing in argument order');
  throwsApp(t, () => requireAll(0n, P.ViewAuditLogs), { type: 'MissingPermission', permission: 'ViewAuditLogs' }, 403, 'zero value');
});

t.test('ranking and NotElevated', async (t) => {
  t.equal(ranking([{ rank: 4 }, { rank: 2 }, { rank: 7 }]), 2, 'minimum rank');
  t.equal(ranking([]), NO_RANKING, 'no roles');
  t.equal(NO_RANKING, Number.POSITIVE_INFINITY);
  t.equal(subjectRanking(member({ isOwner: true, memberRoles: [role('r', 3)] })), OWNER_RANKING, 'owner');
  t.equal(subjectRanking(member({ memberRoles: [role('r', 3), role('s', 1)] })), 1, 'member');
  t.ok(isElevatedOver(1, 2), 'rank 1 is over rank 2');
  t.notOk(isElevatedOver(2, 2), 'equal rank is not elevated');
  t.notOk(isElevatedOver(3, 2), 'lower is not elevated');
  t.ok(isElevatedOver(OWNER_RANKING, 0), 'owner over the top role');
  t.ok(isElevatedOver(OWNER_RANKING, NO_RANKING), 'owner over a roleless member');
  t.notOk(isElevatedOver(NO_RANKING, NO_RANKING), 'roleless over roleless: no');
  t.ok(isElevatedOver(5, NO_RANKING), 'any role over a roleless member');
  t.notOk(isElevatedOver(NO_RANKING, 199), 'roleless over any role: no');
  t.doesNotThrow(() => requireElevatedOver(0, 1));
  throwsApp(t, () => requireElevatedOver(1, 1), { type: 'NotElevated' }, 403, 'same rank');
  throwsApp(t, () => requireElevatedOver(2, 1), { type: 'NotElevated' }, 403, 'target above');
});

t.test('role reorder rules', async (t) => {
  const roles = [role('a', 0), role('b', 1), role('c', 2), role('d', 3)];
  t.doesNotThrow(() => requireCanReorderRoles(1, roles, ['a', 'b', 'd', 'c']), 'below us may move');
  throwsApp(t, () => requireCanReorderRoles(1, roles, ['b', 'a', 'c', 'd']), { type: 'NotElevated' }, 403, 'above us may not');
  throwsApp(t, () => requireCanReorderRoles(1, roles, ['a', 'c', 'b', 'd']), { type: 'NotElevated' }, 403, 'our own role may not move');
  t.doesNotThrow(() => requireCanReorderRoles(OWNER_RANKING, roles, ['d', 'c', 'b', 'a']), 'owner may do anything');
  throwsApp(t, () => requireCanReorderRoles(NO_RANKING, roles, ['a', 'b', 'd', 'c']), { type: 'NotElevated' }, 403, 'roleless may move nothing');
  t.doesNotThrow(() => requireCanReorderRoles(NO_RANKING, roles, ['a', 'b', 'c', 'd']), 'an unchanged order is fine');
  throwsApp(t, () => requireCanReorderRoles(OWNER_RANKING, roles, ['a', 'b', 'c']), { type: 'InvalidOperation' }, 400, 'missing role');
  throwsApp(t, () => requireCanReorderRoles(OWNER_RANKING, roles, ['a', 'b', 'c', 'c']), { type: 'InvalidOperation' }, 400, 'duplicate');
  throwsApp(t, () => requireCanReorderRoles(OWNER_RANKING, roles, ['a', 'b', 'c', 'x']), { type: 'InvalidOperation' }, 400, 'unknown role');
});

t.test('canGrantOverride (reference §4.4)', async (t) => {
  const caller = VIEW | P.SendMessage | P.ManagePermissions | P.Video;
  t.ok(canGrantOverride(caller, undefined, { allow: VIEW | P.Video, deny: 0n }), 'new override within our bits');
  t.notOk(canGrantOverride(caller, undefined, { allow: VIEW | P.Listen, deny: 0n }), 'new override allowing a bit we lack');
  t.ok(canGrantOverride(caller, undefined, { allow: 0n, deny: P.BanMembers | P.ViewAuditLogs }), 'denying bits we lack is fine');
  const current = { allow: P.BanMembers, deny: P.KickMembers };
  t.ok(canGrantOverride(caller, current, { allow: P.BanMembers | P.SendMessage, deny: P.KickMembers }), 'keeping an allow we lack');
  t.notOk(canGrantOverride(caller, current, { allow: P.BanMembers | P.MuteMembers, deny: P.KickMembers }), 'newly allowing a bit we lack');
  t.notOk(canGrantOverride(caller, current, { allow: P.BanMembers, deny: 0n }), 'un-denying a bit we lack');
  t.ok(canGrantOverride(caller, current, { allow: 0n, deny: P.KickMembers | P.BanMembers }), 'removing an allow and adding denies');
  t.ok(canGrantOverride(caller | P.KickMembers, current, { allow: P.BanMembers, deny: 0n }), 'un-denying a bit we hold');
  t.ok(canGrantOverride(GRANT_ALL_SAFE, undefined, { allow: DEFINED_BITS, deny: 0n }), 'owner grants everything');
  t.notOk(canGrantOverride(caller, undefined, { allow: P.ViewAuditLogs, deny: 0n }), 'bit 40 is checked');
  t.doesNotThrow(() => requireCanGrant(caller, undefined, { allow: P.SendMessage, deny: 0n }));
  throwsApp(t, () => requireCanGrant(caller, current, { allow: P.BanMembers, deny: 0n }), { type: 'CannotGiveMissingPermissions' }, 403, 'requireCanGrant');
  t.doesNotThrow(() => requireCanGrantValue(caller, VIEW | P.SendMessage), 'default value within our bits');
  throwsApp(t, () => requireCanGrantValue(caller, VIEW | P.UploadFiles), { type: 'CannotGiveMissingPermissions' }, 403, 'default value with a bit we lack');
});
