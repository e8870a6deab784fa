// Files stop being served once what used them lets go (issue 17 item 3), as in Stoat: a deleted message's
// attachments and embed media (one by one, in bulk, by an edit dropping the embed, with its channel or its
// server), a replaced or removed user avatar and profile background, server icon and banner, role icon,
// member avatar, channel and group icons, a deleted emoji, role, channel, group, account or departed member
// → 404 NotFound, while files still in use stay served. New file ids are 42-character nanoids (emoji: a
// random ULID, as Stoat), every route taking a file id accepts them, and rebuild equals live.
import t from 'tap';
import { Redis } from 'ioredis';
import { PROJECTIONS } from '../projections/index.ts';
import { rebuild } from '../projections/rebuild.ts';
import { isUlid } from '../src/ids.ts';
import { createLogger } from '../src/log.ts';
import { controlKeys, generationPrefix } from '../src/readmodel/keys.ts';
import { signup, type TestUser } from './helpers/http.ts';
import { get, png, upload } from './helpers/media.ts';
import { createServer, dumpGeneration, join } from './helpers/servers.ts';
import { startTestService, waitServing } from './helpers/service.ts';

t.test('files are served while in use, 404 once their user lets go', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [owner, member] = await Promise.all([signup(s), signup(s)]);
  let n = 0;
  const up = async (u: TestUser, tag: string) => {
    n++;
    const r = await upload(s, u.token, tag, await png(16 + n, 16, { r: n * 7 % 256, g: n * 13 % 256, b: 99 }), { filename: `f${n}.png`, contentType: 'image/png' });
    if (r.status !== 200) throw new Error(`upload ${tag} ${r.status} ${r.text}`);
    return r.body.id as string;
  };
  const served = async (tag: string, id: string) => (await get(`${s.mediaUrl}/${tag}/${id}`)).status;
  const ok = async (res: Promise<{ status: number; text: string }>, what: string) => {
    const r = await res;
    t.ok(r.status === 200 || r.status === 204, `${what}: ${r.status} ${r.text}`);
  };

  t.test('ids: 42-character nanoids, emoji a ULID; never sequential', async (t) => {
    const a = await up(owner, 'attachments');
    const b = await up(owner, 'attachments');
    t.match(a, /^[A-Za-z0-9_-]{42}$/);
    t.match(b, /^[A-Za-z0-9_-]{42}$/);
    t.not(a.slice(0, 20), b.slice(0, 20), 'two uploads share no common prefix');
    const e1 = await up(owner, 'emojis');
    const e2 = await up(owner, 'emojis');
    t.ok(isUlid(e1) && isUlid(e2), 'emoji uploads get ULIDs (their id becomes the emoji id)');
    t.not(e1.slice(10), e2.slice(10), 'with independent random parts');
  });

  const srv = await createServer(owner, 'Files');
  await join(owner, srv.general, member);
  const M = `/channels/${srv.general}/messages`;

  t.test('messages: attachments and embed media', async (t) => {
    const [a1, a2, media, keep, b1, b2] = [await up(owner, 'attachments'), await up(owner, 'attachments'), await up(owner, 'attachments'), await up(owner, 'attachments'), await up(owner, 'attachments'), await up(owner, 'attachments')];
    const m1 = await owner.api.post(M, { content: 'two files', attachments: [a1, a2] });
    t.equal(m1.status, 200, m1.text);
    const m2 = await owner.api.post(M, { content: 'embed', embeds: [{ title: 'x', media }] });
    t.equal(m2.status, 200, m2.text);
    const m3 = await owner.api.post(M, { attachments: [keep] });
    const bulk = [await owner.api.post(M, { attachments: [b1] }), await owner.api.post(M, { attachments: [b2] })];
    for (const id of [a1, a2, media, keep, b1, b2]) t.equal(await served('attachments', id), 200, 'served while its message exists');
    await ok(owner.api.del(`${M}/${m1.body._id}`), 'delete');
    t.same([await served('attachments', a1), await served('attachments', a2)], [404, 404], "a deleted message's attachments are gone");
    await ok(owner.api.patch(`${M}/${m2.body._id}`, { embeds: [{ title: 'no media' }] }), 'edit');
    t.equal(await served('attachments', media), 404, 'an edit dropping the embed media lets it go');
    await ok(owner.api.del(`${M}/bulk`, { ids: bulk.map((r) => r.body._id) }), 'bulk delete');
    t.same([await served('attachments', b1), await served('attachments', b2)], [404, 404], 'bulk-deleted messages too');
    t.equal(await served('attachments', keep), 200, 'a message still there keeps its file');
    t.equal(m3.status, 200);
  });

  t.test('user avatar and profile background: replaced or removed', async (t) => {
    const [av1, av2, bg] = [await up(member, 'avatars'), await up(member, 'avatars'), await up(member, 'backgrounds')];
    await ok(member.api.patch('/users/@me', { avatar: av1, profile: { background: bg } }), 'set');
    t.same([await served('avatars', av1), await served('backgrounds', bg)], [200, 200]);
    await ok(member.api.patch('/users/@me', { avatar: av2 }), 'replace');
    t.same([await served('avatars', av1), await served('avatars', av2)], [404, 200], 'the replaced avatar is gone, the new one served');
    await ok(member.api.patch('/users/@me', { remove: ['Avatar', 'ProfileBackground'] }), 'remove');
    t.same([await served('avatars', av2), await served('backgrounds', bg)], [404, 404], 'removed: gone');
  });

  t.test('server icon and banner, role icon, member avatar, channel icon, emoji', async (t) => {
    const [icon1, icon2, banner, roleIcon, memberAv, chIcon, emoji] = [
      await up(owner, 'icons'), await up(owner, 'icons'), await up(owner, 'banners'), await up(owner, 'icons'),
      await up(member, 'avatars'), await up(owner, 'icons'), await up(owner, 'emojis'),
    ];
    const S = `/servers/${srv.id}`;
    await ok(owner.api.patch(S, { icon: icon1, banner }), 'server icon');
    await ok(owner.api.patch(S, { icon: icon2 }), 'server icon replaced');
    t.same([await served('icons', icon1), await served('icons', icon2), await served('banners', banner)], [404, 200, 200]);
    await ok(owner.api.patch(S, { remove: ['Banner'] }), 'banner removed');
    t.equal(await served('banners', banner), 404);

    const role = await owner.api.post(`${S}/roles`, { name: 'iconic' });
    await ok(owner.api.patch(`${S}/roles/${role.body.id}`, { icon: roleIcon }), 'role icon');
    t.equal(await served('icons', roleIcon), 200);
    await ok(owner.api.del(`${S}/roles/${role.body.id}`), 'role deleted');
    t.equal(await served('icons', roleIcon), 404, "a deleted role's icon is gone");

    await ok(member.api.patch(`${S}/members/${member.userId}`, { avatar: memberAv }), 'member avatar');
    t.equal(await served('avatars', memberAv), 200);
    await ok(owner.api.del(`${S}/members/${member.userId}`), 'kicked');
    t.equal(await served('avatars', memberAv), 404, "a departed member's server avatar is gone");
    await join(owner, srv.general, member);

    const ch = await owner.api.post(`${S}/channels`, { name: 'pics' });
    await ok(owner.api.patch(`/channels/${ch.body._id}`, { icon: chIcon }), 'channel icon');
    t.equal(await served('icons', chIcon), 200);
    await ok(owner.api.patch(`/channels/${ch.body._id}`, { remove: ['Icon'] }), 'channel icon removed');
    t.equal(await served('icons', chIcon), 404);

    const em = await owner.api.put(`/custom/emoji/${emoji}`, { name: 'gone', parent: { type: 'Server', id: srv.id } });
    t.equal(em.status, 200, em.text);
    t.equal((await owner.api.get(`/custom/emoji/${emoji}`)).status, 200, 'the emoji is fetched by its id');
    const msg = await owner.api.post(M, { content: 'react' });
    await ok(owner.api.put(`${M}/${msg.body._id}/reactions/${emoji}`), 'reacting with the custom emoji');
    t.equal(await served('emojis', emoji), 200);
    await ok(owner.api.del(`/custom/emoji/${emoji}`), 'emoji deleted');
    t.equal(await served('emojis', emoji), 404, "a deleted emoji's file is gone");
  });

  t.test('a deleted channel, a deleted server, a deleted group', async (t) => {
    const d = await createServer(owner, 'Doomed');
    const extra = await owner.api.post(`/servers/${d.id}/channels`, { name: 'extra' });
    const [inExtra, inGeneral, icon, chIcon, emoji] = [await up(owner, 'attachments'), await up(owner, 'attachments'), await up(owner, 'icons'), await up(owner, 'icons'), await up(owner, 'emojis')];
    await ok(owner.api.post(`/channels/${extra.body._id}/messages`, { attachments: [inExtra] }), 'send');
    await ok(owner.api.post(`/channels/${d.general}/messages`, { attachments: [inGeneral] }), 'send');
    await ok(owner.api.patch(`/servers/${d.id}`, { icon }), 'icon');
    await ok(owner.api.patch(`/channels/${d.general}`, { icon: chIcon }), 'channel icon');
    await ok(owner.api.put(`/custom/emoji/${emoji}`, { name: 'doomed', parent: { type: 'Server', id: d.id } }), 'emoji');
    await ok(owner.api.del(`/channels/${extra.body._id}`), 'channel deleted');
    t.same([await served('attachments', inExtra), await served('attachments', inGeneral)], [404, 200], "a deleted channel's message files are gone");
    await ok(owner.api.del(`/servers/${d.id}`), 'server deleted');
    t.same(
      [await served('attachments', inGeneral), await served('icons', icon), await served('icons', chIcon), await served('emojis', emoji)],
      [404, 404, 404, 404],
      "a deleted server's files are all gone",
    );

    const [gIcon, gFile] = [await up(owner, 'icons'), await up(owner, 'attachments')];
    const g = await owner.api.post('/channels/create', { name: 'group', users: [] });
    t.equal(g.status, 200, g.text);
    await ok(owner.api.patch(`/channels/${g.body._id}`, { icon: gIcon }), 'group icon');
    await ok(owner.api.post(`/channels/${g.body._id}/messages`, { attachments: [gFile] }), 'group message');
    t.same([await served('icons', gIcon), await served('attachments', gFile)], [200, 200]);
    await ok(owner.api.del(`/channels/${g.body._id}`), 'group deleted');
    t.same([await served('icons', gIcon), await served('attachments', gFile)], [404, 404], "a deleted group's files are gone");
  });

  t.test('webhook avatars: replaced, removed, the webhook or its channel deleted', async (t) => {
    const [w1, w2, w3, w4] = [await up(owner, 'avatars'), await up(owner, 'avatars'), await up(owner, 'avatars'), await up(owner, 'avatars')];
    const hook = await owner.api.post(`/channels/${srv.general}/webhooks`, { name: 'Hook', avatar: w1 });
    t.equal(hook.status, 200, hook.text);
    t.equal(await served('avatars', w1), 200);
    await ok(owner.api.patch(`/webhooks/${hook.body.id}`, { avatar: w2 }), 'replace the avatar');
    t.same([await served('avatars', w1), await served('avatars', w2)], [404, 200], 'the replaced avatar is gone, the new one served');
    await ok(owner.api.patch(`/webhooks/${hook.body.id}`, { remove: ['Avatar'] }), 'remove the avatar');
    t.equal(await served('avatars', w2), 404, 'a removed avatar is gone');
    const second = await owner.api.post(`/channels/${srv.general}/webhooks`, { name: 'Hook 2', avatar: w3 });
    await ok(owner.api.del(`/webhooks/${second.body.id}`), 'delete the webhook');
    t.equal(await served('avatars', w3), 404, "a deleted webhook's avatar is gone");
    const channel = await owner.api.post(`/servers/${srv.id}/channels`, { name: 'hooked' });
    const third = await owner.api.post(`/channels/${channel.body._id}/webhooks`, { name: 'Hook 3', avatar: w4 });
    t.equal(third.status, 200, third.text);
    await ok(owner.api.del(`/channels/${channel.body._id}`), 'delete its channel');
    t.equal(await served('avatars', w4), 404, "a deleted channel's webhooks' avatars are gone");
  });

  t.test('rebuild equals live', async (t) => {
    const redis = new Redis(s.config.redisUrl);
    t.teardown(() => redis.disconnect());
    const dump = async () => {
      const gp = generationPrefix(s.prefix, Number(await redis.get(controlKeys(s.prefix).generation)));
      const all = await dumpGeneration(redis, gp);
      return Object.fromEntries(Object.entries(all).filter(([k]) => /^file:.*:detached$|^channel:.*:files$/.test(k)));
    };
    const live = await dump();
    t.ok(Object.keys(live).length > 10, 'detachments recorded');
    await rebuild({ store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions, projections: PROJECTIONS, log: createLogger('silent') });
    await waitServing(s);
    t.same(await dump(), live);
  });
});
