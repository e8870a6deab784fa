// Authorization table of the message, reaction, pin and custom emoji routes over HTTP: every gated operation
// run by a member holding the bit through a role or a channel role override (2xx), a member without it (403
// MissingPermission naming it), a timed-out member holding the same roles (403, except what a timeout keeps)
// and a non-member (404 NotFound).
import t from 'tap';
import { API_ROUTES } from '../src/http/routes/index.ts';
import { Permission as P, type PermissionName } from '../src/permissions/bits.ts';
import { signup, type Res, type TestUser } from './helpers/http.ts';
import { createEmoji, uploadImage } from './helpers/messages.ts';
import { createServer, join } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';

/** Routes this table covers: messages (under /channels/:id/messages) and custom emoji. */
const COVERED_ROUTES = /^\/channels\/:channel_id\/messages|^\/custom\/emoji\/|^\/servers\/:server_id\/emojis/;

/** One gated operation. */
interface Row {
  bit: PermissionName;
  what: string;
  /** Status of a permitted call. */
  ok: number;
  /** Bits every tested member (holder, plain, timed) also gets, so only `bit` differs. */
  extra?: bigint;
  /** The bit comes from a channel role override on the row's own channel (whose default override denies it). */
  viaChannel?: boolean;
  /** A timeout keeps the bit (ReadMessageHistory): the timed-out member passes too. */
  timeoutKeeps?: boolean;
  prepare(channel: string): Promise<(u: TestUser) => Promise<Res>>;
}

