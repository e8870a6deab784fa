/**
 * Authorization table of every permission-gated operation, generated from the route registry: each route of
 * `API_ROUTES` that declares `permissions` must have a recipe below (a gated route without one fails the
 * test, so a new route cannot slip through), and every bit it declares must be the gate of one of the
 * recipe's variants. Each variant is run by
 *
 * | actor    | who                                                              | expected                                  |
 * |----------|------------------------------------------------------------------|-------------------------------------------|
 * | owner    | the server owner (GrantAllSafe)                                  | the variant's 2xx                          |
 * | holder   | a member holding the gate bit through a role                     | the variant's 2xx                          |
 * | plain    | a member without it                                              | 403 MissingPermission naming the gate     |
 * | denied   | the holder's roles plus one whose channel override denies the bit | 403 MissingPermission naming the gate (channel routes only) |
 * | timed    | the holder's roles, timed out                                    | 403 MissingPermission; the 2xx when the request needs only ViewChannel / ReadMessageHistory |
 * | outsider | a user who is not a member                                       | 404 NotFound                              |
 * | anon     | no session                                                       | 401 NotAuthenticated                      |
 *
 * Every member tested also holds the variant's `needs` (the other bits the request uses), so only the gate
 * differs between holder and plain. Channel routes run on a channel of their own whose default override
 * denies the gate (below roles, spec step 2, so the holder's role still grants it) and whose role override
 * for the `denied` member's extra role denies it (step 4, above roles). A refused request must change
 * nothing: the event log's head does not move.
 */
import t from 'tap';
import type * as Tap from 'tap';
import { API_ROUTES } from '../../src/http/routes/index.ts';
import { newId } from '../../src/ids.ts';
import { ALLOW_IN_TIMEOUT, Permission as P, type PermissionName } from '../../src/permissions/bits.ts';
import { client, signup, type Res, type TestUser } from '../helpers/http.ts';
import { request } from '../helpers/http.ts';
import { uploadImage } from '../helpers/messages.ts';
import { createServer, join } from '../helpers/servers.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { runAdmin } from '../../src/cli/accountsAdmin.ts';
import { until } from '../helpers/wait.ts';
import { totp } from '../helpers/totp.ts';

const LIVEKIT = {
  VOICE_ENABLED: 'true',
  LIVEKIT_URL: 'wss://livekit.example',
  LIVEKIT_API_KEY: 'authz-test-key',
  LIVEKIT_API_SECRET: 'authz-test-secret-0123456789abcdefghij',
};

/** What every member gets from the server default: see, read and post. */
const BASE = P.ViewChannel | P.ReadMessageHistory | P.SendMessage;

type Api = ReturnType<typeof client>;
type ActorName = 'owner' | 'holder' | 'plain' | 'denied' | 'timed' | 'outsider' | 'anon';
const ACTORS: readonly ActorName[] = ['anon', 'outsider', 'plain', 'denied', 'timed', 'owner', 'holder'];

/** The caller of one request: its name, its user (none for `anon`) and its client. */
interface Actor {
  name: ActorName;
  user: TestUser | undefined;
  api: Api;
}

/** What a recipe can use to build its request. */
interface Ctx {
  s: TestService;
  owner: TestUser;
  serverId: string;
  /** `/servers/<id>`. */
  S: string;
  /** The variant's channel (channel routes): default override denies the gate, the deny role's override too. */
  channel: string;
  /** Another channel set up like `channel` (for requests that use a channel up, e.g. delete it). */
  freshChannel(): Promise<string>;
  /** A new role without permissions, ranked below every role of the tested members. */
  role(): Promise<string>;
  /** A member without roles, shared by the edits that do not use it up. */
  target: TestUser;
  /** A new member without roles (for kicks and bans). */
  member(): Promise<TestUser>;
  /** A new message in `channel` by `author` (the owner by default). */
  message(author?: TestUser): Promise<string>;
  /** A new upload by the actor (a made-up id for `anon`, who cannot upload). */
  upload(a: Actor, tag: 'attachments' | 'emojis'): Promise<string>;
  /** A role id to mention. */
  mentionRole: string;
}

/** One way of using a gated route, with the bit that gates it. */
interface Variant {
  /** The gate: the bit whose presence alone decides between holder and plain. */
  bit: PermissionName;
  what: string;
  /** Status of a permitted call. */
  ok: number;
  /** Other bits the request uses; every tested member holds them. */
  needs?: PermissionName[];
  /** The variant's channel is a voice channel. */
  voice?: boolean;
  /** Prepares what the request needs for this actor and returns the request. */
  request(x: Ctx, a: Actor): Promise<() => Promise<Res>>;
}

const enc = encodeURIComponent;
const M = (c: string) => `/channels/${c}/messages`;
const hour = () => new Date(Date.now() + 3_600_000).toISOString();
/** The members who can post in a variant's channel whose gate is not SendMessage/ViewChannel. */
const poster = (a: Actor): TestUser | undefined => (a.name === 'owner' || a.name === 'holder' || a.name === 'plain' || a.name === 'denied' ? a.user : undefined);

/**
 * The recipes, keyed by `METHOD path` as registered. Channel routes (`/channels/:channel_id…`) are resolved
 * with channel permissions, so their variants also run the `denied` actor.
 */
