/**
 * Staff-only fields (issue 38, Stoat's `privileged` users; here instance admins): server `discoverable` and
 * `flags` (1 Verified, 2 Official) through PATCH /servers/:id, user `badges` and `flags` through PATCH
 * /users/:id (an admin on anyone). A server owner, a moderator and a user editing themselves get 403
 * NotPrivileged and nothing changes; an admin's edit is stored, answered and survives a rebuild.
 */
import t from 'tap';
import { runAdmin } from '../src/cli/accountsAdmin.ts';
import { newId } from '../src/ids.ts';
import { signup, type TestUser } from './helpers/http.ts';
import { createServer, dumpCurrent, dumpRebuild, join } from './helpers/servers.ts';
import { startTestService, type TestService } from './helpers/service.ts';
import { until } from './helpers/wait.ts';

async function grant(s: TestService, u: TestUser, role: 'moderator' | 'admin'): Promise<void> {
  const code = await runAdmin(['grant', u.userId, '--role', role], { store: s.store, print: () => {}, error: () => {} });
  if (code !== 0) throw new Error('grant failed');
  await until(`${role} granted`, async () => (await s.readModels.hgetJson<string>('instance:staff', u.userId)) === role);
}

t.test('server discoverable and flags, user badges and flags: instance admins only', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [owner, admin, mod] = await Promise.all([signup(s), signup(s), signup(s)]);
  await grant(s, admin, 'admin');
  await grant(s, mod, 'moderator');
  const srv = await createServer(owner);
  await join(owner, srv.general, admin);
  await join(owner, srv.general, mod);

  for (const [who, u] of [['the owner', owner], ['a moderator', mod]] as const) {
    for (const body of [{ discoverable: true }, { flags: 1 }, { name: 'renamed', flags: 2 }]) {
      const r = await u.api.patch(`/servers/${srv.id}`, body);
      // A moderator without ManageServer is refused for the name first (MissingPermission): 403 either way.
      t.same([r.status, 'name' in body && u === mod ? 'MissingPermission' : r.body.type], [403, 'name' in body && u === mod ? 'MissingPermission' : 'NotPrivileged'], `${who}: ${JSON.stringify(body)}`);
    }
  }
  t.equal((await owner.api.get(`/servers/${srv.id}`)).body.name !== 'renamed', true, 'a refused edit changed nothing');

  const r = await admin.api.patch(`/servers/${srv.id}`, { discoverable: true, flags: 3 });
  t.equal(r.status, 200);
  t.same([r.body.discoverable, r.body.flags], [true, 3]);
  t.same([(await owner.api.get(`/servers/${srv.id}`)).body.flags, (await owner.api.get(`/servers/${srv.id}`)).body.discoverable], [3, true]);
  t.same([(await admin.api.patch(`/servers/${srv.id}`, { flags: 4 })).status, (await admin.api.patch(`/servers/${srv.id}`, { flags: -1 })).status], [400, 400], 'only Verified and Official');
  t.equal((await admin.api.patch(`/servers/${srv.id}`, { flags: 0, discoverable: false })).body.flags, 0, 'and cleared again');

  // As Stoat, an admin needs no membership for these two fields; anyone else outside the server gets 404.
  const other = await createServer(owner, 'Not joined');
  t.equal((await mod.api.patch(`/servers/${other.id}`, { flags: 1 })).status, 404, 'a moderator outside the server');
  const outside = await admin.api.patch(`/servers/${other.id}`, { flags: 1, discoverable: true });
  t.same([outside.status, outside.body.flags, outside.body.discoverable], [200, 1, true], 'an admin outside the server');
  t.equal((await admin.api.patch(`/servers/${other.id}`, { flags: 2, name: 'x' })).status, 404, 'but other fields still need membership');
  t.equal((await owner.api.get(`/servers/${other.id}`)).body.flags, 1);

  // Users: nobody sets their own badges or flags; nobody but an admin edits another user.
  for (const body of [{ badges: 1 }, { flags: 4 }]) {
    const self = await owner.api.patch('/users/@me', body);
    t.same([self.status, self.body.type], [403, 'NotPrivileged'], `self ${JSON.stringify(body)}`);
    const byMod = await mod.api.patch(`/users/${owner.userId}`, body);
    t.same([byMod.status, byMod.body.type], [403, 'NotPrivileged'], `moderator ${JSON.stringify(body)}`);
  }
  t.equal((await mod.api.patch(`/users/${owner.userId}`, { display_name: 'Nope' })).status, 403, 'a moderator edits nobody else');
  const b = await admin.api.patch(`/users/${owner.userId}`, { badges: 1 | 256, flags: 0 });
  t.equal(b.status, 200);
  t.same([b.body._id, b.body.badges, b.body.flags], [owner.userId, 257, 0]);
  t.equal((await owner.api.get('/users/@me')).body.badges, 257, 'the user sees their badges');
  t.equal((await admin.api.patch(`/users/${owner.userId}`, { display_name: 'Not yours' })).status, 403, 'an admin sets only badges and flags on others');
  t.equal((await admin.api.patch(`/users/${newId()}`, { badges: 1 })).status, 404, 'an unknown user');
  t.equal((await admin.api.patch('/users/@me', { badges: 2 })).body.badges, 2, 'an admin on themselves');
  const live = await dumpCurrent(s.redis, s.prefix);
  const rebuilt = await dumpRebuild(t, s.redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions });
  t.same(rebuilt, live, 'rebuild equals live');
});
