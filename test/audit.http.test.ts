// GET /servers/:id/audit_logs over HTTP: every audited server/channel/role/member/ban/invite action appears once
// with its actor, target, reason (X-Audit-Log-Reason, percent-encoded unicode included) and exact before/after
// changes; non-audited writes add nothing; the header's limit; who may read (owner, ViewAuditLogs through a role
// or the default, 403 without, 404 for non-members); paging and filters over more than 100 entries with exact
// ids; entries identical after a rebuild, also one that starts without the audit projection; a deleted
// server's log dropped.
import t from 'tap';
import type * as Tap from 'tap';
import { Redis } from 'ioredis';
import { PROJECTIONS } from '../projections/index.ts';
import { rebuild } from '../projections/rebuild.ts';
import { auditId, type AuditEntry } from '../src/domain/audit/entries.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import { isUlid, newId, ulidTime } from '../src/ids.ts';
import { createLogger } from '../src/log.ts';
import { DEFAULT_PERMISSION_SERVER, Permission as P } from '../src/permissions/bits.ts';
import { controlKeys, readModelKey, rm } from '../src/readmodel/keys.ts';
import { client, signup, type ReqOptions, type Res, type TestUser } from './helpers/http.ts';
import { uploadImage } from './helpers/messages.ts';
import { checkSchema } from './helpers/openapi.ts';
import { createServer, join, roleWith } from './helpers/servers.ts';
import { startTestService, waitServing, type TestService } from './helpers/service.ts';

type Extra = Omit<ReqOptions, 'body'>;
type Page = { audit_logs: AuditEntry[]; users: Array<{ _id: string }>; members: Array<{ _id: { server: string; user: string } }> };

/** Request options sending `reason` as X-Audit-Log-Reason, percent-encoded. */
const because = (reason: string | undefined): Extra => (reason === undefined ? {} : { headers: { 'X-Audit-Log-Reason': encodeURIComponent(reason) } });

async function eventsAfter(s: TestService, position: bigint | undefined): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  for await (const e of s.store.readAll(position !== undefined ? { after: position } : {})) out.push(e);
  return out;
}

/** The whole audit log of a server as `user` sees it, newest first, paging with `before`. */
async function wholeLog(user: TestUser, serverId: string, query = ''): Promise<AuditEntry[]> {
  const out: AuditEntry[] = [];
  for (;;) {
    const before = out.length ? `&before=${out[out.length - 1]!._id}` : '';
    const r = await user.api.get<Page>(`/servers/${serverId}/audit_logs?limit=100${query}${before}`);
    if (r.status !== 200) throw new Error(`audit log ${r.status} ${r.text}`);
    out.push(...r.body.audit_logs);
    if (r.body.audit_logs.length < 100) return out;
  }
}

/** Every key of a server's audit log in the current generation, with its raw Redis content. */
async function auditKeys(redis: Redis, prefix: string, serverId: string): Promise<Record<string, unknown>> {
  const gen = await redis.get(controlKeys(prefix).generation);
  // The server's audit keys share its shard (src/readmodel/keys.ts `shardOfKey`): that shard's prefix.
  const entries = rm.auditEntries(serverId);
  const gp = readModelKey(prefix, Number(gen), entries).slice(0, -entries.length);
  const out: Record<string, unknown> = {};
  const keys = (await redis.keys(`${gp}audit:${serverId}*`)).sort();
  for (const k of keys) {
    const type = await redis.type(k);
    if (type === 'hash') out[k.slice(gp.length)] = Object.entries(await redis.hgetall(k)).sort();
    else if (type === 'zset') out[k.slice(gp.length)] = await redis.zrange(k, '0', '-1', 'WITHSCORES');
    else if (type === 'set') out[k.slice(gp.length)] = (await redis.smembers(k)).sort();
    else out[k.slice(gp.length)] = type;
  }
  return out;
}

/** Checks the shape every answer must have: entries, and users/members as Stoat's User and Member. */
function checkPage(t: Tap.Test, body: Page): void {
  for (const u of body.users) checkSchema('User', u);
  for (const m of body.members) checkSchema('Member', m);
  for (const e of body.audit_logs) {
    if (!isUlid(e._id) || ulidTime(e._id) !== Date.parse(e.at)) t.fail(`entry id ${e._id} is not a ULID of its time ${e.at}`);
  }
}