const RECIPES: Record<string, Variant[]> = {
  // ---- servers ---------------------------------------------------------------------------------------------
  'PATCH /servers/:server_id': [
    { bit: 'ManageServer', what: 'rename', ok: 200, request: async (x, a) => () => a.api.patch(x.S, { name: 'renamed' }) },
    { bit: 'ManageChannel', what: 'categories', ok: 200, request: async (x, a) => () => a.api.patch(x.S, { categories: [] }) },
  ],
  'PUT /servers/:server_id/permissions/default': [
    { bit: 'ManagePermissions', what: 'server default', ok: 200, request: async (x, a) => () => a.api.put(`${x.S}/permissions/default`, { permissions: Number(BASE) }) },
  ],
  'PUT /servers/:server_id/permissions/:role_id': [
    {
      bit: 'ManagePermissions',
      what: 'role permissions',
      ok: 200,
      request: async (x, a) => {
        const r = await x.role();
        return () => a.api.put(`${x.S}/permissions/${r}`, { permissions: { allow: 0, deny: Number(P.React) } });
      },
    },
  ],
  'POST /servers/:server_id/channels': [
    { bit: 'ManageChannel', what: 'create channel', ok: 200, request: async (x, a) => () => a.api.post(`${x.S}/channels`, { name: 'made' }) },
  ],
  'POST /servers/:server_id/roles': [{ bit: 'ManageRole', what: 'create role', ok: 200, request: async (x, a) => () => a.api.post(`${x.S}/roles`, { name: 'made' }) }],
  'PATCH /servers/:server_id/roles/:role_id': [
    {
      bit: 'ManageRole',
      what: 'edit role',
      ok: 200,
      request: async (x, a) => {
        const r = await x.role();
        return () => a.api.patch(`${x.S}/roles/${r}`, { name: 'edited', colour: '#123456' });
      },
    },
  ],
  'DELETE /servers/:server_id/roles/:role_id': [
    {
      bit: 'ManageRole',
      what: 'delete role',
      ok: 204,
      request: async (x, a) => {
        const r = await x.role();
        return () => a.api.del(`${x.S}/roles/${r}`);
      },
    },
  ],
  'PATCH /servers/:server_id/roles/ranks': [
    {
      bit: 'ManageRole',
      what: 'swap the two lowest roles',
      ok: 200,
      request: async (x, a) => {
        const [r1, r2] = [await x.role(), await x.role()];
        const roles = (await x.owner.api.get(x.S)).body.roles as Record<string, { rank: number }>;
        const order = Object.keys(roles).sort((p, q) => roles[p]!.rank - roles[q]!.rank);
        return () => a.api.patch(`${x.S}/roles/ranks`, { ranks: order.filter((id) => id !== r1 && id !== r2).concat([r2, r1]) });
      },
    },
  ],
  'PATCH /servers/:server_id/members/:user_id': [
    { bit: 'ChangeNickname', what: 'own nickname', ok: 200, request: async (x, a) => () => a.api.patch(`${x.S}/members/${a.user?.userId ?? x.target.userId}`, { nickname: 'me' }) },
    { bit: 'ChangeAvatar', what: 'remove own avatar', ok: 200, request: async (x, a) => () => a.api.patch(`${x.S}/members/${a.user?.userId ?? x.target.userId}`, { remove: ['Avatar'] }) },
    { bit: 'ManageNicknames', what: "another's nickname", ok: 200, request: async (x, a) => () => a.api.patch(`${x.S}/members/${x.target.userId}`, { nickname: `by ${a.name}` }) },
    { bit: 'RemoveAvatars', what: "remove another's avatar", ok: 200, request: async (x, a) => () => a.api.patch(`${x.S}/members/${x.target.userId}`, { remove: ['Avatar'] }) },
    {
      bit: 'AssignRoles',
      what: 'assign a role',
      ok: 200,
      request: async (x, a) => {
        const r = await x.role();
        return () => a.api.patch(`${x.S}/members/${x.target.userId}`, { roles: [r] });
      },
    },
    { bit: 'TimeoutMembers', what: 'time out', ok: 200, request: async (x, a) => () => a.api.patch(`${x.S}/members/${x.target.userId}`, { timeout: hour() }) },
    { bit: 'MuteMembers', what: 'can_publish', ok: 200, request: async (x, a) => () => a.api.patch(`${x.S}/members/${x.target.userId}`, { can_publish: a.name === 'owner' }) },
    { bit: 'DeafenMembers', what: 'can_receive', ok: 200, request: async (x, a) => () => a.api.patch(`${x.S}/members/${x.target.userId}`, { can_receive: a.name === 'owner' }) },
    // This service runs without voice: past the MoveMembers check the move answers 400 FeatureDisabled (the move
    // itself, with LiveKit, is tested in voice.presence.test.ts).
    { bit: 'MoveMembers', what: 'move to a voice channel', ok: 400, request: async (x, a) => () => a.api.patch(`${x.S}/members/${x.target.userId}`, { voice_channel: x.channel }) },
  ],
  'DELETE /servers/:server_id/members/:user_id': [
    {
      bit: 'KickMembers',
      what: 'kick',
      ok: 204,
      request: async (x, a) => {
        const m = await x.member();
        return () => a.api.del(`${x.S}/members/${m.userId}`);
      },
    },
  ],
  'PUT /servers/:server_id/bans/:user_id': [
    {
      bit: 'BanMembers',
      what: 'ban',
      ok: 200,
      request: async (x, a) => {
        const m = await x.member();
        return () => a.api.put(`${x.S}/bans/${m.userId}`, { reason: 'authz' });
      },
    },
  ],
  'DELETE /servers/:server_id/bans/:user_id': [
    {
      bit: 'BanMembers',
      what: 'unban',
      ok: 204,
      request: async (x, a) => {
        const m = await x.member();
        const ban = await x.owner.api.put(`${x.S}/bans/${m.userId}`, {});
        if (ban.status !== 200) throw new Error(`ban: ${ban.text}`);
        return () => a.api.del(`${x.S}/bans/${m.userId}`);
      },
    },
  ],
  'GET /servers/:server_id/bans': [{ bit: 'BanMembers', what: 'list bans', ok: 200, request: async (x, a) => () => a.api.get(`${x.S}/bans`) }],
  'GET /servers/:server_id/invites': [{ bit: 'ManageServer', what: 'list invites', ok: 200, request: async (x, a) => () => a.api.get(`${x.S}/invites`) }],
  'GET /servers/:server_id/audit_logs': [{ bit: 'ViewAuditLogs', what: 'audit log', ok: 200, request: async (x, a) => () => a.api.get(`${x.S}/audit_logs`) }],
  'DELETE /invites/:code': [
    {
      bit: 'ManageServer',
      what: "delete another's invite",
      ok: 204,
      request: async (x, a) => {
        const code = (await x.owner.api.post(`/channels/${x.channel}/invites`)).body._id;
        return () => a.api.del(`/invites/${code}`);
      },
    },
  ],
  'PUT /custom/emoji/:emoji_id': [
    {
      bit: 'ManageCustomisation',
      what: 'create emoji from own upload',
      ok: 200,
      request: async (x, a) => {
        const id = await x.upload(a, 'emojis');
        return () => a.api.put(`/custom/emoji/${id}`, { name: `by_${a.name}`, parent: { type: 'Server', id: x.serverId } });
      },
    },
  ],
  'PATCH /custom/emoji/:emoji_id': [
    {
      bit: 'ManageCustomisation',
      what: 'rename an emoji',
      ok: 200,
      request: async (x, a) => {
        const id = await x.upload({ name: 'owner', user: x.owner, api: x.owner.api }, 'emojis');
        const made = await x.owner.api.put(`/custom/emoji/${id}`, { name: 'to_rename', parent: { type: 'Server', id: x.serverId } });
        if (made.status !== 200) throw new Error(`emoji: ${made.text}`);
        return () => a.api.patch(`/custom/emoji/${id}`, { name: `renamed_${a.name}` });
      },
    },
  ],
  'DELETE /custom/emoji/:emoji_id': [
    {
      bit: 'ManageCustomisation',
      what: "delete another's emoji",
      ok: 204,
      request: async (x, a) => {
        const id = await x.upload({ name: 'owner', user: x.owner, api: x.owner.api }, 'emojis');
        const made = await x.owner.api.put(`/custom/emoji/${id}`, { name: 'target', parent: { type: 'Server', id: x.serverId } });
        if (made.status !== 200) throw new Error(`emoji: ${made.text}`);
        return () => a.api.del(`/custom/emoji/${id}`);
      },
    },
  ],

  // ---- channels --------------------------------------------------------------------------------------------
  'GET /channels/:channel_id': [{ bit: 'ViewChannel', what: 'fetch', ok: 200, request: async (x, a) => () => a.api.get(`/channels/${x.channel}`) }],
  'PATCH /channels/:channel_id': [
    { bit: 'ViewChannel', what: 'edit a hidden channel', ok: 200, needs: ['ManageChannel'], request: async (x, a) => () => a.api.patch(`/channels/${x.channel}`, { name: 'edited' }) },
    { bit: 'ManageChannel', what: 'edit', ok: 200, request: async (x, a) => () => a.api.patch(`/channels/${x.channel}`, { description: `by ${a.name}` }) },
    { bit: 'ManageChannel', what: 'slowmode', ok: 200, request: async (x, a) => () => a.api.patch(`/channels/${x.channel}`, { slowmode: 5 }) },
  ],
  'DELETE /channels/:channel_id': [
    {
      bit: 'ViewChannel',
      what: 'delete a hidden channel',
      ok: 204,
      needs: ['ManageChannel'],
      request: async (x, a) => {
        const c = await x.freshChannel();
        return () => a.api.del(`/channels/${c}`);
      },
    },
    {
      bit: 'ManageChannel',
      what: 'delete',
      ok: 204,
      request: async (x, a) => {
        const c = await x.freshChannel();
        return () => a.api.del(`/channels/${c}`);
      },
    },
  ],
  'PUT /channels/:channel_id/permissions/default': [
    {
      bit: 'ViewChannel',
      what: 'default override of a hidden channel',
      ok: 200,
      needs: ['ManagePermissions'],
      request: async (x, a) => {
        const c = await x.freshChannel();
        return () => a.api.put(`/channels/${c}/permissions/default`, { permissions: { allow: 0, deny: Number(P.ViewChannel) } });
      },
    },
    {
      bit: 'ManagePermissions',
      what: 'default override',
      ok: 200,
      request: async (x, a) => {
        const c = await x.freshChannel();
        return () => a.api.put(`/channels/${c}/permissions/default`, { permissions: { allow: 0, deny: Number(P.ManagePermissions | P.React) } });
      },
    },
  ],
  'PUT /channels/:channel_id/permissions/:role_id': [
    {
      bit: 'ViewChannel',
      what: 'role override in a hidden channel',
      ok: 200,
      needs: ['ManagePermissions'],
      request: async (x, a) => {
        const r = await x.role();
        return () => a.api.put(`/channels/${x.channel}/permissions/${r}`, { permissions: { allow: 0, deny: Number(P.React) } });
      },
    },
    {
      bit: 'ManagePermissions',
      what: 'role override',
      ok: 200,
      request: async (x, a) => {
        const r = await x.role();
        return () => a.api.put(`/channels/${x.channel}/permissions/${r}`, { permissions: { allow: 0, deny: Number(P.React) } });
      },
    },
  ],
  'POST /channels/:channel_id/invites': [
    { bit: 'ViewChannel', what: 'invite to a hidden channel', ok: 200, needs: ['InviteOthers'], request: async (x, a) => () => a.api.post(`/channels/${x.channel}/invites`) },
    { bit: 'InviteOthers', what: 'create invite', ok: 200, request: async (x, a) => () => a.api.post(`/channels/${x.channel}/invites`) },
  ],
  'POST /channels/:channel_id/join_call': [
    { bit: 'Connect', what: 'join a voice channel', ok: 200, voice: true, request: async (x, a) => () => a.api.post(`/channels/${x.channel}/join_call`, {}) },
  ],

  'PUT /channels/:channel_id/ack/:message_id': [
    {
      bit: 'ViewChannel',
      what: 'ack a message',
      ok: 204,
      request: async (x, a) => {
        const m = await x.message();
        return () => a.api.put(`/channels/${x.channel}/ack/${m}`);
      },
    },
  ],

  // ---- messages --------------------------------------------------------------------------------------------
  'POST /channels/:channel_id/messages': [
    { bit: 'ViewChannel', what: 'send to a hidden channel', ok: 200, needs: ['SendMessage'], request: async (x, a) => () => a.api.post(M(x.channel), { content: 'hi' }) },
    { bit: 'SendMessage', what: 'send', ok: 200, request: async (x, a) => () => a.api.post(M(x.channel), { content: 'hi' }) },
    { bit: 'Masquerade', what: 'masquerade name', ok: 200, needs: ['SendMessage'], request: async (x, a) => () => a.api.post(M(x.channel), { content: 'x', masquerade: { name: 'mask' } }) },
    {
      bit: 'ManageRole',
      what: 'masquerade colour',
      ok: 200,
      needs: ['SendMessage', 'Masquerade'],
      request: async (x, a) => () => a.api.post(M(x.channel), { content: 'x', masquerade: { name: 'mask', colour: '#abc' } }),
    },
    { bit: 'SendEmbeds', what: 'embeds', ok: 200, needs: ['SendMessage'], request: async (x, a) => () => a.api.post(M(x.channel), { embeds: [{ title: 'embed' }] }) },
    {
      bit: 'UploadFiles',
      what: 'attachment',
      ok: 200,
      needs: ['SendMessage'],
      request: async (x, a) => {
        const file = await x.upload(a, 'attachments');
        return () => a.api.post(M(x.channel), { content: 'x', attachments: [file] });
      },
    },
    { bit: 'React', what: 'interaction reactions', ok: 200, needs: ['SendMessage'], request: async (x, a) => () => a.api.post(M(x.channel), { content: 'x', interactions: { reactions: ['👍'] } }) },
    { bit: 'MentionEveryone', what: '@everyone', ok: 200, needs: ['SendMessage'], request: async (x, a) => () => a.api.post(M(x.channel), { content: 'hey @everyone' }) },
    { bit: 'MentionRoles', what: 'role mention', ok: 200, needs: ['SendMessage'], request: async (x, a) => () => a.api.post(M(x.channel), { content: `hey <%${x.mentionRole}>` }) },
  ],
  'GET /channels/:channel_id/messages': [
    { bit: 'ViewChannel', what: 'history of a hidden channel', ok: 200, needs: ['ReadMessageHistory'], request: async (x, a) => () => a.api.get(M(x.channel)) },
    { bit: 'ReadMessageHistory', what: 'history', ok: 200, request: async (x, a) => () => a.api.get(M(x.channel)) },
  ],
  'GET /channels/:channel_id/messages/:message_id': [
    {
      bit: 'ViewChannel',
      what: 'fetch in a hidden channel',
      ok: 200,
      needs: ['ReadMessageHistory'],
      request: async (x, a) => {
        const m = await x.message();
        return () => a.api.get(`${M(x.channel)}/${m}`);
      },
    },
    {
      bit: 'ReadMessageHistory',
      what: 'fetch',
      ok: 200,
      request: async (x, a) => {
        const m = await x.message();
        return () => a.api.get(`${M(x.channel)}/${m}`);
      },
    },
  ],
  'POST /channels/:channel_id/search': [
    { bit: 'ViewChannel', what: 'search a hidden channel', ok: 200, needs: ['ReadMessageHistory'], request: async (x, a) => () => a.api.post(`/channels/${x.channel}/search`, { query: 'target' }) },
    { bit: 'ReadMessageHistory', what: 'search', ok: 200, request: async (x, a) => () => a.api.post(`/channels/${x.channel}/search`, { query: 'target' }) },
    { bit: 'ReadMessageHistory', what: 'pinned list', ok: 200, request: async (x, a) => () => a.api.post(`/channels/${x.channel}/search`, { pinned: true }) },
  ],
  // Editing: ViewChannel and SendMessage are checked before authorship, SendEmbeds and UploadFiles after it
  // (src/domain/message/editMessage.ts), so a refused caller edits its own message when it can post.
  'PATCH /channels/:channel_id/messages/:message_id': [
    {
      bit: 'ViewChannel',
      what: 'edit in a hidden channel',
      ok: 200,
      needs: ['SendMessage'],
      request: async (x, a) => {
        const m = await x.message(a.name === 'owner' || a.name === 'holder' ? a.user : undefined);
        return () => a.api.patch(`${M(x.channel)}/${m}`, { content: 'edited' });
      },
    },
    {
      bit: 'SendMessage',
      what: 'edit',
      ok: 200,
      request: async (x, a) => {
        const m = await x.message(a.name === 'owner' || a.name === 'holder' ? a.user : undefined);
        return () => a.api.patch(`${M(x.channel)}/${m}`, { content: 'edited' });
      },
    },
    {
      bit: 'SendEmbeds',
      what: 'edit embeds',
      ok: 200,
      needs: ['SendMessage'],
      request: async (x, a) => {
        const m = await x.message(poster(a));
        return () => a.api.patch(`${M(x.channel)}/${m}`, { embeds: [{ title: 'edited' }] });
      },
    },
    {
      bit: 'UploadFiles',
      what: 'edit embed media',
      ok: 200,
      needs: ['SendMessage', 'SendEmbeds'],
      request: async (x, a) => {
        const m = await x.message(poster(a));
        const file = await x.upload(a, 'attachments');
        return () => a.api.patch(`${M(x.channel)}/${m}`, { embeds: [{ title: 'media', media: file }] });
      },
    },
  ],
  'DELETE /channels/:channel_id/messages/:message_id': [
    {
      bit: 'ViewChannel',
      what: "delete another's in a hidden channel",
      ok: 204,
      needs: ['ManageMessages'],
      request: async (x, a) => {
        const m = await x.message();
        return () => a.api.del(`${M(x.channel)}/${m}`);
      },
    },
    {
      bit: 'ManageMessages',
      what: "delete another's",
      ok: 204,
      request: async (x, a) => {
        const m = await x.message();
        return () => a.api.del(`${M(x.channel)}/${m}`);
      },
    },
  ],
  'DELETE /channels/:channel_id/messages/bulk': [
    {
      bit: 'ViewChannel',
      what: 'bulk delete in a hidden channel',
      ok: 204,
      needs: ['ManageMessages'],
      request: async (x, a) => {
        const m = await x.message();
        return () => a.api.del(`${M(x.channel)}/bulk`, { ids: [m] });
      },
    },
    {
      bit: 'ManageMessages',
      what: 'bulk delete',
      ok: 204,
      request: async (x, a) => {
        const m = await x.message();
        return () => a.api.del(`${M(x.channel)}/bulk`, { ids: [m] });
      },
    },
  ],
  'POST /channels/:channel_id/messages/:message_id/pin': [
    {
      bit: 'ViewChannel',
      what: 'pin in a hidden channel',
      ok: 204,
      needs: ['ManageMessages'],
      request: async (x, a) => {
        const m = await x.message();
        return () => a.api.post(`${M(x.channel)}/${m}/pin`);
      },
    },
    {
      bit: 'ManageMessages',
      what: 'pin',
      ok: 204,
      request: async (x, a) => {
        const m = await x.message();
        return () => a.api.post(`${M(x.channel)}/${m}/pin`);
      },
    },
  ],
  'DELETE /channels/:channel_id/messages/:message_id/pin': [
    {
      bit: 'ViewChannel',
      what: 'unpin in a hidden channel',
      ok: 204,
      needs: ['ManageMessages'],
      request: async (x, a) => {
        const m = await x.message();
        await x.owner.api.post(`${M(x.channel)}/${m}/pin`);
        return () => a.api.del(`${M(x.channel)}/${m}/pin`);
      },
    },
    {
      bit: 'ManageMessages',
      what: 'unpin',
      ok: 204,
      request: async (x, a) => {
        const m = await x.message();
        await x.owner.api.post(`${M(x.channel)}/${m}/pin`);
        return () => a.api.del(`${M(x.channel)}/${m}/pin`);
      },
    },
  ],
  'PUT /channels/:channel_id/messages/:message_id/reactions/:emoji': [
    {
      bit: 'ViewChannel',
      what: 'react in a hidden channel',
      ok: 204,
      needs: ['React'],
      request: async (x, a) => {
        const m = await x.message();
        return () => a.api.put(`${M(x.channel)}/${m}/reactions/${enc('👍')}`);
      },
    },
    {
      bit: 'React',
      what: 'react',
      ok: 204,
      request: async (x, a) => {
        const m = await x.message();
        return () => a.api.put(`${M(x.channel)}/${m}/reactions/${enc('👍')}`);
      },
    },
  ],
  // Removing one's own reaction needs React; the refused callers fail on permissions before "not there".
  'DELETE /channels/:channel_id/messages/:message_id/reactions/:emoji': [
    {
      bit: 'ViewChannel',
      what: 'unreact in a hidden channel',
      ok: 204,
      needs: ['React'],
      request: async (x, a) => {
        const m = await x.message();
        if (a.name === 'owner' || a.name === 'holder') await a.api.put(`${M(x.channel)}/${m}/reactions/${enc('👍')}`);
        return () => a.api.del(`${M(x.channel)}/${m}/reactions/${enc('👍')}`);
      },
    },
    {
      bit: 'React',
      what: 'unreact',
      ok: 204,
      request: async (x, a) => {
        const m = await x.message();
        if (a.name === 'owner' || a.name === 'holder') await a.api.put(`${M(x.channel)}/${m}/reactions/${enc('👍')}`);
        return () => a.api.del(`${M(x.channel)}/${m}/reactions/${enc('👍')}`);
      },
    },
    {
      bit: 'ManageMessages',
      what: "remove another's reaction",
      ok: 204,
      needs: ['React'],
      request: async (x, a) => {
        const m = await x.message();
        await x.owner.api.put(`${M(x.channel)}/${m}/reactions/${enc('👍')}`);
        return () => a.api.del(`${M(x.channel)}/${m}/reactions/${enc('👍')}?user_id=${x.owner.userId}`);
      },
    },
  ],
  'DELETE /channels/:channel_id/messages/:message_id/reactions': [
    {
      bit: 'ViewChannel',
      what: 'clear reactions in a hidden channel',
      ok: 204,
      needs: ['ManageMessages'],
      request: async (x, a) => {
        const m = await x.message();
        await x.owner.api.put(`${M(x.channel)}/${m}/reactions/${enc('👍')}`);
        return () => a.api.del(`${M(x.channel)}/${m}/reactions`);
      },
    },
    {
      bit: 'ManageMessages',
      what: 'clear reactions',
      ok: 204,
      request: async (x, a) => {
        const m = await x.message();
        await x.owner.api.put(`${M(x.channel)}/${m}/reactions/${enc('👍')}`);
        return () => a.api.del(`${M(x.channel)}/${m}/reactions`);
      },
    },
  ],
  // ---- bots and webhooks (issue 22) ------------------------------------------------------------------------------
  'POST /bots/:target/invite': [
    {
      bit: 'ManageServer',
      what: 'invite a public bot',
      ok: 204,
      request: async (x, a) => {
        const maker = await signup(x.s);
        const bot = await maker.api.post('/bots/create', { name: `authzbot${newId().slice(-8).toLowerCase()}` });
        await maker.api.patch(`/bots/${bot.body._id}`, { public: true });
        return () => a.api.post(`/bots/${bot.body._id}/invite`, { server: x.serverId });
      },
    },
  ],
  'POST /channels/:channel_id/webhooks': [
    { bit: 'ManageWebhooks', what: 'create webhook', ok: 200, request: async (x, a) => () => a.api.post(`/channels/${x.channel}/webhooks`, { name: 'hook' }) },
  ],
  'GET /channels/:channel_id/webhooks': [
    { bit: 'ManageWebhooks', what: 'list webhooks', ok: 200, request: async (x, a) => () => a.api.get(`/channels/${x.channel}/webhooks`) },
  ],
  'GET /webhooks/:webhook_id': [
    {
      bit: 'ManageWebhooks',
      what: 'fetch webhook',
      ok: 200,
      request: async (x, a) => {
        const w = await x.owner.api.post(`/channels/${x.channel}/webhooks`, { name: 'hook' });
        return () => a.api.get(`/webhooks/${w.body.id}`);
      },
    },
  ],
  'PATCH /webhooks/:webhook_id': [
    {
      bit: 'ManageWebhooks',
      what: 'edit webhook',
      ok: 200,
      request: async (x, a) => {
        const w = await x.owner.api.post(`/channels/${x.channel}/webhooks`, { name: 'hook' });
        return () => a.api.patch(`/webhooks/${w.body.id}`, { name: 'renamed' });
      },
    },
  ],
  'DELETE /webhooks/:webhook_id': [
    {
      bit: 'ManageWebhooks',
      what: 'delete webhook',
      ok: 204,
      request: async (x, a) => {
        const w = await x.owner.api.post(`/channels/${x.channel}/webhooks`, { name: 'hook' });
        return () => a.api.del(`/webhooks/${w.body.id}`);
      },
    },
  ],
};

