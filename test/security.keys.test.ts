/**
 * Attack review item 10: built-in property names never pass as ids. Lookups keyed by client-chosen strings
 * (sessions, reactions, roles, members, overrides, replies, files) use own-property checks, so
 * `constructor`, `toString`, `__proto__` and `hasOwnProperty` are unknown keys like any other: 404 / 400,
 * never 200 and never 500; a `__proto__` key written into a map never replaces its prototype.
 */
import t from 'tap';
import { decideRevokeSession } from '../src/domain/account/commands.ts';
import { evolveAccount, type AccountState } from '../src/domain/account/state.ts';
import { decideUnreact, decideReact } from '../src/domain/message/reactions.ts';
import { evolveMessage, type MessageState } from '../src/domain/message/state.ts';
import { decideSendMessage, mentionsOf, type SendFacts } from '../src/domain/message/sendMessage.ts';
import { channelOverrides } from '../src/domain/server/permissions.ts';
import { defined } from '../src/http/schemas.ts';
import { own, setOwn } from '../src/own.ts';
import { DEFAULT_PERMISSION_SERVER, Permission as P } from '../src/permissions/bits.ts';
import { startTestService } from './helpers/service.ts';
import { request, signup } from './helpers/http.ts';
import { createServer, join } from './helpers/servers.ts';
import { expectError } from './helpers/decider.ts';

const NAMES = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'];

t.test('pure lookups: own properties only', async (t) => {
  for (const name of NAMES) {
    t.equal(own({ a: 1 } as Record<string, number>, name), undefined, `own(${name})`);
    const o: Record<string, unknown> = {};
    setOwn(o, name, 1);
    t.equal(Object.getPrototypeOf(o), Object.prototype, `setOwn(${name}) keeps the prototype`);
    t.equal(own(o, name), 1, `setOwn(${name}) then own`);

    const account: AccountState = { userId: 'U', email: 'e', passwordHash: 'h', attempts: 0, lockedUntil: null, sessions: {}, user: null, revision: 0 };
    expectError(t, () => decideRevokeSession(account, name), { type: 'NotFound' }, `revoke session ${name}`);
    const renamed = evolveAccount(account, { type: 'SessionRenamed', data: { sessionId: name, name: 'x' } } as never, 1)!;
    t.same(Object.keys(renamed.sessions), [], `renaming session ${name} adds nothing`);

    const message: MessageState = { _id: 'M', channel: 'C', author: 'A', reactions: { '👍': ['B'] }, revision: 0 } as MessageState;
    const ctx = { userId: 'A', permissions: P.ViewChannel | P.React | P.ManageMessages };
    expectError(t, () => decideUnreact(message, { emoji: name, removeAll: false }, ctx), { type: 'NotFound' }, `unreact ${name}`);
    t.same(decideUnreact(message, { emoji: name, removeAll: true }, ctx), [], `remove_all ${name}: nothing`);
    expectError(t, () => decideReact(message, name, { ...ctx, emojis: new Set() }), { type: 'InvalidOperation' }, `react ${name}`);
    const reacted = evolveMessage(message, { type: 'MessageReacted', data: { channel: 'C', userId: 'A', emoji: name } } as never, 1)!;
    t.same(own(reacted.reactions, name), ['A'], `a stored ${name} reaction is an own key`);
    t.equal(Object.getPrototypeOf(reacted.reactions), Object.prototype, `${name} reaction keeps the prototype`);
    const unreacted = evolveMessage(reacted, { type: 'MessageUnreacted', data: { channel: 'C', userId: 'A', emoji: name } } as never, 2)!;
    t.same(unreacted.reactions, { '👍': ['B'] }, `unreact ${name} leaves the others`);

    const overrides = channelOverrides({ role_permissions: JSON.parse(`{"${name}": {"a": 1, "d": 0}}`) });
    t.same(Object.keys(overrides.channelRoleOverrides), [name], `override of role ${name} is an own key`);
    t.equal(Object.getPrototypeOf(overrides.channelRoleOverrides), Object.prototype, `override ${name} keeps the prototype`);
    const d = defined(JSON.parse(`{"${name}": 1}`) as Record<string, unknown>);
    t.equal(Object.getPrototypeOf(d), Object.prototype, `defined() with ${name} keeps the prototype`);

    const facts: SendFacts = { permissions: DEFAULT_PERMISSION_SERVER, roles: new Set(), replies: {}, canView: {}, files: {}, emojis: new Set() };
    expectError(
      t,
      () => decideSendMessage({ messageId: 'M', nonce: 'n', channelId: 'C', authorId: 'A', content: 'x', replies: [{ id: name, mention: true }], attachments: [], embeds: [], mentions: mentionsOf('x', false, undefined) } as never, facts),
      { type: 'NotFound' },
      `reply to ${name}`,
    );
    expectError(
      t,
      () => decideSendMessage({ messageId: 'M', nonce: 'n', channelId: 'C', authorId: 'A', content: 'x', replies: [], attachments: [name], embeds: [], mentions: mentionsOf('x', false, undefined) } as never, facts),
      { type: 'NotFound' },
      `attachment ${name}`,
    );
  }
});

