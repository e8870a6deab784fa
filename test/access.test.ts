// The access helpers other features build on (src/access.ts): what serverAccess / channelAccess return,
// 404 for missing objects and non-members, the channel steps, and timeouts judged by the injected clock.
import t from 'tap';
import type tap from 'tap';
import { channelAccess, serverAccess, serverChannelAccess, visibleChannels } from '../src/access.ts';
import { AppError } from '../src/errors.ts';
import { ALLOW_IN_TIMEOUT, DEFAULT_PERMISSION_SERVER, GRANT_ALL_SAFE, Permission as P } from '../src/permissions/bits.ts';
import { NO_RANKING, OWNER_RANKING } from '../src/permissions/calculate.ts';
import { signup } from './helpers/http.ts';
import { createServer, join, roleWith } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';

async function notFound(t: Pick<typeof tap, 'ok' | 'fail'>, p: Promise<unknown>, message: string) {
  try {
    await p;
    t.fail(`${message}: resolved`);
  } catch (err) {
    t.ok(err instanceof AppError && err.body.type === 'NotFound', message);
  }
}

t.test('serverAccess and channelAccess', async (t) => {
  let clock = Date.parse('2031-05-01T12:00:00.000Z');
  const s = await startTestService(t, { RATE_LIMITS: 'off' }, { now: () => clock });
  const [owner, member, outsider] = await Promise.all([signup(s), signup(s), signup(s)]);
  const srv = await createServer(owner);
  await join(owner, srv.general, member);
  const deps = s.deps;

  t.test('server access', async (t) => {
    const o = await serverAccess(deps, srv.id, owner.userId);
    t.equal(o.isOwner, true);
    t.equal(o.permissions, GRANT_ALL_SAFE);
    t.equal(o.ranking, OWNER_RANKING);
    t.equal(o.server._id, srv.id);
    t.type(o.server.revision, 'number');
    t.same(o.member._id, { server: srv.id, user: owner.userId });
    const m = await serverAccess(deps, srv.id, member.userId);
    t.equal(m.isOwner, false);
    t.equal(m.permissions, DEFAULT_PERMISSION_SERVER);
    t.equal(m.ranking, NO_RANKING);
    await notFound(t, serverAccess(deps, srv.id, outsider.userId), 'a non-member');
    await notFound(t, serverAccess(deps, '01HZZZZZZZZZZZZZZZZZZZZZZZ', owner.userId), 'a missing server');
  });

  t.test('channel access: the steps, 404s', async (t) => {
    const c = await serverChannelAccess(deps, srv.general, member.userId);
    t.equal(c.channel._id, srv.general);
    t.equal(c.server._id, srv.id);
    t.equal(c.isOwner, false);
    t.equal(c.permissions, DEFAULT_PERMISSION_SERVER, 'no overrides: the server default');
    // Step 2 sits below step 3: a channel default deny is undone by a role's server-level allow.
    await owner.api.put(`/channels/${srv.general}/permissions/default`, { permissions: { allow: 0, deny: Number(P.SendMessage | P.React) } });
    const denied = await channelAccess(deps, srv.general, member.userId);
    t.equal(denied.permissions & P.SendMessage, 0n);
    const role = await roleWith(owner, srv.id, P.SendMessage, [member]);
    const restored = await channelAccess(deps, srv.general, member.userId);
    t.equal(restored.permissions & P.SendMessage, P.SendMessage, 'role override applied after the channel default');
    t.equal(restored.permissions & P.React, 0n);
    // Step 4: the channel's role override comes last.
    await owner.api.put(`/channels/${srv.general}/permissions/${role}`, { permissions: { allow: Number(P.React), deny: Number(P.SendMessage) } });
    const last = await channelAccess(deps, srv.general, member.userId);
    t.same([last.permissions & P.SendMessage, last.permissions & P.React], [0n, P.React]);
    // Step 5: can_publish false revokes Speak and Video.
    await owner.api.patch(`/servers/${srv.id}/members/${member.userId}`, { can_publish: false });
    t.equal((await channelAccess(deps, srv.general, member.userId)).permissions & (P.Speak | P.Video), 0n);
    t.equal((await serverAccess(deps, srv.id, member.userId)).permissions & (P.Speak | P.Video), 0n, 'server-level too');
    // Step 8: without ViewChannel, nothing.
    await owner.api.put(`/channels/${srv.general}/permissions/default`, { permissions: { allow: 0, deny: Number(P.ViewChannel) } });
    t.equal((await channelAccess(deps, srv.general, member.userId)).permissions, 0n);
    t.equal((await channelAccess(deps, srv.general, owner.userId)).permissions, GRANT_ALL_SAFE, 'the owner is never gated');
    t.same(await visibleChannels(deps, (await serverAccess(deps, srv.id, member.userId)).server, member.userId, (await serverAccess(deps, srv.id, member.userId)).member), []);
    await owner.api.put(`/channels/${srv.general}/permissions/default`, { permissions: { allow: 0, deny: 0 } });
    await notFound(t, channelAccess(deps, srv.general, outsider.userId), 'a non-member');
    await notFound(t, channelAccess(deps, 'nope', member.userId), 'a missing channel');
  });

  t.test('a timeout is judged against deps.now()', async (t) => {
    const until = new Date(clock + 60_000).toISOString();
    t.equal((await owner.api.patch(`/servers/${srv.id}/members/${member.userId}`, { timeout: until })).status, 200);
    t.equal((await channelAccess(deps, srv.general, member.userId)).permissions, ALLOW_IN_TIMEOUT, 'only view and history');
    t.equal((await serverAccess(deps, srv.id, member.userId)).permissions & ~ALLOW_IN_TIMEOUT, 0n);
    t.equal((await member.api.post(`/channels/${srv.general}/invites`)).body.permission, 'InviteOthers');
    clock += 60_001;
    t.equal((await channelAccess(deps, srv.general, member.userId)).permissions & P.InviteOthers, P.InviteOthers, 'the timeout ended');
    t.equal((await member.api.post(`/channels/${srv.general}/invites`)).status, 200);
  });
});