const keyOf = (r: { method: string; path: string }) => `${r.method} ${r.path}`;
const isChannelRoute = (path: string) => path.startsWith('/channels/:channel_id');
const gated = API_ROUTES.filter((r) => (r.permissions ?? []).length > 0);

/** What an actor must get from a variant. */
function expectation(v: Variant, channelRoute: boolean, actor: ActorName): { status: number; type?: string; permission?: string | string[] } | undefined {
  switch (actor) {
    case 'anon':
      return { status: 401, type: 'NotAuthenticated' };
    case 'outsider':
      return { status: 404, type: 'NotFound' };
    case 'plain':
      return { status: 403, type: 'MissingPermission', permission: v.bit };
    case 'denied':
      return channelRoute ? { status: 403, type: 'MissingPermission', permission: v.bit } : undefined;
    case 'timed': {
      const used = [v.bit, ...(v.needs ?? [])];
      if (used.every((b) => (P[b] & ALLOW_IN_TIMEOUT) !== 0n)) return { status: v.ok };
      // The first bit the route checks that the timeout took away (a route checks SendMessage before SendEmbeds …).
      return { status: 403, type: 'MissingPermission', permission: used.filter((b) => (P[b] & ALLOW_IN_TIMEOUT) === 0n) };
    }
    case 'owner':
    case 'holder':
      return { status: v.ok };
  }
}