t.test('authorization table of messages and emoji', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [owner, holder, plain, timed, outsider] = await Promise.all([signup(s), signup(s), signup(s), signup(s), signup(s)]);
  const srv = await createServer(owner, 'Authz');
  await join(owner, srv.general, holder, plain, timed);
  const S = `/servers/${srv.id}`;
  // Every member can see, read and post; each other bit comes only from the role under test.
  const base = P.ViewChannel | P.ReadMessageHistory | P.SendMessage;
  t.equal((await owner.api.put(`${S}/permissions/default`, { permissions: Number(base) })).status, 200);
  t.equal((await owner.api.patch(`${S}/members/${timed.userId}`, { timeout: new Date(Date.now() + 3_600_000).toISOString() })).status, 200);

  const role = async (name: string, allow: bigint) => {
    const id = (await owner.api.post(`${S}/roles`, { name })).body.id as string;
    const r = await owner.api.put(`${S}/permissions/${id}`, { permissions: { allow: allow.toString(), deny: 0 } });
    if (r.status !== 200) throw new Error(`role ${name}: ${r.text}`);
    return id;
  };
  const message = async (channel: string, author: TestUser = owner) => {
    const r = await author.api.post(`/channels/${channel}/messages`, { content: 'target' });
    if (r.status !== 200) throw new Error(`target message: ${r.text}`);
    return r.body._id as string;
  };
  const M = (c: string) => `/channels/${c}/messages`;
  const enc = encodeURIComponent;

  const rows: Row[] = [
    { bit: 'SendMessage', what: 'send (channel override)', ok: 200, viaChannel: true, prepare: async (c) => (u) => u.api.post(M(c), { content: 'hi' }) },
    { bit: 'ReadMessageHistory', what: 'fetch messages (channel override)', ok: 200, viaChannel: true, timeoutKeeps: true, prepare: async (c) => (u) => u.api.get(M(c)) },
    {
      bit: 'ReadMessageHistory',
      what: 'fetch one message (channel override)',
      ok: 200,
      viaChannel: true,
      timeoutKeeps: true,
      prepare: async (c) => {
        const m = await message(c);
        return (u) => u.api.get(`${M(c)}/${m}`);
      },
    },
    { bit: 'Masquerade', what: 'masquerade name', ok: 200, prepare: async (c) => (u) => u.api.post(M(c), { content: 'x', masquerade: { name: 'mask' } }) },
    { bit: 'ManageRole', what: 'masquerade colour', ok: 200, extra: P.Masquerade, prepare: async (c) => (u) => u.api.post(M(c), { content: 'x', masquerade: { colour: '#abc' } }) },
    { bit: 'SendEmbeds', what: 'send embeds', ok: 200, prepare: async (c) => (u) => u.api.post(M(c), { embeds: [{ title: 'embed' }] }) },
    {
      bit: 'SendEmbeds',
      what: 'edit embeds',
      ok: 200,
      prepare: async (c) => {
        const [byHolder, byPlain] = [await message(c, holder), await message(c, plain)];
        // Everyone but plain edits the holder's message (a timed-out member fails on permissions before authorship).
        return (u) => u.api.patch(`${M(c)}/${u === plain ? byPlain : byHolder}`, { embeds: [{ title: 'e' }] });
      },
    },
    {
      bit: 'UploadFiles',
      what: 'send attachments',
      ok: 200,
      prepare: async (c) => {
        const file = await uploadImage(s, holder, 'attachments');
        return (u) => u.api.post(M(c), { content: 'x', attachments: [file] });
      },
    },
    {
      bit: 'UploadFiles',
      what: 'embed media',
      ok: 200,
      extra: P.SendEmbeds,
      prepare: async (c) => {
        const file = await uploadImage(s, holder, 'attachments');
        return (u) => u.api.post(M(c), { embeds: [{ title: 'with media', media: file }] });
      },
    },
    { bit: 'React', what: 'interaction reactions on send', ok: 200, prepare: async (c) => (u) => u.api.post(M(c), { content: 'x', interactions: { reactions: ['👍'] } }) },
    {
      bit: 'React',
      what: 'react',
      ok: 204,
      prepare: async (c) => {
        const m = await message(c);
        return (u) => u.api.put(`${M(c)}/${m}/reactions/${enc('👍')}`);
      },
    },
    { bit: 'MentionEveryone', what: '@everyone', ok: 200, prepare: async (c) => (u) => u.api.post(M(c), { content: 'hey @everyone' }) },
    {
      bit: 'MentionRoles',
      what: 'role mention',
      ok: 200,
      prepare: async (c) => {
        const r = await role('mentioned', 0n);
        return (u) => u.api.post(M(c), { content: `hey <%${r}>` });
      },
    },
    {
      bit: 'ManageMessages',
      what: "delete another's message",
      ok: 204,
      prepare: async (c) => {
        const m = await message(c);
        return (u) => u.api.del(`${M(c)}/${m}`);
      },
    },
    {
      bit: 'ManageMessages',
      what: 'bulk delete',
      ok: 204,
      prepare: async (c) => {
        const m = await message(c);
        return (u) => u.api.del(`${M(c)}/bulk`, { ids: [m] });
      },
    },
    {
      bit: 'ManageMessages',
      what: 'pin',
      ok: 204,
      prepare: async (c) => {
        const m = await message(c);
        return (u) => u.api.post(`${M(c)}/${m}/pin`);
      },
    },
    {
      bit: 'ManageMessages',
      what: 'unpin',
      ok: 204,
      prepare: async (c) => {
        const m = await message(c);
        await owner.api.post(`${M(c)}/${m}/pin`);
        return (u) => u.api.del(`${M(c)}/${m}/pin`);
      },
    },
    {
      bit: 'ManageMessages',
      what: "remove another's reaction (user_id)",
      ok: 204,
      extra: P.React,
      prepare: async (c) => {
        const m = await message(c);
        await owner.api.put(`${M(c)}/${m}/reactions/${enc('👍')}`);
        return (u) => u.api.del(`${M(c)}/${m}/reactions/${enc('👍')}?user_id=${owner.userId}`);
      },
    },
    {
      bit: 'ManageMessages',
      what: 'remove_all=true',
      ok: 204,
      extra: P.React,
      prepare: async (c) => {
        const m = await message(c);
        await owner.api.put(`${M(c)}/${m}/reactions/${enc('👍')}`);
        return (u) => u.api.del(`${M(c)}/${m}/reactions/${enc('👍')}?remove_all=true`);
      },
    },
    {
      bit: 'ManageMessages',
      what: 'clear reactions',
      ok: 204,
      prepare: async (c) => {
        const m = await message(c);
        await owner.api.put(`${M(c)}/${m}/reactions/${enc('👍')}`);
        return (u) => u.api.del(`${M(c)}/${m}/reactions`);
      },
    },
    {
      bit: 'ManageCustomisation',
      what: 'create emoji',
      ok: 200,
      prepare: async () => {
        const file = await uploadImage(s, holder, 'emojis');
        return (u) => u.api.put(`/custom/emoji/${file}`, { name: 'made', parent: { type: 'Server', id: srv.id } });
      },
    },
    {
      bit: 'ManageCustomisation',
      what: "delete another's emoji",
      ok: 204,
      prepare: async () => {
        const id = (await createEmoji(s, owner, srv.id, 'target'))._id;
        return (u) => u.api.del(`/custom/emoji/${id}`);
      },
    },
  ];

  t.test('the table covers every bit the message and emoji routes declare', async (t) => {
    const declared = new Set(API_ROUTES.filter((r) => COVERED_ROUTES.test(r.path)).flatMap((r) => r.permissions ?? []));
    // ViewChannel has its own test below.
    const covered = new Set<string>([...rows.map((r) => r.bit), 'ViewChannel']);
    t.same([...declared].filter((b) => !covered.has(b)), [], 'no declared bit without a row');
    t.ok(declared.size >= 12);
  });

  for (const row of rows) {
    t.test(`${row.bit}: ${row.what}`, async (t) => {
      let channel = srv.general;
      const bitRole = await role(row.bit, row.viaChannel ? 0n : P[row.bit]);
      if (row.viaChannel) {
        channel = (await owner.api.post(`${S}/channels`, { name: row.bit })).body._id;
        await owner.api.put(`/channels/${channel}/permissions/default`, { permissions: { allow: 0, deny: Number(P[row.bit]) } });
        await owner.api.put(`/channels/${channel}/permissions/${bitRole}`, { permissions: { allow: Number(P[row.bit]), deny: 0 } });
      }
      const extra = await role('extra', row.extra ?? 0n);
      for (const [u, roles] of [[holder, [bitRole, extra]], [timed, [bitRole, extra]], [plain, [extra]]] as const) {
        const r = await owner.api.patch(`${S}/members/${u.userId}`, { roles });
        if (r.status !== 200) throw new Error(`assign: ${r.text}`);
      }
      const send = await row.prepare(channel);
      const out = await send(outsider);
      t.same([out.status, out.body?.type], [404, 'NotFound'], 'non-member: 404 NotFound');
      const without = await send(plain);
      t.same([without.status, without.body?.type, without.body?.permission], [403, 'MissingPermission', row.bit], `without ${row.bit}: 403`);
      const asTimedOut = await send(timed);
      if (row.timeoutKeeps) t.equal(asTimedOut.status, row.ok, 'a timeout keeps it');
      else t.same([asTimedOut.status, asTimedOut.body?.type], [403, 'MissingPermission'], 'timed out: 403');
      const ok = await send(holder);
      t.equal(ok.status, row.ok, `with ${row.bit} through a ${row.viaChannel ? 'channel role override' : 'role'}: ${row.ok} ${ok.status === row.ok ? '' : ok.text}`);
    });
  }

  t.test('ViewChannel: a hidden channel is 403 ViewChannel for every message route', async (t) => {
    const hidden = (await owner.api.post(`${S}/channels`, { name: 'hidden' })).body._id;
    const m = await message(hidden);
    await owner.api.put(`/channels/${hidden}/permissions/default`, { permissions: { allow: 0, deny: Number(P.ViewChannel) } });
    const everything = await role('everything', P.ManageMessages | P.React | P.Masquerade | P.SendEmbeds);
    await owner.api.patch(`${S}/members/${plain.userId}`, { roles: [everything] });
    const requests: Array<[string, (u: TestUser) => Promise<Res>]> = [
      ['send', (u) => u.api.post(M(hidden), { content: 'x' })],
      ['history', (u) => u.api.get(M(hidden))],
      ['fetch', (u) => u.api.get(`${M(hidden)}/${m}`)],
      ['edit', (u) => u.api.patch(`${M(hidden)}/${m}`, { content: 'x' })],
      ['delete', (u) => u.api.del(`${M(hidden)}/${m}`)],
      ['bulk delete', (u) => u.api.del(`${M(hidden)}/bulk`, { ids: [m] })],
      ['pin', (u) => u.api.post(`${M(hidden)}/${m}/pin`)],
      ['unpin', (u) => u.api.del(`${M(hidden)}/${m}/pin`)],
      ['react', (u) => u.api.put(`${M(hidden)}/${m}/reactions/${enc('👍')}`)],
      ['unreact', (u) => u.api.del(`${M(hidden)}/${m}/reactions/${enc('👍')}`)],
      ['clear reactions', (u) => u.api.del(`${M(hidden)}/${m}/reactions`)],
    ];
    for (const [what, send] of requests) {
      t.equal((await send(outsider)).status, 404, `${what}: non-member 404`);
      const r = await send(plain);
      t.same([r.status, r.body.type, r.body.permission], [403, 'MissingPermission', 'ViewChannel'], `${what}: 403 ViewChannel`);
    }
    t.equal((await owner.api.get(`${M(hidden)}/${m}`)).status, 200, 'the owner sees everything');
  });

  t.test('emoji: fetch is public (Stoat), the list is for members only; the creator deletes without ManageCustomisation', async (t) => {
    const creatorRole = await role('emoji maker', P.ManageCustomisation);
    await owner.api.patch(`${S}/members/${holder.userId}`, { roles: [creatorRole] });
    const id = (await createEmoji(s, holder, srv.id, 'mine'))._id;
    await owner.api.patch(`${S}/members/${holder.userId}`, { roles: [] });
    t.equal((await plain.api.get(`/custom/emoji/${id}`)).status, 200, 'a member fetches it');
    const seen = await outsider.api.get(`/custom/emoji/${id}`);
    t.same([seen.status, seen.body._id, seen.body.parent], [200, id, { type: 'Server', id: srv.id }], 'a non-member fetches it too (clients render emoji of other servers)');
    t.equal((await outsider.api.get(`${S}/emojis`)).status, 404);
    t.equal((await plain.api.del(`/custom/emoji/${id}`)).body.permission, 'ManageCustomisation');
    t.equal((await holder.api.del(`/custom/emoji/${id}`)).status, 204, 'its creator, without the permission');
    t.equal((await holder.api.get(`/custom/emoji/${id}`)).status, 404);
  });
});
