/**
 * Attack review items 6 and 8: moderation survives leave and rejoin (timeout, can_publish, can_receive are
 * carried back by the rejoin's MemberJoined, and rebuild equals live); removing a channel's default-permission
 * override needs what setting it needs (ManageChannel alone cannot open a hidden channel).
 */
import t from 'tap';
import { Permission as P } from '../src/permissions/bits.ts';
import { startTestService } from './helpers/service.ts';
import { signup } from './helpers/http.ts';
import { createServer, dumpCurrent, dumpRebuild, join, roleWith } from './helpers/servers.ts';

t.test('timeout, can_publish and can_receive survive leave and rejoin', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const owner = await signup(s);
  const bob = await signup(s);
  const carol = await signup(s);
  const server = await createServer(owner);
  await join(owner, server.general, bob, carol);
  const S = `/servers/${server.id}`;
  const until = new Date(Date.now() + 3_600_000).toISOString();
  const edited = await owner.api.patch(`${S}/members/${bob.userId}`, { timeout: until, can_publish: false, can_receive: false });
  t.equal(edited.status, 200, 'bob timed out and muted');
  t.equal((await owner.api.patch(`${S}/members/${carol.userId}`, { can_publish: false })).status, 200, 'carol muted');

  for (const [who, u] of [['bob', bob], ['carol', carol]] as const) {
    t.equal((await u.api.del(S)).status, 204, `${who} leaves`);
    t.equal((await owner.api.get(`${S}/members/${u.userId}`)).status, 404, `${who} is gone`);
  }
  await join(owner, server.general, bob, carol);
  const back = await owner.api.get(`${S}/members/${bob.userId}`);
  t.equal(back.status, 200, 'bob is back');
  t.equal(back.body.timeout, until, 'with his timeout');
  t.equal(back.body.can_publish, false, 'still unable to publish');
  t.equal(back.body.can_receive, false, 'still unable to receive');
  const sent = await bob.api.post(`/channels/${server.general}/messages`, { content: 'I am back' });
  t.same([sent.status, sent.body?.type], [403, 'MissingPermission'], 'and still cannot send');
  const carolBack = await owner.api.get(`${S}/members/${carol.userId}`);
  t.same([carolBack.body.can_publish, carolBack.body.timeout], [false, undefined], 'carol keeps only what she had');

  // Lifting the moderation, then leaving and rejoining, comes back clean.
  t.equal((await owner.api.patch(`${S}/members/${carol.userId}`, { can_publish: true })).status, 200);
  t.equal((await carol.api.del(S)).status, 204);
  await join(owner, server.general, carol);
  const clean = await owner.api.get(`${S}/members/${carol.userId}`);
  t.same([clean.body.can_publish, clean.body.timeout], [undefined, undefined], 'lifted moderation does not come back');

  const live = await dumpCurrent(s.redis, s.prefix);
  t.same(await dumpRebuild(t, s.redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions }), live, 'rebuild equals live');
});

t.test('removing DefaultPermissions needs what setting it needs', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const owner = await signup(s);
  const mod = await signup(s);
  const server = await createServer(owner);
  await join(owner, server.general, mod);
  const hidden = await owner.api.post(`/servers/${server.id}/channels`, { name: 'hidden' });
  const C = `/channels/${hidden.body._id}`;
  const role = await roleWith(owner, server.id, P.ManageChannel, [mod], 'channel managers');
  t.equal((await owner.api.put(`${C}/permissions/${role}`, { permissions: { allow: Number(P.ViewChannel), deny: 0 } })).status, 200, 'the role sees it');
  t.equal((await owner.api.put(`${C}/permissions/default`, { permissions: { allow: 0, deny: Number(P.ViewChannel) } })).status, 200, 'hidden from everyone else');

  const refused = await mod.api.patch(C, { remove: ['DefaultPermissions'] });
  t.same([refused.status, refused.body?.type, refused.body?.permission], [403, 'MissingPermission', 'ManagePermissions'], 'ManageChannel alone: 403');
  t.ok((await owner.api.get(C)).body.default_permissions, 'the override is still there');
  const rename = await mod.api.patch(C, { name: 'renamed' });
  t.equal(rename.status, 200, 'ManageChannel still edits the channel');

  // With ManagePermissions too, and ViewChannel through the role override, the caller could set it: removing is allowed.
  await roleWith(owner, server.id, P.ManagePermissions, [mod], 'permission managers');
  const allowed = await mod.api.patch(C, { remove: ['DefaultPermissions'] });
  t.equal(allowed.status, 200, 'with ManagePermissions and the un-denied bit (ViewChannel through the role override): 200');
  t.notOk((await owner.api.get(C)).body.default_permissions, 'removed');

  // A deny of a bit the caller does not hold cannot be lifted by removing the override.
  t.equal((await owner.api.put(`${C}/permissions/default`, { permissions: { allow: 0, deny: Number(P.ManageServer) } })).status, 200);
  const cannot = await mod.api.patch(C, { remove: ['DefaultPermissions'] });
  t.same([cannot.status, cannot.body?.type], [403, 'CannotGiveMissingPermissions'], 'lifting a deny of a bit the caller lacks: 403');
});