t.test('the recipe table covers every gated route and every declared bit', async (t) => {
  const registered = new Set(API_ROUTES.map(keyOf));
  const missing = gated.filter((r) => !RECIPES[keyOf(r)]).map(keyOf);
  t.same(missing, [], 'every route that declares permissions has a recipe');
  t.same(Object.keys(RECIPES).filter((k) => !registered.has(k)), [], 'no recipe for a route that does not exist');
  t.same(
    Object.keys(RECIPES).filter((k) => !(API_ROUTES.find((r) => keyOf(r) === k)?.permissions ?? []).length),
    [],
    'no recipe for a route that declares no permission (declare it on the route)',
  );
  for (const r of gated) {
    const variants = RECIPES[keyOf(r)] ?? [];
    const gates = new Set(variants.map((v) => v.bit));
    t.same(
      (r.permissions ?? []).filter((b) => !gates.has(b as PermissionName)),
      [],
      `${keyOf(r)}: every declared bit gates a variant`,
    );
    t.same(
      [...gates].filter((b) => !(r.permissions ?? []).includes(b)),
      [],
      `${keyOf(r)}: every gate is declared by the route`,
    );
  }
  t.ok(gated.length >= 36, `${gated.length} gated routes`);
});

t.test('authorization table', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', ...LIVEKIT });
  const users = await Promise.all(Array.from({ length: 7 }, () => signup(s)));
  const [owner, holder, plain, denied, timed, outsider, target] = users as [TestUser, TestUser, TestUser, TestUser, TestUser, TestUser, TestUser];
  const srv = await createServer(owner, 'Authz table');
  const S = `/servers/${srv.id}`;
  const invite = await join(owner, srv.general, holder, plain, denied, timed, target);
  const ok = (r: Res, what: string) => {
    if (r.status >= 300) throw new Error(`${what}: ${r.status} ${r.text}`);
    return r;
  };
  ok(await owner.api.put(`${S}/permissions/default`, { permissions: Number(BASE) }), 'server default');
  ok(await owner.api.patch(`${S}/members/${timed.userId}`, { timeout: hour() }), 'timeout');

  // The roles the tested members hold are created first, so every target role created later ranks below them.
  const gates = [...new Set(Object.values(RECIPES).flatMap((vs) => vs.map((v) => v.bit)))];
  const needs = [...new Set(Object.values(RECIPES).flatMap((vs) => vs.flatMap((v) => v.needs ?? [])))];
  const roleOf = new Map<PermissionName, string>();
  for (const bit of new Set([...gates, ...needs])) {
    const id = ok(await owner.api.post(`${S}/roles`, { name: bit }), `role ${bit}`).body.id as string;
    ok(await owner.api.put(`${S}/permissions/${id}`, { permissions: { allow: P[bit].toString(), deny: 0 } }), `role ${bit} permissions`);
    roleOf.set(bit, id);
  }
  const denyRole = ok(await owner.api.post(`${S}/roles`, { name: 'denied by channel override' }), 'deny role').body.id as string;
  const mentionRole = ok(await owner.api.post(`${S}/roles`, { name: 'mentioned' }), 'mention role').body.id as string;

  const actors: Record<ActorName, Actor> = {
    owner: { name: 'owner', user: owner, api: owner.api },
    holder: { name: 'holder', user: holder, api: holder.api },
    plain: { name: 'plain', user: plain, api: plain.api },
    denied: { name: 'denied', user: denied, api: denied.api },
    timed: { name: 'timed', user: timed, api: timed.api },
    outsider: { name: 'outsider', user: outsider, api: outsider.api },
    anon: { name: 'anon', user: undefined, api: client(s) },
  };

  const summary: Array<{ route: string; variants: number; actors: number }> = [];
  for (const route of gated) {
    const variants = RECIPES[keyOf(route)] ?? [];
    const channelRoute = isChannelRoute(route.path);
    summary.push({ route: keyOf(route), variants: variants.length, actors: channelRoute ? 7 : 6 });
    for (const v of variants) {
      t.test(`${keyOf(route)} — ${v.bit}: ${v.what}`, async (t) => {
        const extra = (v.needs ?? []).map((b) => roleOf.get(b)!);
        const gate = roleOf.get(v.bit)!;
        for (const [u, roles] of [
          [holder, [gate, ...extra]],
          [timed, [gate, ...extra]],
          [denied, [gate, ...extra, denyRole]],
          [plain, extra],
        ] as const) {
          ok(await owner.api.patch(`${S}/members/${u.userId}`, { roles }), 'assign roles');
        }
        const setUpChannel = async () => {
          const c = ok(await owner.api.post(`${S}/channels`, { name: v.bit, ...(v.voice ? { type: 'Voice' } : {}) }), 'channel').body._id as string;
          const deny = { permissions: { allow: 0, deny: P[v.bit].toString() } };
          ok(await owner.api.put(`/channels/${c}/permissions/default`, deny), 'channel default override');
          ok(await owner.api.put(`/channels/${c}/permissions/${denyRole}`, deny), 'channel role override');
          return c;
        };
        const x: Ctx = {
          s,
          owner,
          serverId: srv.id,
          S,
          channel: channelRoute ? await setUpChannel() : srv.general,
          freshChannel: setUpChannel,
          role: async () => ok(await owner.api.post(`${S}/roles`, { name: 'target' }), 'target role').body.id as string,
          target,
          member: async () => {
            const u = await signup(s);
            ok(await u.api.post(`/invites/${invite}`), 'join');
            return u;
          },
          message: async (author = owner) => ok(await author.api.post(M(x.channel), { content: 'target' }), 'target message').body._id as string,
          upload: async (a, tag) => (a.user ? uploadImage(s, a.user, tag) : newId()),
          mentionRole,
        };
        for (const name of ACTORS) {
          const want = expectation(v, channelRoute, name);
          if (!want) continue;
          const send = await v.request(x, actors[name]);
          const headBefore = await s.store.headPosition();
          const r = await send();
          const got = { status: r.status, type: r.body?.type, permission: r.body?.permission };
          if (want.type === undefined) {
            t.equal(r.status, want.status, `${name}: ${want.status}${r.status === want.status ? '' : ` (got ${r.status} ${r.text})`}`);
          } else if (Array.isArray(want.permission)) {
            t.ok(
              got.status === want.status && got.type === want.type && want.permission.includes(got.permission),
              `${name}: ${want.status} ${want.type} naming one of ${want.permission.join(', ')} (got ${JSON.stringify(got)})`,
            );
          } else {
            t.same(got, { status: want.status, type: want.type, permission: want.permission }, `${name}: ${want.status} ${want.type} ${want.permission ?? ''}`);
          }
          if (r.status >= 400) t.equal(await s.store.headPosition(), headBefore, `${name}: the refusal appended nothing`);
        }
      });
    }
  }

  t.test('order of checks', async (t) => {
    const give = async (u: TestUser, ...bits: PermissionName[]) => ok(await owner.api.patch(`${S}/members/${u.userId}`, { roles: bits.map((b) => roleOf.get(b)!) }), 'roles');
    await give(holder, 'Connect');
    await give(plain);
    // join_call: membership (404), then Connect (403), then the channel type (400), as documented on the route.
    const text = srv.general;
    t.equal((await outsider.api.post(`/channels/${text}/join_call`, {})).status, 404, 'join_call on a text channel, non-member: 404');
    const noConnect = await plain.api.post(`/channels/${text}/join_call`, {});
    t.same([noConnect.status, noConnect.body.type, noConnect.body.permission], [403, 'MissingPermission', 'Connect'], 'without Connect: 403 before the type');
    const notVoice = await holder.api.post(`/channels/${text}/join_call`, {});
    t.same([notVoice.status, notVoice.body.type], [400, 'NotAVoiceChannel'], 'with Connect: 400 NotAVoiceChannel');
    // end_ring (Stoat's stop_ring): membership (404) before the channel type (400 NoEffect in a server channel).
    const endRing = (u: TestUser, channel: string) => u.api.put(`/channels/${channel}/end_ring/${owner.userId}`);
    t.same([(await endRing(outsider, text)).status, (await endRing(outsider, text)).body.type], [404, 'NotFound'], 'end_ring, non-member: 404');
    t.same([(await endRing(plain, text)).status, (await endRing(plain, text)).body.type], [400, 'NoEffect'], 'end_ring in a server channel, member: 400 NoEffect');
    t.equal((await endRing(plain, '01' + '0'.repeat(24))).status, 404, 'end_ring in a channel that does not exist: 404');
    // A channel's default override sits below the roles (step 2): it cannot take away what a role grants.
    const c = ok(await owner.api.post(`${S}/channels`, { name: 'order' }), 'channel').body._id as string;
    ok(await owner.api.put(`/channels/${c}/permissions/default`, { permissions: { allow: 0, deny: Number(P.Connect | P.ViewChannel) } }), 'default');
    await give(holder, 'ViewChannel', 'Connect');
    t.equal((await holder.api.get(`/channels/${c}`)).status, 200, 'a role grants back what the channel default denies');
    // Message edit: permissions before authorship, so a timed-out author is refused for SendMessage, not authorship.
    await give(timed);
    const byOwner = await owner.api.post(M(srv.general), { content: 'owner' });
    const e = await timed.api.patch(`${M(srv.general)}/${byOwner.body._id}`, { content: 'x' });
    t.same([e.status, e.body.type, e.body.permission], [403, 'MissingPermission', 'SendMessage'], 'timed out: SendMessage before CannotEditMessage');
    const other = await plain.api.patch(`${M(srv.general)}/${byOwner.body._id}`, { content: 'x' });
    t.same([other.status, other.body.type], [403, 'CannotEditMessage'], 'with SendMessage: only the author edits');
  });

  t.test('summary', async (t) => {
    const count = summary.reduce((n, r) => n + r.variants, 0);
    const cells = summary.reduce((n, r) => n + r.variants * r.actors, 0);
    for (const r of summary) t.comment(`${r.route.padEnd(70)} ${r.variants} variant(s) × ${r.actors} actors`);
    t.comment(`${summary.length} gated routes, ${count} variants, ${cells} cells`);
    t.ok(count >= summary.length);
  });
});

