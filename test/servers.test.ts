// HTTP tests of servers, channels, categories and roles: shapes, strict bodies, lengths in code points,
// permission values, client events, server deletion cleaning the read models, and projection replay.
import t from 'tap';
import { Redis } from 'ioredis';
import { rebuild } from '../projections/rebuild.ts';
import { PROJECTIONS } from '../projections/index.ts';
import { createLogger } from '../src/log.ts';
import { DEFAULT_PERMISSION_SERVER, GRANT_ALL_SAFE, Permission as P } from '../src/permissions/bits.ts';
import { generationPrefix } from '../src/readmodel/keys.ts';
import { rm } from '../src/readmodel/keys.ts';
import { signup } from './helpers/http.ts';
import { clientEvents, createServer, dumpGeneration, join, roleWith } from './helpers/servers.ts';
import { deletePrefix, startTestService, uniquePrefix, waitServing } from './helpers/service.ts';

/**
 * `?include_channels=true` answers Stoat's `ServerWithChannels`: the server flattened with `channels` as
 * Channel objects (stoat.js checks `typeof channel !== "string"`). The stoat-api document lost that variant
 * (serde `flatten` made it a copy of Server with channel ids), so these answers are not checked against it.
 */
const WITH_CHANNELS = { skipOpenApi: true };

/** `n` code points, each an astral character (two UTF-16 units), so a UTF-16 length check would fail. */
const cp = (n: number) => '😀'.repeat(n);

t.test('voice channels when voice is enabled: Stoat shape', async (t) => {
  const s = await startTestService(t, {
    RATE_LIMITS: 'off',
    VOICE_ENABLED: 'on',
    LIVEKIT_URL: 'ws://127.0.0.1:7880',
    LIVEKIT_API_KEY: 'key',
    LIVEKIT_API_SECRET: 'a-livekit-secret-of-32-characters',
  });
  const owner = await signup(s);
  const srv = await owner.api.post('/servers/create', { name: 'Voice' });
  const id = srv.body.server._id;
  const byType = await owner.api.post(`/servers/${id}/channels`, { type: 'Voice', name: 'call' });
  t.same(byType.body, { channel_type: 'TextChannel', _id: byType.body._id, server: id, name: 'call', voice: {} }, 'type Voice → voice: {}');
  const bySettings = await owner.api.post(`/servers/${id}/channels`, { name: 'call2', voice: { max_users: 4 } });
  t.same(bySettings.body.voice, { max_users: 4 });
  t.equal((await owner.api.post(`/servers/${id}/channels`, { name: 'x', voice: { max_users: 0 } })).body.type, 'FailedValidation');
  const text = srv.body.channels[0]._id;
  t.same((await owner.api.patch(`/channels/${text}`, { voice: { max_users: 2 } })).body.voice, { max_users: 2 }, 'a text channel gains voice');
  t.notOk('voice' in (await owner.api.patch(`/channels/${text}`, { remove: ['Voice'] })).body, 'and loses it');
});