t.test('audit log', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [owner, mod, plain, victim, outsider] = await Promise.all([signup(s), signup(s), signup(s), signup(s), signup(s)]);
  const srv = await createServer(owner, 'Audit');
  const S = `/servers/${srv.id}`;
  const log = (u: TestUser, query = '') => u.api.get<Page & { type?: string; permission?: string }>(`${S}/audit_logs${query}`);
  t.same((await log(owner)).body, { audit_logs: [], users: [], members: [] }, 'a new server has an empty log (server creation is not audited)');
  await join(owner, srv.general, mod, plain, victim);
  const modRole = await roleWith(owner, srv.id, P.ViewAuditLogs | P.KickMembers | P.BanMembers | P.ManageNicknames, [mod], 'Mod');

  type Expected = Omit<AuditEntry, '_id' | 'at' | 'server' | 'reason'>;
  /**
   * Runs one write that must add exactly one entry; checks the events it appended carry the reason, and the
   * entry: everything but `_id`/`at` as expected, and `_id`/`at` derived from one of those events.
   */
  const auditedIn = (serverId: string) => async function audited(
    t: Tap.Test,
    reason: string | undefined,
    run: (extra: Extra) => Promise<Res>,
    status: number,
    expectedOf: Expected | ((res: Res) => Expected),
  ): Promise<{ res: Res; entry: AuditEntry; page: Page }> {
    const log = (u: TestUser, query = '') => u.api.get<Page>(`/servers/${serverId}/audit_logs${query}`);
    const prev = (await log(owner, '?limit=1')).body.audit_logs[0]!._id;
    const from = await s.store.headPosition();
    const res = await run(because(reason));
    const expected = typeof expectedOf === 'function' ? expectedOf(res) : expectedOf;
    t.equal(res.status, status, `${expected.action}: ${res.status} ${res.text}`);
    const events = await eventsAfter(s, from);
    t.ok(events.length > 0, 'events were appended');
    t.same(events.map((e) => e.metadata.reason), events.map(() => reason), 'every appended event carries the reason');
    const page = await log(owner, `?after=${prev}`);
    t.equal(page.status, 200);
    checkPage(t, page.body);
    t.equal(page.body.audit_logs.length, 1, `${expected.action}: exactly one new entry`);
    const entry = page.body.audit_logs[0]!;
    const { _id, at, ...rest } = entry;
    t.strictSame(rest, { server: serverId, ...expected, ...(reason !== undefined ? { reason } : {}) }, `${expected.action}: the entry`);
    t.ok(events.some((e) => auditId(e.metadata.at, e.id) === _id && e.metadata.at === at), 'id and time come from the event');
    return { res, entry, page: page.body };
  };
  const audited = auditedIn(srv.id);

  t.test('every audited action, with actor, target, reason and exact changes', async (t) => {
    const ownerId = owner.userId;
    const G = srv.general;
    await audited(t, 'rename ✏️ «répété» 100%', (x) => owner.api.patch(S, { name: 'Renamed', description: 'first' }, x), 200, {
      action: 'ServerEdit',
      actor: ownerId,
      target: { type: 'Server', id: srv.id },
      changes: { name: { before: 'Audit', after: 'Renamed' }, description: { after: 'first' } },
    });
    await audited(t, undefined, (x) => owner.api.patch(S, { system_messages: { user_joined: G }, remove: ['Description'] }, x), 200, {
      action: 'ServerEdit',
      actor: ownerId,
      target: { type: 'Server', id: srv.id },
      changes: { description: { before: 'first' }, system_messages: { after: { user_joined: G } } },
    });
    await audited(t, 'categories', (x) => owner.api.patch(S, { categories: [{ id: 'cat', title: 'Cat', channels: [G] }] }, x), 200, {
      action: 'ServerEdit',
      actor: ownerId,
      target: { type: 'Server', id: srv.id },
      changes: { categories: { after: [{ id: 'cat', title: 'Cat', channels: [G] }] } },
    });
    await audited(t, 'categories again', (x) => owner.api.patch(S, { categories: [{ id: 'cat', title: 'Other', channels: [] }] }, x), 200, {
      action: 'ServerEdit',
      actor: ownerId,
      target: { type: 'Server', id: srv.id },
      changes: { categories: { before: [{ id: 'cat', title: 'Cat', channels: [G] }], after: [{ id: 'cat', title: 'Other', channels: [] }] } },
    });
    const lessDefault = Number(DEFAULT_PERMISSION_SERVER & ~P.React);
    await audited(t, 'no reactions', (x) => owner.api.put(`${S}/permissions/default`, { permissions: lessDefault }, x), 200, {
      action: 'ServerDefaultPermissionsEdit',
      actor: ownerId,
      target: { type: 'Server', id: srv.id },
      changes: { default_permissions: { before: 0x11ee701400, after: lessDefault } },
    });

    const made = await audited(t, 'a channel', (x) => owner.api.post(`${S}/channels`, { name: 'logs', description: 'about' }, x), 200, (res) => ({
      action: 'ChannelCreate',
      actor: ownerId,
      target: { type: 'Channel', id: res.body._id },
      changes: { name: { after: 'logs' }, description: { after: 'about' }, nsfw: { after: false } },
    }));
    const C = made.res.body._id as string;

    await audited(t, 'tidy', (x) => owner.api.patch(`/channels/${C}`, { name: 'logs-2', nsfw: true, remove: ['Description'] }, x), 200, {
      action: 'ChannelEdit',
      actor: ownerId,
      target: { type: 'Channel', id: C },
      changes: { name: { before: 'logs', after: 'logs-2' }, description: { before: 'about' }, nsfw: { before: false, after: true } },
    });
    const react = Number(P.React);
    const sendReact = Number(P.React | P.SendMessage);
    await audited(t, 'quiet', (x) => owner.api.put(`/channels/${C}/permissions/default`, { permissions: { allow: 0, deny: react } }, x), 200, {
      action: 'ChannelDefaultPermissionsEdit',
      actor: ownerId,
      target: { type: 'Channel', id: C },
      changes: { default_permissions: { after: { a: 0, d: react } } },
    });
    await audited(t, 'quieter', (x) => owner.api.put(`/channels/${C}/permissions/default`, { permissions: { allow: 0, deny: sendReact } }, x), 200, {
      action: 'ChannelDefaultPermissionsEdit',
      actor: ownerId,
      target: { type: 'Channel', id: C },
      changes: { default_permissions: { before: { a: 0, d: react }, after: { a: 0, d: sendReact } } },
    });

    const roleMade = await audited(t, 'helpers', (x) => owner.api.post(`${S}/roles`, { name: 'Helpers', colour: '#abc', hoist: true }, x), 200, (res) => ({
      action: 'RoleCreate',
      actor: ownerId,
      target: { type: 'Role', id: res.body.id },
      changes: { name: { after: 'Helpers' }, colour: { after: '#abc' }, hoist: { after: true }, rank: { after: 1 }, permissions: { after: { a: 0, d: 0 } } },
    }));
    const H = roleMade.res.body.id as string;
    t.equal(roleMade.res.body.role.rank, 1, 'below the Mod role');
    const send = Number(P.SendMessage);
    await audited(t, 'helpers may talk', (x) => owner.api.put(`/channels/${C}/permissions/${H}`, { permissions: { allow: send, deny: 0 } }, x), 200, {
      action: 'ChannelRolePermissionsEdit',
      actor: ownerId,
      target: { type: 'Channel', id: C },
      changes: { permissions: { after: { a: send, d: 0 } } },
      context: { role: H },
    });
    await audited(t, 'helpers may not', (x) => owner.api.put(`/channels/${C}/permissions/${H}`, { permissions: { allow: 0, deny: send } }, x), 200, {
      action: 'ChannelRolePermissionsEdit',
      actor: ownerId,
      target: { type: 'Channel', id: C },
      changes: { permissions: { before: { a: send, d: 0 }, after: { a: 0, d: send } } },
      context: { role: H },
    });
    await audited(t, 'rename role', (x) => owner.api.patch(`${S}/roles/${H}`, { name: 'Helpers 2', hoist: false, remove: ['Colour'] }, x), 200, {
      action: 'RoleEdit',
      actor: ownerId,
      target: { type: 'Role', id: H },
      changes: { name: { before: 'Helpers', after: 'Helpers 2' }, colour: { before: '#abc' }, hoist: { before: true, after: false } },
    });
    // Bit 40 and bit 29: a value above 32 bits survives exactly.
    const big = { a: Number(P.ViewAuditLogs), d: react };
    await audited(t, 'helpers read the log', (x) => owner.api.put(`${S}/permissions/${H}`, { permissions: { allow: big.a, deny: big.d } }, x), 200, {
      action: 'RolePermissionsEdit',
      actor: ownerId,
      target: { type: 'Role', id: H },
      changes: { permissions: { before: { a: 0, d: 0 }, after: big } },
    });
    t.equal(big.a, 2 ** 40);
    await audited(t, 'reorder', (x) => owner.api.patch(`${S}/roles/ranks`, { ranks: [H, modRole] }, x), 200, {
      action: 'RolesReorder',
      actor: ownerId,
      target: { type: 'Server', id: srv.id },
      changes: { ranks: { before: [modRole, H], after: [H, modRole] } },
    });
    await audited(t, 'reorder back', (x) => owner.api.patch(`${S}/roles/ranks`, { ranks: [modRole, H] }, x), 200, {
      action: 'RolesReorder',
      actor: ownerId,
      target: { type: 'Server', id: srv.id },
      changes: { ranks: { before: [H, modRole], after: [modRole, H] } },
    });

    const until = new Date(Date.now() + 3_600_000).toISOString();
    const V = victim.userId;
    await audited(t, 'sanction', (x) => owner.api.patch(`${S}/members/${V}`, { nickname: 'nick', roles: [H], timeout: until, can_publish: false, can_receive: false }, x), 200, {
      action: 'MemberEdit',
      actor: ownerId,
      target: { type: 'User', id: V },
      changes: {
        nickname: { after: 'nick' },
        roles: { before: [], after: [H] },
        timeout: { after: until },
        can_publish: { before: true, after: false },
        can_receive: { before: true, after: false },
      },
    });
    await audited(t, 'lifted', (x) => owner.api.patch(`${S}/members/${V}`, { remove: ['Nickname', 'Roles', 'Timeout'], can_publish: true }, x), 200, {
      action: 'MemberEdit',
      actor: ownerId,
      target: { type: 'User', id: V },
      changes: { nickname: { before: 'nick' }, roles: { before: [H], after: [] }, timeout: { before: until }, can_publish: { before: false, after: true } },
    });
    await audited(t, undefined, (x) => mod.api.patch(`${S}/members/${V}`, { nickname: 'by mod' }, x), 200, {
      action: 'MemberEdit',
      actor: mod.userId,
      target: { type: 'User', id: V },
      changes: { nickname: { after: 'by mod' } },
    });
    const joinedAt = (await owner.api.get(`${S}/members/${V}`)).body.joined_at as string;
    const kick = await audited(t, 'kick 🥾', (x) => mod.api.del(`${S}/members/${V}`, undefined, x), 204, {
      action: 'MemberKick',
      actor: mod.userId,
      target: { type: 'User', id: V },
      changes: { nickname: { before: 'by mod' }, roles: { before: [] }, joined_at: { before: joinedAt } },
    });
    t.same(kick.page.users.map((u) => u._id).sort(), [mod.userId, V].sort(), 'users: the actor and the target');
    t.same(kick.page.members.map((m) => m._id.user), [mod.userId], 'members: only those still members');

    await audited(t, 'ban', (x) => mod.api.put(`${S}/bans/${victim.userId}`, { reason: 'spam' }, x), 200, {
      action: 'BanCreate',
      actor: mod.userId,
      target: { type: 'User', id: victim.userId },
      changes: { reason: { after: 'spam' } },
    });
    await audited(t, 'forgiven', (x) => owner.api.del(`${S}/bans/${victim.userId}`, undefined, x), 204, {
      action: 'BanDelete',
      actor: ownerId,
      target: { type: 'User', id: victim.userId },
      changes: { reason: { before: 'spam' } },
    });
    await audited(t, 'ban without a reason', (x) => owner.api.put(`${S}/bans/${victim.userId}`, {}, x), 200, {
      action: 'BanCreate',
      actor: ownerId,
      target: { type: 'User', id: victim.userId },
      changes: {},
    });
    await audited(t, 'unban', (x) => owner.api.del(`${S}/bans/${victim.userId}`, undefined, x), 204, {
      action: 'BanDelete',
      actor: ownerId,
      target: { type: 'User', id: victim.userId },
      changes: {},
    });

    const inv = await audited(t, 'invite', (x) => owner.api.post(`/channels/${G}/invites`, undefined, x), 200, (res) => ({
      action: 'InviteCreate',
      actor: ownerId,
      target: { type: 'Invite', id: res.body._id },
      changes: { channel: { after: G }, creator: { after: ownerId } },
    }));
    const code = inv.res.body._id as string;
    await audited(t, 'revoke', (x) => owner.api.del(`/invites/${code}`, undefined, x), 204, {
      action: 'InviteDelete',
      actor: ownerId,
      target: { type: 'Invite', id: code },
      changes: { channel: { before: G }, creator: { before: ownerId } },
    });
    await audited(t, 'role gone', (x) => owner.api.del(`${S}/roles/${H}`, undefined, x), 204, {
      action: 'RoleDelete',
      actor: ownerId,
      target: { type: 'Role', id: H },
      changes: { name: { before: 'Helpers 2' }, hoist: { before: false }, rank: { before: 1 }, permissions: { before: big } },
    });
    await audited(t, 'channel gone', (x) => owner.api.del(`/channels/${C}`, undefined, x), 204, {
      action: 'ChannelDelete',
      actor: ownerId,
      target: { type: 'Channel', id: C },
      // The deleted role's override left the channel with the role.
      changes: { name: { before: 'logs-2' }, nsfw: { before: true }, default_permissions: { before: { a: 0, d: sendReact } }, role_permissions: { before: {} } },
    });
    t.equal((await owner.api.get(`/channels/${C}`)).status, 404, 'really deleted');
  });

  t.test('messages, reactions, pins and emoji: moderation is audited, one\'s own actions are not', async (t) => {
    const m = await createServer(owner, 'Messages');
    const MS = `/servers/${m.id}`;
    const G = m.general;
    await join(owner, G, mod, plain);
    await roleWith(owner, m.id, P.ManageMessages | P.ManageCustomisation | P.ViewAuditLogs, [mod], 'Moderator');
    const audit = auditedIn(m.id);
    const newest = async () => (await owner.api.get<Page>(`${MS}/audit_logs?limit=1`)).body.audit_logs[0]!._id;
    const send = async (u: TestUser, content: string) => {
      const r = await u.api.post(`/channels/${G}/messages`, { content });
      if (r.status !== 200) throw new Error(`send ${r.status} ${r.text}`);
      return r.body._id as string;
    };
    const M = (id: string) => `/channels/${G}/messages/${id}`;
    const thumbs = encodeURIComponent('👍');
    const fire = encodeURIComponent('🔥');

    // The author's own actions: no entry.
    const quiet = await newest();
    const own = await send(plain, 'hello');
    t.equal((await plain.api.put(`${M(own)}/reactions/${fire}`)).status, 204);
    t.equal((await plain.api.del(`${M(own)}/reactions/${fire}`)).status, 204, 'removing one\'s own reaction');
    t.equal((await plain.api.del(M(own))).status, 204, 'deleting one\'s own message');
    t.equal(await newest(), quiet, 'sending, reacting, unreacting and deleting one\'s own: nothing audited');

    const bad = await send(plain, 'bad words');
    const del = await audit(t, 'rule 3 ⚖️', (x) => mod.api.del(M(bad), undefined, x), 204, {
      action: 'MessageDelete',
      actor: mod.userId,
      target: { type: 'Message', id: bad },
      changes: { content: { before: 'bad words' } },
      context: { channel: G, author: plain.userId },
    });
    t.same(del.page.users.map((u) => u._id).sort(), [mod.userId, plain.userId].sort(), 'users: the moderator and the author');
    t.same(del.page.members.map((x) => x._id.user).sort(), [mod.userId, plain.userId].sort());

    const pinned = await send(plain, 'read the rules');
    await audit(t, 'important', (x) => mod.api.post(`${M(pinned)}/pin`, undefined, x), 204, {
      action: 'MessagePin',
      actor: mod.userId,
      target: { type: 'Message', id: pinned },
      changes: { pinned: { before: false, after: true } },
      context: { channel: G, author: plain.userId },
    });
    await audit(t, undefined, (x) => mod.api.del(`${M(pinned)}/pin`, undefined, x), 204, {
      action: 'MessageUnpin',
      actor: mod.userId,
      target: { type: 'Message', id: pinned },
      changes: { pinned: { before: true, after: false } },
      context: { channel: G, author: plain.userId },
    });

    for (const [u, emoji] of [[plain, thumbs], [owner, thumbs], [plain, fire]] as const) t.equal((await u.api.put(`${M(pinned)}/reactions/${emoji}`)).status, 204);
    await audit(t, 'not that one', (x) => mod.api.del(`${M(pinned)}/reactions/${thumbs}?user_id=${plain.userId}`, undefined, x), 204, {
      action: 'ReactionRemove',
      actor: mod.userId,
      target: { type: 'Message', id: pinned },
      changes: { reactions: { before: { '👍': [plain.userId, owner.userId] }, after: { '👍': [owner.userId] } } },
      context: { channel: G, author: plain.userId, emoji: '👍', user: plain.userId },
    });
    await audit(t, 'no thumbs', (x) => mod.api.del(`${M(pinned)}/reactions/${thumbs}?remove_all=true`, undefined, x), 204, {
      action: 'ReactionRemove',
      actor: mod.userId,
      target: { type: 'Message', id: pinned },
      changes: { reactions: { before: { '👍': [owner.userId] }, after: {} } },
      context: { channel: G, author: plain.userId, emoji: '👍' },
    });
    await audit(t, 'clean slate', (x) => mod.api.del(`${M(pinned)}/reactions`, undefined, x), 204, {
      action: 'ReactionsClear',
      actor: mod.userId,
      target: { type: 'Message', id: pinned },
      changes: { reactions: { before: { '🔥': [plain.userId] }, after: {} } },
      context: { channel: G, author: plain.userId },
    });

    const a1 = await send(plain, 'spam 1');
    const a2 = await send(plain, 'spam 2');
    const a3 = await send(owner, 'caught in it');
    const notAMessage = newId(); // recent (a bulk delete refuses ids older than 7 days) but no message
    await audit(t, 'raid cleanup', (x) => mod.api.del(`/channels/${G}/messages/bulk`, { ids: [a1, notAMessage, a2, a3] }, x), 204, {
      action: 'MessageBulkDelete',
      actor: mod.userId,
      target: { type: 'Channel', id: G },
      changes: { messages: { before: [{ _id: a1, author: plain.userId }, { _id: a2, author: plain.userId }, { _id: a3, author: owner.userId }] } },
    });
    const single = await send(owner, 'alone');
    await audit(t, 'one', (x) => mod.api.del(`/channels/${G}/messages/bulk`, { ids: [single] }, x), 204, {
      action: 'MessageBulkDelete',
      actor: mod.userId,
      target: { type: 'Channel', id: G },
      changes: { messages: { before: [{ _id: single, author: owner.userId }] } },
    });
    const leftovers = await s.redis.keys(`${s.readModels.key(rm.auditIndex(m.id))}:bulk:*`);
    t.same(leftovers, [], 'no bulk bookkeeping left behind');

    const E = await uploadImage(s, mod, 'emojis'); // an emoji is made from its `emojis` upload
    await audit(t, 'new emoji', (x) => mod.api.put(`/custom/emoji/${E}`, { name: 'party', parent: { type: 'Server', id: m.id }, nsfw: true }, x), 200, {
      action: 'EmojiCreate',
      actor: mod.userId,
      target: { type: 'Emoji', id: E },
      changes: { name: { after: 'party' }, creator_id: { after: mod.userId }, animated: { after: false }, nsfw: { after: true } },
    });
    await audit(t, 'unfitting', (x) => owner.api.del(`/custom/emoji/${E}`, undefined, x), 204, {
      action: 'EmojiDelete',
      actor: owner.userId,
      target: { type: 'Emoji', id: E },
      changes: { name: { before: 'party' }, creator_id: { before: mod.userId }, animated: { before: false }, nsfw: { before: true } },
    });
    const actions = (await wholeLog(owner, m.id)).map((e) => e.action);
    t.same(actions.slice(0, 11), ['EmojiDelete', 'EmojiCreate', 'MessageBulkDelete', 'MessageBulkDelete', 'ReactionsClear', 'ReactionRemove', 'ReactionRemove', 'MessageUnpin', 'MessagePin', 'MessageDelete', 'MemberEdit'], 'the whole story, newest first');
    t.equal((await owner.api.get<Page>(`${MS}/audit_logs?action=MessageBulkDelete`)).body.audit_logs.length, 2, 'filter by a message action');
  });

  t.test('writes that are not audited add no entry but still carry the reason', async (t) => {
    const newest = async () => (await log(owner, '?limit=1')).body.audit_logs[0]!._id;
    const before = await newest();
    const code = (await owner.api.get(`${S}/invites`)).body[0]._id as string;
    const from = await s.store.headPosition();
    t.equal((await outsider.api.post(`/invites/${code}`, undefined, because('joining'))).status, 200, 'join');
    t.equal((await outsider.api.del(S, undefined, because('leaving'))).status, 204, 'leave');
    t.equal((await outsider.api.patch('/users/@me', { display_name: 'Newcomer' }, because('new name'))).status, 200, 'user edit');
    t.equal((await outsider.api.post('/servers/create', { name: 'Elsewhere' }, because('mine'))).status, 200, 'server create');
    const anon = client(s);
    const email = `audit.${Date.now()}@example.test`;
    t.equal((await anon.post('/auth/account/create', { email, password: 'correct horse battery' }, because('sign-up'))).status, 204, 'account create');
    const login = await anon.post('/auth/session/login', { email, password: 'correct horse battery' }, because('log-in'));
    t.equal(login.status, 200, 'login');
    t.equal((await client(s, login.body.token).post('/auth/session/logout', undefined, because('log-out'))).status, 204, 'logout');
    const all = await eventsAfter(s, from);
    // The per-user server-limit slots (`ServerSlotTaken`) are appended with the join and the create.
    t.same(all.filter((e) => e.type === 'ServerSlotTaken').map((e) => e.metadata.reason), ['joining', 'mine'], 'the server-limit slots carry the reason too');
    const events = all.filter((e) => e.type !== 'ServerSlotTaken');
    t.same(
      events.map((e) => [e.type, e.metadata.reason]),
      [
        ['MemberJoined', 'joining'],
        ['MemberLeft', 'leaving'],
        ['UserEdited', 'new name'],
        ['ServerCreated', 'mine'],
        ['MemberJoined', 'mine'],
        ...events.slice(5).map((e) => [e.type, ({ SessionCreated: 'log-in', SessionRevoked: 'log-out' } as Record<string, string>)[e.type] ?? 'sign-up']),
      ],
      'each event carries the reason of its request',
    );
    t.same(events.slice(5).map((e) => e.type).filter((x) => x === 'SessionCreated' || x === 'SessionRevoked'), ['SessionCreated', 'SessionRevoked'], 'the account events are there');
    t.ok(events.length > 7, 'account creation appended its events');
    t.equal(await newest(), before, 'no new entry');
  });

  t.test('X-Audit-Log-Reason: up to 512 characters after percent-decoding', async (t) => {
    const max = '🚫'.repeat(512);
    const ok = await owner.api.patch(S, { name: 'Limit' }, because(max));
    t.equal(ok.status, 200, '512 code points (1024 UTF-16 units) pass');
    t.equal((await log(owner, '?limit=1')).body.audit_logs[0]!.reason, max, 'stored and shown whole');
    const head = await s.store.headPosition();
    const entries = (await wholeLog(owner, srv.id)).length;
    for (const [what, header] of [
      ['513 emoji', encodeURIComponent('🚫'.repeat(513))],
      ['513 ASCII', 'a'.repeat(513)],
      ['bad percent-encoding', '%E0%A4%A'],
    ] as const) {
      const r = await owner.api.patch(S, { name: 'Too long' }, { headers: { 'X-Audit-Log-Reason': header } });
      t.same([r.status, r.body.type], [400, 'FailedValidation'], what);
      const del = await owner.api.del(`${S}/members/${plain.userId}`, undefined, { headers: { 'X-Audit-Log-Reason': header } });
      t.same([del.status, del.body.type], [400, 'FailedValidation'], `${what}: a kick is refused too`);
    }
    t.equal(await s.store.headPosition(), head, 'nothing appended');
    t.equal((await owner.api.get(S)).body.name, 'Limit', 'nothing changed');
    t.equal((await owner.api.get(`${S}/members/${plain.userId}`)).status, 200, 'still a member');
    t.equal((await wholeLog(owner, srv.id)).length, entries, 'no entry');
  });

  t.test('who may read: the owner, ViewAuditLogs (bit 40) through a role or the default; 403 without; 404 for non-members', async (t) => {
    t.equal((await log(owner)).status, 200, 'owner');
    const viaRole = await log(mod);
    t.equal(viaRole.status, 200, 'ViewAuditLogs through a role');
    t.same(viaRole.body.audit_logs.map((e) => e._id), (await log(owner)).body.audit_logs.map((e) => e._id), 'the same log');
    const denied = await log(plain);
    t.same([denied.status, denied.body], [403, { type: 'MissingPermission', permission: 'ViewAuditLogs', location: '/servers/:server_id/audit_logs' }]);
    t.same([(await log(outsider)).status, (await log(outsider)).body.type], [404, 'NotFound'], 'a non-member');
    t.same([(await log(outsider, '?limit=0')).status], [400], 'validation comes before the lookup');
    t.equal((await outsider.api.get(`/servers/${'0'.repeat(26)}/audit_logs`)).status, 404, 'no such server');
    t.equal((await client(s).get(`${S}/audit_logs`)).status, 401, 'no session');

    // Every other bit of the Mod role, but not bit 40: 403.
    const allBut = P.KickMembers | P.BanMembers | P.ManageNicknames | P.ManageServer | P.ManageRole | P.ManagePermissions | P.MentionRoles | P.BypassSlowmode;
    t.equal((await owner.api.put(`${S}/permissions/${modRole}`, { permissions: { allow: Number(allBut), deny: 0 } })).status, 200);
    t.same([(await log(mod)).status, (await log(mod)).body.permission], [403, 'ViewAuditLogs'], 'bits 38 and 39 are not bit 40');
    t.equal((await owner.api.put(`${S}/permissions/${modRole}`, { permissions: { allow: Number(allBut | P.ViewAuditLogs), deny: 0 } })).status, 200);
    t.equal((await log(mod)).status, 200, 'bit 40 back');

    const dflt = Number((await owner.api.get(S)).body.default_permissions);
    t.equal((await owner.api.put(`${S}/permissions/default`, { permissions: Number(BigInt(dflt) | P.ViewAuditLogs) })).status, 200);
    t.equal((await log(plain)).status, 200, 'through the default permissions');
    t.equal((await owner.api.put(`${S}/permissions/default`, { permissions: dflt })).status, 200);
    t.equal((await log(plain)).status, 403);

    const timeout = new Date(Date.now() + 3_600_000).toISOString();
    t.equal((await owner.api.patch(`${S}/members/${mod.userId}`, { timeout })).status, 200);
    t.same([(await log(mod)).status, (await log(mod)).body.permission], [403, 'ViewAuditLogs'], 'a timed-out member keeps only view and history');
    t.equal((await owner.api.patch(`${S}/members/${mod.userId}`, { remove: ['Timeout'] })).status, 200);
    t.equal((await log(mod)).status, 200);
  });

  t.test('paging and filters over more than 100 entries', async (t) => {
    const p = await createServer(owner, 'Paging');
    const PS = `/servers/${p.id}`;
    // The moderator of the first server is staff here; the outsider never acts here.
    const staff = mod;
    await join(owner, p.general, staff);
    await roleWith(owner, p.id, P.ViewAuditLogs | P.ManageServer | P.ManageRole, [staff], 'Staff');
    const target = (await owner.api.post(`${PS}/roles`, { name: 'target' })).body.id as string;
    const N = 102;
    type Done = { actor: string; action: 'ServerEdit' | 'RoleEdit'; name: string };
    const done: Done[] = [];
    for (let i = 0; i < N; i++) {
      const u = i % 3 === 0 ? staff : owner;
      const name = `n${i}`;
      const role = i % 4 === 0;
      const r = role ? await u.api.patch(`${PS}/roles/${target}`, { name }) : await u.api.patch(PS, { name });
      if (r.status !== 200) throw new Error(`${i}: ${r.status} ${r.text}`);
      done.push({ actor: u.userId, action: role ? 'RoleEdit' : 'ServerEdit', name });
    }
    // What the log must be, newest first: one id per audited event of the server's stream, from the event itself.
    const events: RecordedEvent[] = [];
    for await (const e of s.store.readAll()) if (e.stream === `server-${p.id}`) events.push(e);
    const auditedTypes = new Set(['RoleCreated', 'RolePermissionsSet', 'MemberEdited', 'InviteCreated', 'RoleEdited', 'ServerEdited']);
    const expected = events.filter((e) => auditedTypes.has(e.type)).map((e) => auditId(e.metadata.at, e.id)).reverse();
    t.ok(expected.length > 100, `${expected.length} entries`);
    const full = await wholeLog(owner, p.id);
    t.same(full.map((e) => e._id), expected, 'the whole log: exact ids, newest first');
    t.ok(full.every((e, i) => i === 0 || full[i - 1]!._id > e._id), 'ids strictly decreasing');
    t.same(
      full.slice(0, N).map((e) => ({ actor: e.actor, action: e.action, name: (e.changes.name as { after: string }).after })),
      [...done].reverse(),
      `the newest ${N} are the actions, in reverse order, with their actors`,
    );
    const ids = (es: AuditEntry[]) => es.map((e) => e._id);
    const get = async (q: string) => {
      const r = await owner.api.get<Page>(`${PS}/audit_logs${q}`);
      t.equal(r.status, 200, q);
      checkPage(t, r.body);
      return r.body;
    };

    t.same(ids((await get('')).audit_logs), expected.slice(0, 50), 'default limit 50');
    t.same(ids((await get('?limit=1')).audit_logs), expected.slice(0, 1), 'limit 1');
    const page1 = await get('?limit=100');
    t.same(ids(page1.audit_logs), expected.slice(0, 100), 'limit 100');
    const page2 = await get(`?limit=100&before=${expected[99]}`);
    t.same(ids(page2.audit_logs), expected.slice(100), 'before: the rest');
    t.same(ids((await get(`?before=${expected[expected.length - 1]}`)).audit_logs), [], 'before the oldest: nothing');
    const oldest = expected[expected.length - 1]!;
    t.same(ids((await get(`?limit=10&after=${oldest}`)).audit_logs), expected.slice(-11, -1), 'after: the 10 right after, newest first');
    t.same(ids((await get(`?after=${expected[0]}`)).audit_logs), [], 'after the newest: nothing');
    // Paging towards newer entries with `after` gives the whole log too.
    const forward: string[] = [];
    let cursor = oldest;
    for (;;) {
      const page = ids((await get(`?limit=100&after=${cursor}`)).audit_logs);
      if (page.length === 0) break;
      forward.unshift(...page);
      cursor = page[0]!;
    }
    t.same(forward, expected.slice(0, -1), 'after-paging covers everything newer than the start');
    t.same(ids((await get(`?before=${expected[10]}&after=${expected[20]}`)).audit_logs), expected.slice(11, 20), 'between before and after');
    t.same(ids((await get(`?limit=3&before=${expected[10]}&after=${expected[20]}`)).audit_logs), expected.slice(11, 14), 'between, limited: the newest');

    const byId = new Map(full.map((e) => [e._id, e]));
    const only = (f: (e: AuditEntry) => boolean) => expected.filter((id) => f(byId.get(id)!));
    const staffOnly = await get(`?user=${staff.userId}&limit=100`);
    t.same(ids(staffOnly.audit_logs), only((e) => e.actor === staff.userId), 'user: only that actor');
    t.equal(staffOnly.audit_logs.length, 34);
    t.same(staffOnly.users.map((u) => u._id), [staff.userId], 'users: the actor');
    t.same(staffOnly.members.map((m) => m._id.user), [staff.userId], 'members: the actor');
    const roleEdits = await get('?action=RoleEdit&limit=100');
    t.same(ids(roleEdits.audit_logs), only((e) => e.action === 'RoleEdit'), 'action: only that action');
    t.equal(roleEdits.audit_logs.length, 26);
    const both = only((e) => e.action === 'RoleEdit' && e.actor === staff.userId);
    t.same(ids((await get(`?action=RoleEdit&user=${staff.userId}`)).audit_logs), both, 'user and action');
    t.equal(both.length, 9);
    const ownerServerEdits = only((e) => e.action === 'ServerEdit' && e.actor === owner.userId);
    t.same(ids((await get(`?action=ServerEdit&user=${owner.userId}&limit=5&before=${ownerServerEdits[4]}`)).audit_logs), ownerServerEdits.slice(5, 10), 'filtered paging');
    t.same(ids((await get(`?user=${outsider.userId}`)).audit_logs), [], 'an actor with no entries');
    t.same(ids((await get('?action=BanCreate')).audit_logs), [], 'an action with no entries');

    for (const q of ['?limit=0', '?limit=101', '?limit=-1', '?limit=x', '?limit=1.5', '?before=nope', '?after=0123', '?user=someone', '?action=Nope', '?action=serveredit', '?limit=1&limit=2']) {
      const r = await owner.api.get(`${PS}/audit_logs${q}`);
      t.same([r.status, r.body.type], [400, 'FailedValidation'], `${q} → 400`);
    }
  });

  t.test('a rebuild gives byte-identical entries, also when the projection was added after the facts', async (t) => {
    const redis = new Redis(s.config.redisUrl);
    t.teardown(() => redis.disconnect());
    const servers = [srv.id, ...(await redis.smembers(s.readModels.key(rm.userServers(owner.userId))))];
    const snapshot = async () => {
      const out: Record<string, unknown> = {};
      for (const id of new Set(servers)) {
        out[id] = { keys: await auditKeys(redis, s.prefix, id), api: (await owner.api.get(`/servers/${id}/audit_logs?limit=100`)).text };
      }
      return out;
    };
    const live = await snapshot();
    t.ok(((live[srv.id] as { keys: Record<string, unknown> }).keys[rm.auditEntries(srv.id)] as unknown[]).length > 30, 'a real log');
    const rebuildWith = async (projections: typeof PROJECTIONS) => {
      await rebuild({ store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions, projections, log: createLogger('silent') });
      await waitServing(s);
    };
    // A deployment from before the audit log: the same history, read models without it.
    await rebuildWith(PROJECTIONS.filter((p) => p.name !== 'audit'));
    t.same((await log(owner)).body.audit_logs, [], 'no audit log without the projection');
    t.equal((await owner.api.get(S)).body.name, 'Limit', 'the rest is there');
    await rebuildWith(PROJECTIONS);
    t.same(await snapshot(), live, 'adding the projection and rebuilding: the same keys, the same bytes, the same answers');
  });

  t.test("a deleted server's log is dropped with it", async (t) => {
    const d = await createServer(owner, 'Doomed');
    t.equal((await owner.api.patch(`/servers/${d.id}`, { name: 'Doomed 2' })).status, 200);
    const redis = new Redis(s.config.redisUrl);
    t.teardown(() => redis.disconnect());
    t.ok(Object.keys(await auditKeys(redis, s.prefix, d.id)).length >= 4, 'entries, index, per-user and per-action indexes');
    t.equal((await owner.api.del(`/servers/${d.id}`)).status, 204);
    t.same(await auditKeys(redis, s.prefix, d.id), {}, 'no key left');
    t.equal((await owner.api.get(`/servers/${d.id}/audit_logs`)).status, 404);
  });
});