/**
 * Account routes (issue 23) are not permission-gated: what guards them is the session, and for the
 * operations Stoat guards with one, a validated MFA ticket of the caller's own account. Every route under
 * `/auth/mfa/` and every account route added with them has a row: [method, path, auth, needs a ticket].
 */
const ACCOUNT_ROUTES: Array<[string, string, 'none' | 'session', boolean]> = [
  ['POST', '/auth/account/verify/:code', 'none', false],
  ['POST', '/auth/account/reverify', 'none', false],
  ['POST', '/auth/account/reset_password', 'none', false],
  ['PATCH', '/auth/account/reset_password', 'none', false],
  ['PUT', '/auth/account/delete', 'none', false],
  ['PATCH', '/auth/account/change/email', 'session', false],
  ['POST', '/auth/account/disable', 'session', true],
  ['POST', '/auth/account/delete', 'session', true],
  ['PUT', '/auth/mfa/ticket', 'session', false],
  ['GET', '/auth/mfa/', 'session', false],
  ['GET', '/auth/mfa/methods', 'session', false],
  ['POST', '/auth/mfa/recovery', 'session', true],
  ['PATCH', '/auth/mfa/recovery', 'session', true],
  ['POST', '/auth/mfa/totp', 'session', true],
  ['PUT', '/auth/mfa/totp', 'session', false],
  ['DELETE', '/auth/mfa/totp', 'session', true],
];

t.test('account routes: session and MFA ticket', async (t) => {
  const registered = API_ROUTES.filter((r) => r.path.startsWith('/auth/mfa/')).map(keyOf);
  t.same(registered.filter((k) => !ACCOUNT_ROUTES.some(([m, p]) => `${m} ${p}` === k)), [], 'every /auth/mfa/ route has a row');
  for (const [m, p, auth] of ACCOUNT_ROUTES) {
    const route = API_ROUTES.find((r) => keyOf(r) === `${m} ${p}`);
    t.equal(route?.auth, auth, `${m} ${p} is registered with auth ${auth}`);
  }
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [me, other] = await Promise.all([signup(s), signup(s)]);
  const anon = client(s);
  const otherTicket = (await other.api.put('/auth/mfa/ticket', { password: other.password })).body.token as string;
  // (An unvalidated login ticket is refused too: test/accounts.mfa.test.ts, where TOTP is on.)
  const call = (who: ReturnType<typeof client>, m: string, p: string, headers: Record<string, string> = {}) =>
    request(s.apiUrl, m, p.replace(':code', 'not-a-code'), { ...(who.token ? { token: who.token } : {}), headers, ...(m === 'GET' ? {} : { body: {} }), skipOpenApi: true });
  for (const [m, p, auth, ticket] of ACCOUNT_ROUTES) {
    const head = await s.store.headPosition();
    if (auth === 'session') {
      const r = await call(anon, m, p);
      t.same([r.status, r.body.type], [401, 'NotAuthenticated'], `${m} ${p} anonymous`);
    }
    if (ticket) {
      for (const [what, h] of [
        ['no ticket', {}],
        ["another account's ticket", { 'X-MFA-Ticket': otherTicket }],
        ['a malformed ticket', { 'X-MFA-Ticket': `${me.userId}.${'x'.repeat(43)}` }],
      ] as const) {
        const r = await call(me.api, m, p, h);
        t.same([r.status, r.body.type], [401, 'InvalidToken'], `${m} ${p}: ${what}`);
      }
    }
    t.equal(await s.store.headPosition(), head, `${m} ${p}: refusals change nothing`);
  }
  // A validated ticket works once, for its own account only.
  const mine = (await me.api.put('/auth/mfa/ticket', { password: me.password })).body.token as string;
  t.equal((await call(me.api, 'PATCH', '/auth/mfa/recovery', { 'X-MFA-Ticket': mine })).status, 200);
  const again = await call(me.api, 'PATCH', '/auth/mfa/recovery', { 'X-MFA-Ticket': mine });
  t.same([again.status, again.body.type], [401, 'InvalidToken'], 'a ticket is used once');
});

/**
 * The account export (issue 39 part 4): `GET /auth/account/export` answers the signed-in user only — no
 * session, a bad session token and a bot token are 401 NotAuthenticated/InvalidSession before a byte is
 * sent — and with TOTP on only with a fresh validated MFA ticket of the caller's own account, once: none,
 * another account's, a malformed one, a used one and a stale one are 401 InvalidToken and append nothing.
 */