t.test('over HTTP: built-in names are unknown ids (404 / 400), never 200 or 500', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const owner = await signup(s);
  const bob = await signup(s);
  const server = await createServer(owner);
  await join(owner, server.general, bob);
  const m = await owner.api.post(`/channels/${server.general}/messages`, { content: 'hi' });
  t.equal(m.status, 200);
  t.equal((await owner.api.put(`/channels/${server.general}/messages/${m.body._id}/reactions/%F0%9F%91%8D`)).status, 204, 'a reaction, so the map exists');
  const C = `/channels/${server.general}`;
  const S = `/servers/${server.id}`;
  for (const name of NAMES) {
    const enc = encodeURIComponent(name);
    const cases: Array<[string, string, unknown, number, string]> = [
      ['PATCH', `/auth/session/${enc}`, { friendly_name: 'x' }, 404, 'NotFound'],
      ['DELETE', `/auth/session/${enc}`, undefined, 404, 'NotFound'],
      ['DELETE', `${C}/messages/${m.body._id}/reactions/${enc}`, undefined, 404, 'NotFound'],
      ['DELETE', `${C}/messages/${m.body._id}/reactions/${enc}?remove_all=true`, undefined, 204, ''],
      ['PUT', `${C}/messages/${m.body._id}/reactions/${enc}`, {}, 400, 'InvalidOperation'],
      ['GET', `${S}/roles/${enc}`, undefined, 404, 'NotFound'],
      ['GET', `${S}/members/${enc}`, undefined, 404, 'NotFound'],
      ['PATCH', `${S}/members/${enc}`, { nickname: 'x' }, 404, 'NotFound'],
      ['PUT', `${S}/bans/${enc}`, {}, 404, 'NotFound'],
      ['PUT', `${S}/permissions/${enc}`, { permissions: { allow: 0, deny: 0 } }, 404, 'NotFound'],
      ['PUT', `${C}/permissions/${enc}`, { permissions: { allow: 0, deny: 0 } }, 404, 'NotFound'],
      ['GET', `/users/${enc}`, undefined, 404, 'NotFound'],
      ['GET', `/invites/${enc}`, undefined, 404, 'NotFound'],
      ['GET', `/custom/emoji/${enc}`, undefined, 404, 'NotFound'],
    ];
    for (const [method, path, body, status, type] of cases) {
      const r = await request(s.apiUrl, method, path, { token: owner.token, skipOpenApi: true, ...(body !== undefined ? { body } : {}) });
      t.same([r.status, r.body?.type ?? ''], [status, type], `${method} ${path}`);
    }
    const send = await owner.api.post(`${C}/messages`, { content: 'x', replies: [{ id: name, mention: true }] }, { skipOpenApi: true });
    t.equal(send.status === 404 || send.status === 400, true, `send replying to ${name}: ${send.status}`);
    const att = await owner.api.post(`${C}/messages`, { content: 'x', attachments: [name] }, { skipOpenApi: true });
    t.equal(att.status === 404 || att.status === 400, true, `send with attachment ${name}: ${att.status}`);
  }
  t.equal((await owner.api.get('/users/@me')).status, 200, 'the session still works');
});