t.test('servers', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const owner = await signup(s);
  const member = await signup(s);
  const outsider = await signup(s);

  t.test('create, fetch, shapes', async (t) => {
    const r = await owner.api.post('/servers/create', { name: 'First', description: 'about', nsfw: true });
    t.equal(r.status, 200);
    const server = r.body.server;
    t.match(server, { _id: String, owner: owner.userId, name: 'First', description: 'about', nsfw: true, default_permissions: Number(DEFAULT_PERMISSION_SERVER) });
    t.equal(server.default_permissions, 0x11ee701400);
    t.same(server.channels, [r.body.channels[0]._id]);
    t.notOk('roles' in server, 'no roles: the map is omitted');
    t.notOk('revision' in server, 'the stored revision is not served');
    t.same(r.body.channels, [{ channel_type: 'TextChannel', _id: server.channels[0], server: server._id, name: 'General' }]);

    // stoat.js appends "?" and sends booleans as strings.
    t.same((await owner.api.get(`/servers/${server._id}?`)).body, server);
    t.same((await owner.api.get(`/servers/${server._id}?include_channels=false`)).body, server);
    const withChannels = await owner.api.get(`/servers/${server._id}?include_channels=true`, WITH_CHANNELS);
    t.same(withChannels.body, { ...server, channels: r.body.channels });
    t.equal((await owner.api.get(`/servers/${server._id}?include_channels=maybe`)).body.type, 'FailedValidation');

    t.equal((await outsider.api.get(`/servers/${server._id}`)).status, 404, 'a non-member gets 404');
    t.equal((await outsider.api.get(`/servers/${server._id}`)).body.type, 'NotFound');
    t.equal((await owner.api.get('/servers/01HZZZZZZZZZZZZZZZZZZZZZZZ')).status, 404);
    t.equal((await outsider.api.get(`/channels/${server.channels[0]}`)).status, 404, 'nor its channels');
    const me = await owner.api.get(`/servers/${server._id}/members/${owner.userId}`);
    t.match(me.body, { _id: { server: server._id, user: owner.userId }, joined_at: String });
    t.ok(await s.redis.sismember(s.readModels.key(rm.userServers(owner.userId)), server._id), "the owner's server set");
  });

  t.test('strict bodies name the unknown field', async (t) => {
    const srv = await createServer(owner);
    const color = await owner.api.post(`/servers/${srv.id}/roles`, { name: 'r', color: '#fff' });
    t.equal(color.status, 400);
    t.equal(color.body.type, 'FailedValidation');
    t.match(color.body.error, /color/);
    const extra = await owner.api.patch(`/servers/${srv.id}`, { name: 'x', banana: 1 });
    t.equal(extra.body.type, 'FailedValidation');
    t.match(extra.body.error, /banana/);
    t.match((await owner.api.patch(`/channels/${srv.general}`, { topic: 'x' })).body.error, /topic/);
    t.match((await owner.api.post('/servers/create', { name: 'x', icon: 'abc' })).body.error, /icon/);
    t.equal((await owner.api.post(`/servers/${srv.id}/roles`, { name: 'r', colour: 'red' })).body.type, 'FailedValidation', 'colour must be hex');
    t.equal((await owner.api.post(`/servers/${srv.id}/roles`, { name: 'r', colour: '#12345' })).body.type, 'FailedValidation');
    t.equal((await owner.api.post(`/servers/${srv.id}/roles`, { name: 'r', colour: '#A1b2C3' })).status, 200);
    // JSON sent as text/plain (revolt.js) is JSON.
    const plain = await owner.api.patch(`/servers/${srv.id}`, undefined, { rawBody: JSON.stringify({ name: 'plain' }), contentType: 'text/plain' });
    t.equal(plain.body.name, 'plain');
  });

  t.test('lengths are code points: N passes, N+1 fails', async (t) => {
    const srv = await createServer(owner);
    await join(owner, srv.general, member);
    const role = await owner.api.post(`/servers/${srv.id}/roles`, { name: 'r' });
    const cases: Array<[string, number, (v: string) => Promise<{ status: number; body: any }>]> = [
      ['server name (create)', 32, (v) => owner.api.post('/servers/create', { name: v })],
      ['server description (create)', 1024, (v) => owner.api.post('/servers/create', { name: 'n', description: v })],
      ['server name (edit)', 32, (v) => owner.api.patch(`/servers/${srv.id}`, { name: v })],
      ['server description (edit)', 1024, (v) => owner.api.patch(`/servers/${srv.id}`, { description: v })],
      ['channel name (create)', 32, (v) => owner.api.post(`/servers/${srv.id}/channels`, { name: v })],
      ['channel description (create)', 1024, (v) => owner.api.post(`/servers/${srv.id}/channels`, { name: 'c', description: v })],
      ['channel name (edit)', 32, (v) => owner.api.patch(`/channels/${srv.general}`, { name: v })],
      ['channel description (edit)', 1024, (v) => owner.api.patch(`/channels/${srv.general}`, { description: v })],
      ['role name (create)', 32, (v) => owner.api.post(`/servers/${srv.id}/roles`, { name: v })],
      ['role name (edit)', 32, (v) => owner.api.patch(`/servers/${srv.id}/roles/${role.body.id}`, { name: v })],
      ['category title', 32, (v) => owner.api.patch(`/servers/${srv.id}`, { categories: [{ id: 'c', title: v, channels: [] }] })],
      ['nickname (own)', 32, (v) => member.api.patch(`/servers/${srv.id}/members/${member.userId}`, { nickname: v })],
      ['nickname (other)', 32, (v) => owner.api.patch(`/servers/${srv.id}/members/${member.userId}`, { nickname: v })],
    ];
    for (const [what, n, send] of cases) {
      const ok = await send(cp(n));
      t.equal(ok.status, 200, `${what}: ${n} code points pass`);
      const bad = await send(cp(n + 1));
      t.equal(bad.status, 400, `${what}: ${n + 1} code points fail`);
      t.equal(bad.body.type, 'FailedValidation', `${what}: FailedValidation`);
    }
    t.equal((await owner.api.post('/servers/create', { name: '' })).status, 400, 'an empty name');
    const stored = await owner.api.get(`/servers/${srv.id}`);
    t.equal([...stored.body.name].length, 32);
  });

  t.test('edit answers the full server; empty edit; remove; system messages', async (t) => {
    const srv = await createServer(owner);
    const edited = await owner.api.patch(`/servers/${srv.id}`, { name: 'Renamed', description: 'd', categories: [{ id: 'a', title: 'A', channels: [srv.general] }] });
    t.equal(edited.status, 200);
    t.match(edited.body, { _id: srv.id, owner: owner.userId, name: 'Renamed', description: 'd', channels: [srv.general], categories: [{ id: 'a', title: 'A', channels: [srv.general] }] });
    t.same((await owner.api.patch(`/servers/${srv.id}`, {})).body, edited.body, 'an empty edit returns the server unchanged');
    const removed = await owner.api.patch(`/servers/${srv.id}`, { remove: ['Description'] });
    t.notOk('description' in removed.body);
    t.equal((await owner.api.patch(`/servers/${srv.id}`, { system_messages: { user_joined: 'nope' } })).body.type, 'NotFound');
    const sm = await owner.api.patch(`/servers/${srv.id}`, { system_messages: { user_joined: srv.general, user_left: null } });
    t.same(sm.body.system_messages, { user_joined: srv.general });
    t.equal((await owner.api.patch(`/servers/${srv.id}`, { flags: 1 })).body.type, 'NotPrivileged');
  });

  t.test('categories', async (t) => {
    const srv = await createServer(owner);
    const two = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'two' })).body._id;
    const three = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'three' })).body._id;
    const first = await owner.api.patch(`/servers/${srv.id}`, {
      categories: [
        { id: 'client-chosen-1', title: 'Text', channels: [srv.general, 'unknown-channel', two] },
        { id: 'client-chosen-2', title: 'More', channels: [] },
      ],
    });
    t.equal(first.status, 200);
    t.same(first.body.categories, [
      { id: 'client-chosen-1', title: 'Text', channels: [srv.general, two] },
      { id: 'client-chosen-2', title: 'More', channels: [] },
    ], 'ids are the client\'s, unknown channels dropped');
    const replaced = await owner.api.patch(`/servers/${srv.id}`, { categories: [{ id: 'x', title: 'Only', channels: [three] }] });
    t.same(replaced.body.categories, [{ id: 'x', title: 'Only', channels: [three] }], 'replaced whole');
    const twice = await owner.api.patch(`/servers/${srv.id}`, {
      categories: [{ id: 'a', title: 'A', channels: [two] }, { id: 'b', title: 'B', channels: [two] }],
    });
    t.equal(twice.status, 400);
    t.equal(twice.body.type, 'InvalidOperation', 'a channel in two categories');
    t.same((await owner.api.get(`/servers/${srv.id}`)).body.categories, [{ id: 'x', title: 'Only', channels: [three] }], 'unchanged after the refusal');
    t.equal((await owner.api.patch(`/servers/${srv.id}`, { categories: [{ id: '', title: 'A', channels: [] }] })).status, 400, 'empty id');
    t.equal((await owner.api.patch(`/servers/${srv.id}`, { categories: [{ id: 'a', title: 'A', channels: [], category_id: 1 }] })).status, 400);
    t.equal((await owner.api.del(`/channels/${three}`)).status, 204);
    t.same((await owner.api.get(`/servers/${srv.id}`)).body.categories, [{ id: 'x', title: 'Only', channels: [] }], 'a deleted channel leaves its category');
    t.notOk('category_id' in (await owner.api.get(`/channels/${two}`)).body, 'channels carry no category');
    t.same((await owner.api.patch(`/servers/${srv.id}`, { remove: ['Categories'] })).body.categories, undefined);
  });

  t.test('channels: fetch, edit, voice shape, delete', async (t) => {
    const srv = await createServer(owner);
    const c = await owner.api.post(`/servers/${srv.id}/channels`, { type: 'Text', name: 'news', description: 'd', nsfw: true });
    t.same(c.body, { channel_type: 'TextChannel', _id: c.body._id, server: srv.id, name: 'news', description: 'd', nsfw: true });
    t.same((await owner.api.get(`/channels/${c.body._id}`)).body, c.body);
    const e = await owner.api.patch(`/channels/${c.body._id}`, { name: 'renamed', nsfw: false, remove: ['Description'] });
    t.same(e.body, { channel_type: 'TextChannel', _id: c.body._id, server: srv.id, name: 'renamed' });
    t.same((await owner.api.patch(`/channels/${c.body._id}`, {})).body, e.body, 'an empty edit');
    t.equal((await owner.api.patch(`/channels/${c.body._id}`, { owner: member.userId })).body.type, 'InvalidOperation');
    t.equal((await owner.api.patch(`/channels/${c.body._id}`, { archived: true })).status, 200, 'archived is accepted and ignored');
    const voice = await owner.api.post(`/servers/${srv.id}/channels`, { type: 'Voice', name: 'call' });
    t.equal(voice.status, 400);
    t.same({ type: voice.body.type, feature: voice.body.feature }, { type: 'FeatureDisabled', feature: 'voice' });
    t.equal((await owner.api.post(`/servers/${srv.id}/channels`, { name: 'call', voice: { max_users: 3 } })).body.type, 'FeatureDisabled');
    t.equal((await owner.api.patch(`/channels/${c.body._id}`, { voice: {} })).body.type, 'FeatureDisabled');
    t.equal((await owner.api.post(`/servers/${srv.id}/channels`, { type: 'Stage', name: 'x' })).body.type, 'FailedValidation');
    t.equal((await owner.api.del(`/channels/${c.body._id}`)).status, 204);
    t.equal((await owner.api.get(`/channels/${c.body._id}`)).status, 404);
    t.same((await owner.api.get(`/servers/${srv.id}`)).body.channels, [srv.general]);
    t.equal(await s.redis.exists(s.readModels.key(rm.channel(c.body._id))), 0);
  });

  t.test('roles: create, fetch, edit (rank is never set here), ranks, delete', async (t) => {
    const srv = await createServer(owner);
    await join(owner, srv.general, member);
    const a = await owner.api.post(`/servers/${srv.id}/roles`, { name: 'A', colour: '#abcdef', hoist: true, rank: 99 });
    t.equal(a.status, 200);
    t.same(a.body, { id: a.body.id, role: { _id: a.body.id, name: 'A', permissions: { a: 0, d: 0 }, colour: '#abcdef', hoist: true, rank: 0 } });
    const b = await owner.api.post(`/servers/${srv.id}/roles`, { name: 'B' });
    t.equal(b.body.role.rank, 1, 'rank = lowest');
    t.same((await member.api.get(`/servers/${srv.id}/roles/${b.body.id}`)).body, b.body.role);
    t.equal((await member.api.get(`/servers/${srv.id}/roles/nope`)).status, 404);
    t.equal((await outsider.api.get(`/servers/${srv.id}/roles/${b.body.id}`)).status, 404);
    const edited = await owner.api.patch(`/servers/${srv.id}/roles/${a.body.id}`, { name: 'A2', hoist: false, rank: 5, remove: ['Colour'] });
    t.same(edited.body, { _id: a.body.id, name: 'A2', permissions: { a: 0, d: 0 }, rank: 0 }, 'rank unchanged');
    const ranks = await owner.api.patch(`/servers/${srv.id}/roles/ranks`, { ranks: [b.body.id, a.body.id] });
    t.equal(ranks.status, 200);
    t.equal(ranks.body.roles[b.body.id].rank, 0);
    t.equal(ranks.body.roles[a.body.id].rank, 1);
    t.equal((await owner.api.patch(`/servers/${srv.id}/roles/ranks`, { ranks: [b.body.id] })).body.type, 'InvalidOperation');
    await owner.api.patch(`/servers/${srv.id}/members/${member.userId}`, { roles: [a.body.id] });
    t.equal((await owner.api.del(`/servers/${srv.id}/roles/${a.body.id}`)).status, 204);
    t.equal((await owner.api.get(`/servers/${srv.id}/roles/${a.body.id}`)).status, 404);
    t.notOk('roles' in (await owner.api.get(`/servers/${srv.id}/members/${member.userId}`)).body, 'the role left its member');
    const c = await owner.api.post(`/servers/${srv.id}/roles`, { name: 'C' });
    t.equal(c.body.role.rank, 1, 'below the remaining role');
  });

  t.test('permission values: defined bits only, 64-bit values round-trip exactly', async (t) => {
    const srv = await createServer(owner);
    const role = (await owner.api.post(`/servers/${srv.id}/roles`, { name: 'r' })).body.id;
    const bad: Array<[string, unknown]> = [
      ['bit 5', 2 ** 5],
      ['bit 14', 2 ** 14],
      ['bit 19', 2 ** 19],
      ['bit 41', 2 ** 41],
      ['bit 52', 2 ** 52],
      ['bit 63 (number)', 2 ** 63],
      ['bit 63 (string)', (1n << 63n).toString()],
      ['GrantAllSafe', GRANT_ALL_SAFE.toString()],
      ['2^64', (1n << 64n).toString()],
      ['negative', -1],
      ['fraction', 1.5],
      ['boolean', true],
      ['hex string', '0x10'],
    ];
    for (const [what, value] of bad) {
      const d = await owner.api.put(`/servers/${srv.id}/permissions/default`, { permissions: value });
      t.equal(d.status, 400, `server default: ${what}`);
      t.equal(d.body.type, 'FailedValidation');
      t.equal((await owner.api.put(`/servers/${srv.id}/permissions/${role}`, { permissions: { allow: value, deny: 0 } })).status, 400, `role allow: ${what}`);
      t.equal((await owner.api.put(`/servers/${srv.id}/permissions/${role}`, { permissions: { allow: 0, deny: value } })).status, 400, `role deny: ${what}`);
      t.equal((await owner.api.put(`/channels/${srv.general}/permissions/default`, { permissions: { allow: value, deny: 0 } })).status, 400, `channel default: ${what}`);
      t.equal((await owner.api.put(`/channels/${srv.general}/permissions/${role}`, { permissions: { allow: 0, deny: value } })).status, 400, `channel role: ${what}`);
    }
    const high = P.Video | P.ViewAuditLogs;
    t.equal(Number(high), 2 ** 32 + 2 ** 40);
    const r = await owner.api.put(`/servers/${srv.id}/permissions/${role}`, { permissions: { allow: Number(high), deny: Number(P.Listen) } });
    t.same(r.body.roles[role].permissions, { a: 2 ** 32 + 2 ** 40, d: 2 ** 36 });
    const asString = await owner.api.put(`/servers/${srv.id}/permissions/${role}`, { permissions: { allow: high.toString(), deny: '0' } });
    t.same(asString.body.roles[role].permissions, { a: 2 ** 32 + 2 ** 40, d: 0 }, 'a decimal string is accepted');
    const d = await owner.api.put(`/servers/${srv.id}/permissions/default`, { permissions: Number(P.ViewChannel | P.ViewAuditLogs) });
    t.equal(d.body.default_permissions, 2 ** 20 + 2 ** 40);
    const c = await owner.api.put(`/channels/${srv.general}/permissions/default`, { permissions: { allow: Number(P.Video), deny: Number(P.ViewAuditLogs) } });
    t.same(c.body.default_permissions, { a: 2 ** 32, d: 2 ** 40 });
    const cr = await owner.api.put(`/channels/${srv.general}/permissions/${role}`, { permissions: { allow: Number(high), deny: 0 } });
    t.same(cr.body.role_permissions, { [role]: { a: 2 ** 32 + 2 ** 40, d: 0 } });
    t.equal((await owner.api.put(`/channels/${srv.general}/permissions/default`, { permissions: 5 })).body.type, 'InvalidOperation', 'the group form on a server channel');
    t.equal((await outsider.api.put(`/channels/${srv.general}/permissions/default`, { permissions: 5 })).status, 404, 'a non-member still gets 404');
    t.equal((await owner.api.put(`/channels/${srv.general}/permissions/nope`, { permissions: { allow: 0, deny: 0 } })).status, 404);
    const removed = await owner.api.patch(`/channels/${srv.general}`, { remove: ['DefaultPermissions'] });
    t.notOk('default_permissions' in removed.body);
    await owner.api.del(`/servers/${srv.id}/roles/${role}`);
    t.notOk('role_permissions' in (await owner.api.get(`/channels/${srv.general}`)).body, 'a deleted role leaves the channel overrides');
  });

  t.test('client events', async (t) => {
    const before = (await clientEvents(s.redis, s.prefix)).length;
    const srv = await createServer(owner, 'Events');
    await join(owner, srv.general, member);
    const ch = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'ev' })).body;
    await owner.api.patch(`/channels/${ch._id}`, { name: 'ev2' });
    const role = (await owner.api.post(`/servers/${srv.id}/roles`, { name: 'R' })).body.id;
    await owner.api.patch(`/servers/${srv.id}/members/${member.userId}`, { nickname: 'nick' });
    await owner.api.patch(`/servers/${srv.id}`, { name: 'Events2' });
    await owner.api.del(`/channels/${ch._id}`);
    await owner.api.del(`/servers/${srv.id}/members/${member.userId}`);
    await owner.api.del(`/servers/${srv.id}/roles/${role}`);
    await owner.api.del(`/servers/${srv.id}`);
    const events = (await clientEvents(s.redis, s.prefix)).slice(before).filter((e) => JSON.stringify(e).includes(srv.id) || e.payload.id === ch._id);
    const types = events.map((e) => e.payload.type);
    t.same(types, [
      'ServerMemberJoin',
      'ServerCreate',
      'ServerMemberJoin',
      'ServerCreate',
      'ServerUpdate',
      'ChannelCreate',
      'ChannelUpdate',
      'ServerRoleUpdate',
      'ServerMemberUpdate',
      'ServerUpdate',
      'ServerUpdate',
      'ChannelDelete',
      'ServerMemberLeave',
      'ServerRoleDelete',
      'ServerDelete',
    ]);
    const create = events[1]!;
    t.same(create.route, { kind: 'user', userId: owner.userId });
    t.match(create.payload, { type: 'ServerCreate', id: srv.id, server: { _id: srv.id, name: 'Events' }, channels: [{ _id: srv.general }], emojis: [], voice_states: [] });
    t.same(events[3]!.route, { kind: 'user', userId: member.userId });
    t.same(events[2]!.payload, { type: 'ServerMemberJoin', id: srv.id, user: member.userId, member: events[2]!.payload.member });
    t.same(events[5]!.route, { kind: 'channel', serverId: srv.id, channelId: ch._id });
    t.same(events[5]!.payload, { type: 'ChannelCreate', ...ch });
    t.same(events[6]!.payload, { type: 'ChannelUpdate', id: ch._id, data: { name: 'ev2' }, clear: [] });
    t.same(events[8]!.payload, { type: 'ServerMemberUpdate', id: { server: srv.id, user: member.userId }, data: { nickname: 'nick' }, clear: [] });
    t.same(events[9]!.payload, { type: 'ServerUpdate', id: srv.id, data: { name: 'Events2' }, clear: [] });
    t.same(events[11]!.payload, { type: 'ChannelDelete', id: ch._id });
    t.same(events[12]!.payload, { type: 'ServerMemberLeave', id: srv.id, user: member.userId, reason: 'Kick' });
    t.same(events[13]!.payload, { type: 'ServerRoleDelete', id: srv.id, role_id: role });
    t.same(events[14], { route: { kind: 'server', serverId: srv.id }, payload: { type: 'ServerDelete', id: srv.id } });
  });

  t.test('server delete removes it from every read model; a member leaving', async (t) => {
    const srv = await createServer(owner, 'Doomed');
    await join(owner, srv.general, member);
    const extra = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'extra' })).body._id;
    const role = await roleWith(owner, srv.id, P.KickMembers, [member]);
    const banned = await signup(s);
    await owner.api.put(`/servers/${srv.id}/bans/${banned.userId}`, { reason: 'r' });
    const invite = (await owner.api.post(`/channels/${extra}/invites`)).body._id;
    await owner.api.put(`/channels/${extra}/permissions/${role}`, { permissions: { allow: 0, deny: 0 } });
    const keys = [
      rm.server(srv.id),
      rm.serverMembers(srv.id),
      rm.serverBans(srv.id),
      rm.serverInvites(srv.id),
      rm.invite(invite),
      rm.channel(srv.general),
      rm.channel(extra),
    ].map((k) => s.readModels.key(k));
    t.same(await Promise.all(keys.map((k) => s.redis.exists(k))), keys.map(() => 1), 'everything exists first');
    t.ok(await s.redis.sismember(s.readModels.key(rm.userServers(member.userId)), srv.id));

    // A member's DELETE is leaving, not deleting.
    t.equal((await member.api.del(`/servers/${srv.id}?leave_silently=true`)).status, 204);
    t.equal((await member.api.get(`/servers/${srv.id}`)).status, 404);
    t.notOk(await s.redis.sismember(s.readModels.key(rm.userServers(member.userId)), srv.id));
    t.equal((await owner.api.get(`/servers/${srv.id}`)).status, 200);
    await join(owner, srv.general, member);

    t.equal((await outsider.api.del(`/servers/${srv.id}`)).status, 404);
    t.equal((await owner.api.del(`/servers/${srv.id}`)).status, 204);
    t.same(await Promise.all(keys.map((k) => s.redis.exists(k))), keys.map(() => 0), 'server, members, bans, invites, channels: gone');
    t.notOk(await s.redis.sismember(s.readModels.key(rm.userServers(member.userId)), srv.id));
    t.notOk(await s.redis.sismember(s.readModels.key(rm.userServers(owner.userId)), srv.id));
    // The generation's keys in its main slot and in its shards (`{g<N>.<s>.<k>}`).
    const left = await s.redis.keys(`${s.prefix}{g${s.readModels.generation}[}.]*`);
    t.same(left.filter((k) => k.includes(srv.id) || k.includes(extra) || k.includes(invite)), [], 'no key mentions the server');
    t.equal((await owner.api.get(`/servers/${srv.id}`)).status, 404);
    t.equal((await member.api.get(`/invites/${invite}`)).status, 404);
  });

  t.test('replay: projections from zero give the same read models', async (t) => {
    // Some history with every kind of event, including deletions.
    const srv = await createServer(owner, 'Replay');
    await join(owner, srv.general, member);
    const ch = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'c' })).body._id;
    const role = await roleWith(owner, srv.id, P.ManageChannel | P.Video, [member]);
    await owner.api.put(`/channels/${ch}/permissions/${role}`, { permissions: { allow: Number(P.ViewAuditLogs), deny: 0 } });
    await owner.api.put(`/channels/${ch}/permissions/default`, { permissions: { allow: 0, deny: Number(P.React) } });
    await owner.api.patch(`/servers/${srv.id}`, { categories: [{ id: 'k', title: 'K', channels: [ch] }] });
    await owner.api.put(`/servers/${srv.id}/bans/${outsider.userId}`, {});
    await owner.api.post(`/channels/${ch}/invites`);
    await owner.api.patch(`/servers/${srv.id}/members/${member.userId}`, { nickname: 'n', can_publish: false });
    await owner.api.post(`/servers/${srv.id}/roles`, { name: 'gone' }).then((r) => owner.api.del(`/servers/${srv.id}/roles/${r.body.id}`));

    const live = await dumpGeneration(s.redis, generationPrefix(s.prefix, s.readModels.generation!));
    t.ok(Object.keys(live).length > 20, 'a real amount of state');
    t.ok(live[rm.server(srv.id)], 'the server is in the dump');

    // A second projector over the same event store, in a fresh Redis prefix, projecting from zero.
    const prefix2 = uniquePrefix();
    t.teardown(() => deletePrefix(s.config.redisUrl, prefix2));
    const second = await startTestService(t, { RATE_LIMITS: 'off', DATA_DIR: s.dataDir, REDIS_PREFIX: prefix2, ROLES: 'projector' });
    await waitServing(second);
    const head = await s.store.headPosition();
    await second.readModels.waitForAll(head!);
    const fresh = await dumpGeneration(second.redis, generationPrefix(prefix2, second.readModels.generation!));
    t.same(fresh, live, 'projected from zero by another process = projected live');

    // The rebuild tool, twice, into yet another prefix: the same again.
    const prefix3 = uniquePrefix();
    t.teardown(() => deletePrefix(s.config.redisUrl, prefix3));
    const admin = new Redis(s.config.redisUrl);
    t.teardown(() => admin.disconnect());
    for (let i = 0; i < 2; i++) {
      const r = await rebuild({
        store: s.store,
        redisUrl: s.config.redisUrl,
        prefix: s.prefix,
        targetPrefix: prefix3,
        partitions: s.config.projectorPartitions,
        projections: PROJECTIONS,
        log: createLogger('silent'),
        swap: false,
      });
      t.same(await dumpGeneration(admin, generationPrefix(prefix3, r.generation)), live, `rebuild ${i + 1} = live`);
    }
  });
});
