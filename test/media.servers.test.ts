// Uploads used by server fields: server icon and banner, role icon, member avatar, channel icon. Each takes an
// upload of its own tag, once, by its uploader, appended atomically with the edit (a refused edit consumes
// nothing), and the used file becomes servable.
import t from 'tap';
import { loadFile } from '../src/files.ts';
import { signup, type TestUser } from './helpers/http.ts';
import { clientEvents, createServer, join } from './helpers/servers.ts';
import { get, png, upload } from './helpers/media.ts';
import { startTestService } from './helpers/service.ts';

t.test('server, role, member and channel files', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const owner = await signup(s);
  const member = await signup(s);
  const srv = await createServer(owner);
  await join(owner, srv.general, member);
  const up = async (u: TestUser, tag: string, w = 64, h = 64): Promise<string> => {
    const r = await upload(s, u.token, tag, await png(w, h), { filename: `${tag}.png` });
    if (r.status !== 200) throw new Error(`upload ${r.status} ${r.text}`);
    return r.body.id as string;
  };

  t.test('server icon and banner', async (t) => {
    const icon = await up(owner, 'icons', 512, 512);
    const banner = await up(owner, 'banners', 960, 540);
    const r = await owner.api.patch(`/servers/${srv.id}`, { icon, banner, name: 'With art' });
    t.equal(r.status, 200);
    t.match(r.body, { name: 'With art', icon: { _id: icon, tag: 'icons' }, banner: { _id: banner, tag: 'banners', metadata: { width: 960, height: 540 } } });
    t.match((await get(`${s.mediaUrl}/icons/${icon}`)).headers.get('content-type'), 'image/webp');
    const bannerPreview = await get(`${s.mediaUrl}/banners/${banner}`);
    t.equal(bannerPreview.status, 200);
    t.match((await member.api.get(`/servers/${srv.id}`)).body, { icon: { _id: icon }, banner: { _id: banner } });
    const update = (await clientEvents(s.redis, s.prefix)).find((e) => e.payload.type === 'ServerUpdate' && e.payload.data?.icon);
    t.match(update?.payload, { id: srv.id, data: { icon: { _id: icon }, banner: { _id: banner } } }, 'ServerUpdate carries the File objects');

    t.equal((await owner.api.patch(`/servers/${srv.id}`, { icon })).status, 404, 'an icon is used once');
    t.equal((await owner.api.patch(`/servers/${srv.id}`, { icon: await up(owner, 'banners') })).status, 404, 'a banner upload is not an icon');
    t.equal((await owner.api.patch(`/servers/${srv.id}`, { banner: await up(owner, 'icons') })).status, 404, 'an icon upload is not a banner');
    t.equal((await owner.api.patch(`/servers/${srv.id}`, { icon: await up(member, 'icons') })).status, 404, "another user's upload");

    // A member without ManageServer: refused, and the upload is not consumed.
    const own = await up(member, 'icons');
    const refused = await member.api.patch(`/servers/${srv.id}`, { icon: own });
    t.equal(refused.status, 403);
    t.same(refused.body.type, 'MissingPermission');
    t.notOk((await loadFile(s.deps, own))?.usedFor, 'a refused edit consumes nothing');

    const removed = await owner.api.patch(`/servers/${srv.id}`, { remove: ['Icon', 'Banner'] });
    t.equal(removed.status, 200);
    t.notOk(removed.body.icon);
    t.notOk(removed.body.banner);
  });

  t.test('role icon', async (t) => {
    const role = await owner.api.post(`/servers/${srv.id}/roles`, { name: 'artists' });
    const roleId = role.body.id as string;
    const icon = await up(owner, 'icons');
    const r = await owner.api.patch(`/servers/${srv.id}/roles/${roleId}`, { icon });
    t.equal(r.status, 200);
    t.match(r.body, { name: 'artists', icon: { _id: icon, tag: 'icons' } });
    t.equal((await get(`${s.mediaUrl}/icons/${icon}`)).status, 200);
    t.equal((await owner.api.patch(`/servers/${srv.id}/roles/${roleId}`, { icon })).status, 404, 'used once');
    t.equal((await owner.api.patch(`/servers/${srv.id}/roles/${roleId}`, { icon: await up(owner, 'avatars') })).status, 404, 'wrong tag');
    const removed = await owner.api.patch(`/servers/${srv.id}/roles/${roleId}`, { remove: ['Icon'] });
    t.equal(removed.status, 200);
    t.notOk(removed.body.icon);
  });

  t.test('member avatar: one’s own only', async (t) => {
    const avatar = await up(member, 'avatars');
    const r = await member.api.patch(`/servers/${srv.id}/members/@me`, { avatar });
    t.equal(r.status, 200);
    t.match(r.body, { _id: { server: srv.id, user: member.userId }, avatar: { _id: avatar, tag: 'avatars' } });
    t.equal((await get(`${s.mediaUrl}/avatars/${avatar}`)).status, 200);
    t.equal((await member.api.patch(`/servers/${srv.id}/members/@me`, { avatar })).status, 404, 'used once');
    t.equal((await member.api.patch(`/servers/${srv.id}/members/@me`, { avatar: await up(member, 'icons') })).status, 404, 'wrong tag');

    const forOther = await up(owner, 'avatars');
    const other = await owner.api.patch(`/servers/${srv.id}/members/${member.userId}`, { avatar: forOther });
    t.equal(other.status, 400, "another member's avatar cannot be set");
    t.equal(other.body.type, 'InvalidOperation');
    t.notOk((await loadFile(s.deps, forOther))?.usedFor, 'and the upload is not consumed');

    const cleared = await owner.api.patch(`/servers/${srv.id}/members/${member.userId}`, { remove: ['Avatar'] });
    t.equal(cleared.status, 200, 'the owner (RemoveAvatars) clears it');
    t.notOk(cleared.body.avatar);
  });

  t.test('channel icon', async (t) => {
    const icon = await up(owner, 'icons');
    const r = await owner.api.patch(`/channels/${srv.general}`, { icon });
    t.equal(r.status, 200);
    t.match(r.body, { _id: srv.general, icon: { _id: icon, tag: 'icons' } });
    t.equal((await owner.api.patch(`/channels/${srv.general}`, { icon })).status, 404, 'used once');
    const removed = await owner.api.patch(`/channels/${srv.general}`, { remove: ['Icon'] });
    t.notOk(removed.body.icon);
  });
});