t.test('GET /auth/account/export: session, bot and MFA ticket', async (t) => {
  let offset = 0;
  const s = await startTestService(t, { RATE_LIMITS: 'off', ACCOUNT_EXPORTS_PER_DAY: '50' }, { now: () => Date.now() + offset });
  const [me, other] = await Promise.all([signup(s), signup(s)]);
  const bot = (await me.api.post('/bots/create', { name: `authzexport${process.pid % 1000}` })).body as { _id: string; token: string };
  const get = (headers: Record<string, string>) => request(s.apiUrl, 'GET', '/auth/account/export', { headers, skipOpenApi: true });
  const ok = await get({ 'X-Session-Token': me.token });
  t.same([ok.status, ok.headers.get('content-type')], [200, 'application/zip'], 'the signed-in user: 200, a ZIP');
  const refusals: Array<[string, Record<string, string>, number, string]> = [
    ['a stranger (no session)', {}, 401, 'NotAuthenticated'],
    ['an unknown session token', { 'X-Session-Token': 'x'.repeat(64) }, 401, 'InvalidSession'],
    ['a bot token', { 'X-Bot-Token': bot.token }, 401, 'NotAuthenticated'],
  ];
  for (const [who, headers, status, type] of refusals) {
    const head = await s.store.headPosition();
    const r = await get(headers);
    t.same([r.status, r.body?.type], [status, type], `${who}: ${status} ${type}`);
    t.equal(await s.store.headPosition(), head, `${who}: nothing appended`);
  }

  // TOTP on: the export needs a validated ticket of the caller's own account, fresh and unused.
  const setup = (await me.api.put('/auth/mfa/ticket', { password: me.password })).body.token as string;
  const secret = (await me.api.post('/auth/mfa/totp', undefined, { headers: { 'X-MFA-Ticket': setup } })).body.secret as string;
  t.equal((await me.api.put('/auth/mfa/totp', { totp_code: totp(secret, Date.now() + offset) })).status, 204, 'TOTP on');
  const otherTicket = (await other.api.put('/auth/mfa/ticket', { password: other.password })).body.token as string;
  offset += 30_000;
  const used = (await me.api.put('/auth/mfa/ticket', { totp_code: totp(secret, Date.now() + offset) })).body.token as string;
  t.equal((await get({ 'X-Session-Token': me.token, 'X-MFA-Ticket': used })).status, 200, 'a fresh validated ticket: 200');
  offset += 30_000;
  const stale = (await me.api.put('/auth/mfa/ticket', { totp_code: totp(secret, Date.now() + offset) })).body.token as string;
  offset += 20 * 60_000;
  const tickets: Array<[string, Record<string, string>]> = [
    ['no ticket', {}],
    ["another account's ticket", { 'X-MFA-Ticket': otherTicket }],
    ['a malformed ticket', { 'X-MFA-Ticket': `${me.userId}.${'x'.repeat(43)}` }],
    ['a used ticket', { 'X-MFA-Ticket': used }],
    ['a stale ticket (20 minutes old)', { 'X-MFA-Ticket': stale }],
  ];
  for (const [what, h] of tickets) {
    const head = await s.store.headPosition();
    const r = await get({ 'X-Session-Token': me.token, ...h });
    t.same([r.status, r.body?.type], [401, 'InvalidToken'], `${what}: 401 InvalidToken`);
    t.equal(await s.store.headPosition(), head, `${what}: nothing appended`);
  }
});

/**
 * Instance staff routes (issues 32 and 39): every `/admin/*` route of the registry has a row, run by
 *
 * | caller     | expected                                                                      |
 * |------------|-------------------------------------------------------------------------------|
 * | anonymous  | 401 NotAuthenticated                                                          |
 * | a user     | 403 NotPrivileged                                                             |
 * | a bot      | 403 NotPrivileged                                                             |
 * | moderator  | 403 NotPrivileged on an admin-only route, the row's 2xx on a moderators' one   |
 * | admin      | the row's 2xx                                                                 |
 *
 * A refused call changes nothing: the log's head does not move and the row's read-back (the policies, the
 * account's standing, the message, …) is what it was. Authorization comes before validation: a row's bad input
 * (a bad body or query, and a body that is not JSON) is 403 for every caller without the role and 400
 * FailedValidation for the one with it, again changing nothing.
 */
