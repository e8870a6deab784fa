/**
 * Issue 35 finding 7: names with characters no client can render safely. Every kind of name — username, display
 * name, server, channel, category, role, group, bot, webhook, nickname, masquerade — refuses NUL and the other
 * controls, lone surrogates, the right-to-left override and the other bidirectional controls with 400
 * FailedValidation and appends nothing; the same names with ordinary Unicode (accents, emoji with skin tones
 * and joiners) pass. The rule is one validator (`nameText` / `renderableName` in src/text.ts).
 */
import t from 'tap';
import { renderableName } from '../src/text.ts';
import type { Res } from './helpers/http.ts';
import { signup } from './helpers/http.ts';
import { createServer } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';

/** One of each kind of refused character, by name. */
const BAD: ReadonlyArray<[string, string]> = [
  ['NUL', '\u0000'],
  ['a C0 control (ESC)', '\u001B'],
  ['DEL', '\u007F'],
  ['a C1 control (NEL)', '\u0085'],
  ['a lone high surrogate', '\uD800'],
  ['a lone low surrogate', '\uDC00'],
  ['the right-to-left override', '\u202E'],
  ['a left-to-right embedding', '\u202A'],
  ['a right-to-left isolate', '\u2067'],
  ['the pop directional isolate', '\u2069'],
  ['the right-to-left mark', '\u200F'],
  ['the Arabic letter mark', '\u061C'],
  ['the line separator', '\u2028'],
  ['the byte-order mark', '\uFEFF'],
  ['a noncharacter', '\uFFFF'],
];

/** Names that must still pass: accents, an emoji with a skin tone, a ZWJ sequence, a joiner in a script. */
const GOOD = ['Ünïcode', 'ab👍🏽', 'x🏳️‍🌈', 'می‌خواهم'];

t.test('the shared rule', async (t) => {
  for (const [what, c] of BAD) t.notOk(renderableName(`ab${c}cd`), `${what} is refused`);
  for (const good of GOOD) t.ok(renderableName(good), `${JSON.stringify(good)} passes`);
});

t.test('every kind of name refuses control, surrogate and bidi characters', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', BOT_LIMIT: '20' });
  const owner = await signup(s);
  const friend = await signup(s);
  await owner.api.put(`/users/${friend.userId}/friend`);
  await friend.api.put(`/users/${owner.userId}/friend`);
  const server = await createServer(owner);
  const S = `/servers/${server.id}`;
  const role = (await owner.api.post(`${S}/roles`, { name: 'r' })).body.id as string;
  let n = 0;
  const unique = () => `${process.pid % 1000}x${n++}`;

  /** [kind, a request naming it `name`, the status of an accepted name]. */
  const kinds: Array<[string, (name: string) => Promise<Res>, number]> = [
    ['username', (name) => owner.api.patch('/users/@me/username', { username: `u${unique()}${name}`, password: owner.password }), 200],
    ['display name', (name) => owner.api.patch('/users/@me', { display_name: `dn${name}` }), 200],
    ['server name (create)', (name) => owner.api.post('/servers/create', { name }), 200],
    ['server name (edit)', (name) => owner.api.patch(S, { name }), 200],
    ['channel name (create)', (name) => owner.api.post(`${S}/channels`, { name }), 200],
    ['channel name (edit)', (name) => owner.api.patch(`/channels/${server.general}`, { name }), 200],
    ['category title', (name) => owner.api.patch(S, { categories: [{ id: 'cat', title: name, channels: [server.general] }] }), 200],
    ['role name (create)', (name) => owner.api.post(`${S}/roles`, { name }), 200],
    ['role name (edit)', (name) => owner.api.patch(`${S}/roles/${role}`, { name }), 200],
    ['nickname', (name) => owner.api.patch(`${S}/members/${owner.userId}`, { nickname: name }), 200],
    ['group name', (name) => owner.api.post('/channels/create', { name, users: [friend.userId] }), 200],
    ['bot name', (name) => owner.api.post('/bots/create', { name: `b${unique()}${name}` }), 200],
    ['webhook name', (name) => owner.api.post(`/channels/${server.general}/webhooks`, { name }), 200],
    ['masquerade name', (name) => owner.api.post(`/channels/${server.general}/messages`, { content: 'm', masquerade: { name } }), 200],
  ];
  for (const [kind, send, okStatus] of kinds) {
    t.test(kind, async (t) => {
      for (const [what, c] of BAD) {
        const head = await s.store.headPosition();
        const r = await send(`ab${c}cd`);
        t.same([r.status, r.body?.type], [400, 'FailedValidation'], `${what}: 400 FailedValidation`);
        t.equal(await s.store.headPosition(), head, `${what}: nothing appended`);
      }
      // Usernames and bot names take letters, digits, "_", "." and "-" only; the other names take any text.
      const good = kind === 'username' || kind === 'bot name' ? ['Ünïcode'] : GOOD;
      for (const name of good) t.equal((await send(name)).status, okStatus, `${JSON.stringify(name)} is accepted`);
    });
  }
});