t.test('/admin routes: instance staff only, authorization before validation', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [admin, mod, plain, owner] = await Promise.all([signup(s), signup(s), signup(s), signup(s)]);
  for (const [u, role] of [[admin, 'admin'], [mod, 'moderator']] as const) {
    await runAdmin(['grant', u.userId, '--role', role], { store: s.store, print: () => {} });
    await until(`${role} granted`, async () => (await s.readModels.hgetJson('instance:staff', u.userId)) === role);
  }
  const bot = (await plain.api.post('/bots/create', { name: `authzadmin${process.pid % 1000}` })).body as { token: string };
  const srv = await createServer(owner, 'Admin authz');
  await join(owner, srv.general, plain);
  const must = (r: Res, what: string) => {
    if (r.status >= 300) throw new Error(`${what}: ${r.status} ${r.text}`);
    return r;
  };
  const message = async () => must(await owner.api.post(M(srv.general), { content: 'target' }), 'message').body._id as string;
  const report = async () => {
    const m = await message();
    must(await plain.api.post('/safety/report', { content: { type: 'Message', id: m, report_reason: 'ScamsFraud' } }), 'report');
    return until('report listed', async () => {
      const list = (await admin.api.get('/admin/reports?status=Created&limit=100')).body as Array<{ _id: string; content: { id: string } }>;
      return list.find((r) => r.content.id === m)?._id;
    });
  };
  const suspended = async () => {
    const u = await signup(s);
    must(await admin.api.post(`/admin/users/${u.userId}/suspend`, { reason: 'fixture' }), 'suspend');
    return u.userId;
  };
  const standing = must(await admin.api.post('/admin/holds', { name: 'matter', reason: 'r', target: { type: 'user', id: plain.userId } }), 'hold').body._id as string;
  const asAdmin = (p: string) => request(s.apiUrl, 'GET', p, { headers: { 'X-Session-Token': admin.token }, skipOpenApi: true });
  const standingOf = async (id: string) => (await asAdmin(`/admin/users/${id}`)).body;

  /** A fixture for one call: the path's ids filled in, and what to read back around a refusal. */
  interface Fixture {
    path: string;
    readBack?: () => Promise<unknown>;
  }
  interface Row {
    method: string;
    path: string;
    /** The role the route needs. */
    need: 'admin' | 'moderator';
    ok: number;
    /** A valid body (or none). */
    body?: unknown;
    /** Makes what one call uses (a fresh target for a call that uses it up). */
    fixture(): Promise<Fixture>;
    /** A request that fails validation once authorized: a query suffix, or a body. */
    bad?: { query?: string; body?: unknown };
  }
  const fixed = (path: string, readBack?: () => Promise<unknown>) => async (): Promise<Fixture> => ({ path, ...(readBack ? { readBack } : {}) });
  const policies = () => asAdmin('/admin/retention').then((r) => r.body);
  const holds = () => asAdmin('/admin/holds').then((r) => r.body);
  const rows: Row[] = [
    { method: 'GET', path: '/admin/reports', need: 'moderator', ok: 200, fixture: fixed('/admin/reports'), bad: { query: '?limit=0' } },
    {
      method: 'GET',
      path: '/admin/reports/:report_id',
      need: 'moderator',
      ok: 200,
      fixture: async () => ({ path: `/admin/reports/${await report()}` }),
    },
    {
      method: 'PATCH',
      path: '/admin/reports/:report_id',
      need: 'moderator',
      ok: 200,
      body: { notes: 'triaged' },
      fixture: async () => {
        const id = await report();
        return { path: `/admin/reports/${id}`, readBack: async () => (await asAdmin(`/admin/reports/${id}`)).body };
      },
      bad: { body: { status: 7 } },
    },
    {
      method: 'GET',
      path: '/admin/users/:user_id',
      need: 'moderator',
      ok: 200,
      fixture: fixed(`/admin/users/${plain.userId}`),
    },
    {
      method: 'POST',
      path: '/admin/users/:user_id/suspend',
      need: 'moderator',
      ok: 200,
      body: { reason: 'r' },
      fixture: async () => {
        const u = await signup(s);
        return { path: `/admin/users/${u.userId}/suspend`, readBack: () => standingOf(u.userId) };
      },
      bad: { body: { reason: 'r', duration_days: 0 } },
    },
    {
      method: 'POST',
      path: '/admin/users/:user_id/ban',
      need: 'admin',
      ok: 200,
      body: { reason: 'r' },
      fixture: async () => {
        const u = await signup(s);
        return { path: `/admin/users/${u.userId}/ban`, readBack: () => standingOf(u.userId) };
      },
      bad: { body: { reason: 7 } },
    },
    {
      method: 'POST',
      path: '/admin/users/:user_id/lift',
      need: 'admin',
      ok: 200,
      body: { reason: 'r' },
      fixture: async () => {
        const id = await suspended();
        return { path: `/admin/users/${id}/lift`, readBack: () => standingOf(id) };
      },
      bad: { body: {} },
    },
    {
      method: 'DELETE',
      path: '/admin/users/:user_id',
      need: 'admin',
      ok: 204,
      body: { reason: 'abuse' },
      fixture: async () => {
        const u = await signup(s);
        return {
          path: `/admin/users/${u.userId}`,
          // The account is still there and still signed in.
          readBack: async () => [(await asAdmin(`/admin/users/${u.userId}`)).status, (await u.api.get('/users/@me')).body.username],
        };
      },
      bad: { body: { reason: '' } },
    },
    {
      method: 'DELETE',
      path: '/admin/messages/:message_id',
      need: 'moderator',
      ok: 204,
      body: { reason: 'r' },
      fixture: async () => {
        const m = await message();
        return { path: `/admin/messages/${m}`, readBack: async () => (await owner.api.get(`${M(srv.general)}/${m}`)).status };
      },
      bad: { body: { reason: 'r', extra: true } },
    },
    { method: 'GET', path: '/admin/audit', need: 'moderator', ok: 200, fixture: fixed('/admin/audit'), bad: { query: '?limit=101' } },
    {
      method: 'DELETE',
      path: '/admin/servers/:server_id',
      need: 'moderator',
      ok: 204,
      body: { reason: 'r' },
      fixture: async () => {
        const { id } = await createServer(owner, 'doomed');
        return { path: `/admin/servers/${id}`, readBack: async () => (await owner.api.get(`/servers/${id}`)).status };
      },
      bad: { body: {} },
    },
    {
      method: 'GET',
      path: '/admin/export',
      need: 'admin',
      ok: 200,
      fixture: fixed(`/admin/export?from=2020-01-01T00:00:00Z&to=${enc(new Date(Date.now() + 86_400_000).toISOString())}`),
      bad: { query: '&format=xml' },
    },
    { method: 'POST', path: '/admin/holds', need: 'admin', ok: 200, body: { name: 'matter', reason: 'r', target: { type: 'user', id: plain.userId } }, fixture: fixed('/admin/holds', holds), bad: { body: { name: 7 } } },
    { method: 'GET', path: '/admin/holds', need: 'admin', ok: 200, fixture: fixed('/admin/holds'), bad: { query: '?limit=0' } },
    {
      method: 'POST',
      path: '/admin/holds/:hold_id/lift',
      need: 'admin',
      ok: 200,
      body: { reason: 'r' },
      fixture: async () => {
        const id = must(await admin.api.post('/admin/holds', { name: 'to lift', reason: 'r', target: { type: 'server', id: srv.id } }), 'hold').body._id as string;
        return { path: `/admin/holds/${id}/lift`, readBack: holds };
      },
      bad: { body: { reason: 7 } },
    },
    { method: 'GET', path: '/admin/retention', need: 'admin', ok: 200, fixture: fixed('/admin/retention') },
    { method: 'PUT', path: '/admin/retention/instance', need: 'admin', ok: 200, body: { max_age_seconds: 86_400 }, fixture: fixed('/admin/retention/instance', policies), bad: { body: { max_age_seconds: 0 } } },
    {
      method: 'PUT',
      path: '/admin/retention/servers/:server_id',
      need: 'admin',
      ok: 200,
      body: { max_age_seconds: 3_600 },
      fixture: async () => ({ path: `/admin/retention/servers/${(await createServer(owner, 'kept')).id}`, readBack: policies }),
      bad: { body: { max_age_seconds: 'an hour' } },
    },
    {
      method: 'PUT',
      path: '/admin/retention/channels/:channel_id',
      need: 'admin',
      ok: 200,
      body: { max_age_seconds: 60 },
      fixture: async () => {
        const c = must(await owner.api.post(`/servers/${srv.id}/channels`, { name: 'kept' }), 'channel').body._id as string;
        return { path: `/admin/retention/channels/${c}`, readBack: policies };
      },
      bad: { body: { max_age_seconds: 1.5 } },
    },
  ];
  t.same(
    API_ROUTES.filter((r) => r.path.startsWith('/admin')).map(keyOf).sort(),
    rows.map((r) => `${r.method} ${r.path}`).sort(),
    'every /admin route has a row',
  );
  t.same(
    API_ROUTES.filter((r) => r.path.startsWith('/admin') && !r.authorize).map(keyOf),
    [],
    'every /admin route authorizes before validation',
  );

  type Caller = [string, Record<string, string>, 'none' | 'user' | 'moderator' | 'admin'];
  const callers: Caller[] = [
    ['anonymous', {}, 'none'],
    ['a user', { 'X-Session-Token': plain.token }, 'user'],
    ['a bot', { 'X-Bot-Token': bot.token }, 'user'],
    ['a moderator', { 'X-Session-Token': mod.token }, 'moderator'],
    ['an admin', { 'X-Session-Token': admin.token }, 'admin'],
  ];
  const allowed = (row: Row, level: Caller[2]) => level === 'admin' || (level === 'moderator' && row.need === 'moderator');
  const refusal = (level: Caller[2]) => (level === 'none' ? [401, 'NotAuthenticated'] : [403, 'NotPrivileged']);
  const send = (row: Row, path: string, headers: Record<string, string>, extra: { body?: unknown; rawBody?: string } = {}) =>
    request(s.apiUrl, row.method, path, {
      headers,
      ...(extra.rawBody !== undefined ? { rawBody: extra.rawBody, contentType: 'application/json' } : extra.body !== undefined ? { body: extra.body } : row.body !== undefined ? { body: row.body } : {}),
      skipOpenApi: true,
    });
  /** Sends and checks that a refused call changed nothing (the log's head, the fixture's read-back). */
  const refused = async (t: Tap.Test, what: string, fx: Fixture, go: () => Promise<Res>, want: unknown[]) => {
    const head = await s.store.headPosition();
    const before = await fx.readBack?.();
    const r = await go();
    t.same([r.status, r.body?.type], want, `${what}: ${want.join(' ')}${r.status === want[0] ? '' : ` (got ${r.status} ${r.text.slice(0, 200)})`}`);
    t.equal(await s.store.headPosition(), head, `${what}: nothing appended`);
    if (fx.readBack) t.same(await fx.readBack(), before, `${what}: read back unchanged`);
  };

  for (const row of rows) {
    t.test(`${row.method} ${row.path} (${row.need}s)`, async (t) => {
      for (const [who, headers, level] of callers) {
        const fx = await row.fixture();
        if (allowed(row, level)) {
          const r = await send(row, fx.path, headers);
          t.equal(r.status, row.ok, `as ${who}: ${row.ok}${r.status === row.ok ? '' : ` (got ${r.status} ${r.text.slice(0, 200)})`}`);
        } else {
          await refused(t, `as ${who}`, fx, () => send(row, fx.path, headers), refusal(level));
        }
      }
      if (!row.bad) return;
      const bad = row.bad;
      const fx = await row.fixture();
      const path = fx.path + (bad.query ?? '');
      const inputs: Array<[string, { body?: unknown; rawBody?: string }]> = [['a bad input', bad.body !== undefined ? { body: bad.body } : {}]];
      if (bad.body !== undefined) inputs.push(['a body that is not JSON', { rawBody: '{"reason": ' }]);
      for (const [what, input] of inputs) {
        for (const [who, headers, level] of callers) {
          const want = allowed(row, level) ? [400, 'FailedValidation'] : refusal(level);
          await refused(t, `${what} as ${who}`, fx, () => send(row, path, headers, input), want);
        }
      }
    });
  }
  t.ok(standing, 'the standing hold of the rows');
});

/**
 * Private channels (groups, DMs, Saved Notes) have no roles, so the server table above cannot express them.
 * Their gates come from the group's member permission value (owner: everything; members: view only plus the
 * value) and from relationships (DMs). Every group operation is run by the owner and by a member whose group
 * value holds the gate (2xx), by a member whose value lacks it (403 naming it), by a non-member (404) and
 * without a session (401); a refused request moves nothing in the log.
 */
t.test('private channels: authorization table', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [owner, holder, plain, outsider] = await Promise.all(Array.from({ length: 4 }, () => signup(s)));
  const befriend = async (a: TestUser, b: TestUser) => {
    await a.api.put(`/users/${b.userId}/friend`);
    const r = await b.api.put(`/users/${a.userId}/friend`);
    if (r.body.relationship !== 'Friend') throw new Error(`befriend: ${r.text}`);
  };
  await befriend(owner!, holder!);
  await befriend(owner!, plain!);
  const g = await owner!.api.post('/channels/create', { name: 'authz', users: [holder!.userId, plain!.userId] });
  const G = `/channels/${g.body._id}`;
  const setValue = async (bits: bigint) => {
    const r = await owner!.api.put(`${G}/permissions/default`, { permissions: Number(bits) });
    if (r.status !== 200) throw new Error(`group value: ${r.text}`);
  };
  const post = async (u: TestUser) => (await u.api.post(`${G}/messages`, { content: 'x' })).body._id as string;
  const anon = client(s);
  const VIEW = P.ViewChannel | P.ReadMessageHistory;

  /** [name, gate, needs, ok status, request]. The request is built fresh per actor. */
  const rows: Array<[string, PermissionName, PermissionName[], number, (u: Api) => Promise<() => Promise<Res>>]> = [
    ['send a message', 'SendMessage', [], 200, async (u) => () => u.post(`${G}/messages`, { content: 'hi' })],
    ['send with an embed', 'SendEmbeds', ['SendMessage'], 200, async (u) => () => u.post(`${G}/messages`, { content: 'e', embeds: [{ title: 't' }] })],
    ['masquerade', 'Masquerade', ['SendMessage'], 200, async (u) => () => u.post(`${G}/messages`, { content: 'm', masquerade: { name: 'M' } })],
    ['react', 'React', [], 204, async (u) => { const m = await post(owner!); return () => u.put(`${G}/messages/${m}/reactions/%F0%9F%91%8D`); }],
    ['pin', 'ManageMessages', [], 204, async (u) => { const m = await post(owner!); return () => u.post(`${G}/messages/${m}/pin`); }],
    ["delete another's message", 'ManageMessages', [], 204, async (u) => { const m = await post(owner!); return () => u.del(`${G}/messages/${m}`); }],
    ['rename the group', 'ManageChannel', [], 200, async (u) => () => u.patch(G, { name: 'renamed' })],
    ['set the group value', 'ManagePermissions', [], 200, async (u) => () => u.put(`${G}/permissions/default`, { permissions: Number(P.SendMessage | P.ManagePermissions | P.InviteOthers) })],
    [
      'add a friend',
      'InviteOthers',
      [],
      204,
      async (u) => {
        const me = [owner!, holder!, plain!].find((x) => x.api === u) ?? owner!;
        const friend = await signup(s);
        await befriend(me, friend);
        return () => u.put(`${G}/recipients/${friend.userId}`);
      },
    ],
  ];
  for (const [what, gate, needs, okStatus, build] of rows) {
    t.test(`${what} — ${gate}`, async (t) => {
      const extra = needs.reduce((v, b) => v | P[b], 0n);
      const cases: Array<[string, Api, bigint, { status: number; type?: string; permission?: string }]> = [
        ['owner', owner!.api, extra, { status: okStatus }],
        ['holder', holder!.api, P[gate] | extra, { status: okStatus }],
        ['plain', plain!.api, extra, { status: 403, type: 'MissingPermission', permission: gate }],
        ['outsider', outsider!.api, P[gate] | extra, { status: 404, type: 'NotFound' }],
        ['anon', anon, P[gate] | extra, { status: 401, type: 'NotAuthenticated' }],
      ];
      for (const [actor, api, value, want] of cases) {
        await setValue(value);
        const call = await build(api);
        const before = await s.store.headPosition();
        const r = await call();
        const got: Record<string, unknown> = { status: r.status };
        if (want.type) got.type = r.body?.type;
        if (want.permission) got.permission = r.body?.permission;
        t.same(got, want, `${actor}`);
        if (r.status >= 400) t.equal(await s.store.headPosition(), before, `${actor}: nothing appended`);
      }
    });
  }

  t.test('owner-only and relationship gates', async (t) => {
    await setValue(VIEW | P.ManageChannel | P.InviteOthers | P.ManagePermissions);
    const byHolder = await holder!.api.del(`${G}/recipients/${plain!.userId}`);
    t.same([byHolder.status, byHolder.body.permission], [403, 'ManageChannel'], 'removing a member: the owner only, whatever the value');
    t.same((await holder!.api.patch(G, { owner: holder!.userId })).body.type, 'NotOwner', 'ownership: the owner only');
    t.same((await outsider!.api.get(`${G}/members`)).status, 404, 'members: a non-member');
    t.same((await anon.get(`${G}/members`)).status, 401);
    t.same((await plain!.api.get(`${G}/members`)).status, 200, 'members: any member (view only)');
    const dm = await owner!.api.get(`/users/${holder!.userId}/dm`);
    t.equal((await outsider!.api.get(`/channels/${dm.body._id}/messages`)).status, 404, 'a DM: a non-recipient');
    t.same((await outsider!.api.get(`/users/${owner!.userId}/dm`)).body.permission, 'SendMessage', 'opening a DM: friends only');
    const notes = await owner!.api.get(`/users/${owner!.userId}/dm`);
    t.equal((await holder!.api.get(`/channels/${notes.body._id}`)).status, 404, 'Saved Notes: nobody else');
  });
});

/**
 * Bot tokens across sanctions (issue 35): a bot's `X-Bot-Token` is accepted while nothing stands against the
 * bot or its owner, and is 401 InvalidSession — on every route, changing nothing — while the bot or its owner is
 * suspended or banned, and once the owner's account is disabled or deleted. A lifted sanction restores it.
 */
t.test('bot tokens across sanctions', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', BOT_LIMIT: '5' });
  const [mod, admin] = await Promise.all([signup(s), signup(s)]);
  for (const [u, role] of [[mod, 'moderator'], [admin, 'admin']] as const) {
    await runAdmin(['grant', u.userId, '--role', role], { store: s.store, print: () => {} });
    await until(`${role} granted`, async () => (await s.readModels.hgetJson('instance:staff', u.userId)) === role);
  }
  const ticket = async (u: TestUser) => ({ headers: { 'X-MFA-Ticket': (await u.api.put('/auth/mfa/ticket', { password: u.password })).body.token as string } });
  type Row = [string, (owner: TestUser, bot: string) => Promise<Res>, ((owner: TestUser, bot: string) => Promise<Res>) | null];
  const rows: Row[] = [
    ['the bot suspended', (_o, b) => mod.api.post(`/admin/users/${b}/suspend`, { reason: 'r' }), (_o, b) => admin.api.post(`/admin/users/${b}/lift`, { reason: 'r' })],
    ['the bot banned', (_o, b) => admin.api.post(`/admin/users/${b}/ban`, { reason: 'r' }), (_o, b) => admin.api.post(`/admin/users/${b}/lift`, { reason: 'r' })],
    ['the owner suspended', (o) => mod.api.post(`/admin/users/${o.userId}/suspend`, { reason: 'r' }), (o) => admin.api.post(`/admin/users/${o.userId}/lift`, { reason: 'r' })],
    ['the owner banned', (o) => admin.api.post(`/admin/users/${o.userId}/ban`, { reason: 'r' }), (o) => admin.api.post(`/admin/users/${o.userId}/lift`, { reason: 'r' })],
    ['the owner disabled', async (o) => o.api.post('/auth/account/disable', undefined, await ticket(o)), null],
    ['the owner deleted', async (o) => o.api.post('/auth/account/delete', undefined, await ticket(o)), null],
  ];
  let n = 0;
  for (const [what, apply, lift] of rows) {
    t.test(what, async (t) => {
      const owner = await signup(s);
      const made = await owner.api.post('/bots/create', { name: `authzbot${process.pid % 1000}x${n++}` });
      const server = await createServer(owner);
      t.equal((await owner.api.post(`/bots/${made.body._id}/invite`, { server: server.id })).status, 204);
      const asBot = (m: string, p: string, body?: unknown) => request(s.apiUrl, m, p, { headers: { 'X-Bot-Token': made.body.token }, ...(body ? { body } : {}), skipOpenApi: true });
      const calls: Array<[string, () => Promise<Res>, number]> = [
        ['GET /users/@me', () => asBot('GET', '/users/@me'), 200],
        ['GET /servers/:id', () => asBot('GET', `/servers/${server.id}`), 200],
        ['POST /channels/:id/messages', () => asBot('POST', `/channels/${server.general}/messages`, { content: 'bot' }), 200],
        ['PATCH /users/@me', () => asBot('PATCH', '/users/@me', { status: { text: 'x' } }), 200],
      ];
      for (const [call, go, ok] of calls) t.equal((await until(`${call} works`, async () => ((await go()).status === ok ? ok : undefined))), ok, `before: ${call} ${ok}`);
      t.ok([200, 204].includes((await apply(owner, made.body._id)).status), `${what}`);
      for (const [call, go] of calls) {
        const head = await s.store.headPosition();
        const r = await until(`${call} refused`, async () => {
          const r = await go();
          return r.status === 401 ? r : undefined;
        });
        t.same([r.status, r.body.type], [401, 'InvalidSession'], `${what}: ${call} 401 InvalidSession`);
        t.equal(await s.store.headPosition(), head, `${what}: ${call} changes nothing`);
      }
      if (lift) {
        t.equal((await lift(owner, made.body._id)).status, 200, 'lifted');
        for (const [call, go, ok] of calls) t.equal((await go()).status, ok, `lifted: ${call} ${ok}`);
      }
    });
  }
});

/**
 * Profiles (issue 35): `GET /users/:id/profile` is the only place a profile is read — self and a mutual
 * connection 200, a stranger and a blocked user 403 ViewProfile — and no path that presents a User carries it.
 */
t.test('profile paths', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [alice, member, stranger, blocked] = await Promise.all([signup(s), signup(s), signup(s), signup(s)]);
  const server = await createServer(alice);
  await join(alice, server.general, member, blocked);
  await alice.api.patch('/users/@me', { profile: { content: 'bio' } });
  await alice.api.post(`/channels/${server.general}/messages`, { content: 'hi' });
  await alice.api.put(`/users/${blocked.userId}/block`);
  const P_ = `/users/${alice.userId}/profile`;
  const route: Array<[string, TestUser, number, string | undefined]> = [
    ['self', alice, 200, undefined],
    ['a member of a shared server', member, 200, undefined],
    ['a stranger', stranger, 403, 'MissingPermission'],
    ['a blocked user', blocked, 403, 'MissingPermission'],
  ];
  for (const [who, u, status, type] of route) {
    const r = await u.api.get(P_);
    t.same([r.status, r.body.type, r.body.permission], [status, type, type ? 'ViewProfile' : undefined], `GET ${P_} as ${who}: ${status}`);
  }
  const paths: Array<[string, TestUser, () => Promise<Res>]> = [
    ['GET /users/:id', stranger, () => stranger.api.get(`/users/${alice.userId}`)],
    ['GET /users/:id', blocked, () => blocked.api.get(`/users/${alice.userId}`)],
    ['GET /users/@me', alice, () => alice.api.get('/users/@me')],
    ['GET /servers/:id/members', blocked, () => blocked.api.get(`/servers/${server.id}/members`)],
    ['GET /channels/:id/messages?include_users', blocked, () => blocked.api.get(`/channels/${server.general}/messages?include_users=true`)],
    ['PUT /users/:id/friend', stranger, () => stranger.api.put(`/users/${alice.userId}/friend`)],
  ];
  for (const [path, , go] of paths) {
    const r = await go();
    t.equal(r.status, 200, `${path}: 200`);
    t.notOk(JSON.stringify(r.body).includes('"profile"'), `${path}: no profile in the User`);
  }
});
