/**
 * The pure decisions of read state and settings: who a message mentions (mentionedUsersOf and the
 * `mentionedUsers` of MessageSent), acks, server acks, the settings timestamp rule and the key limit.
 */
import t from 'tap';
import { DEFAULT_PERMISSION_SERVER, Permission as P } from '../src/permissions/bits.ts';
import { decideSendMessage, mentionedUsersOf, mentionsOf, type SendFacts, type SendMessage } from '../src/domain/message/sendMessage.ts';
import { decideAckChannel, decideAckServer } from '../src/domain/unreads/ack.ts';
import { decideSetSettings, SETTINGS_EVENT_OVERHEAD, SETTINGS_LIMITS, settingsLogCost, settingsTimestamp } from '../src/domain/settings/setSettings.ts';
import { AppError } from '../src/errors.ts';

const A = '01AAAAAAAAAAAAAAAAAAAAAAAA';
const B = '01BBBBBBBBBBBBBBBBBBBBBBBB';
const C = '01CCCCCCCCCCCCCCCCCCCCCCCC';
const D = '01DDDDDDDDDDDDDDDDDDDDDDDD';
const ROLE = '01RRRRRRRRRRRRRRRRRRRRRRRR';
const M = '01MMMMMMMMMMMMMMMMMMMMMMMM';

const audience = [
  { userId: A, roles: [], online: true },
  { userId: B, roles: [ROLE], online: false },
  { userId: C, roles: [], online: true },
];

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err instanceof AppError ? err.body : err;
  }
  return undefined;
}

t.test('mentionedUsersOf', async (t) => {
  const none = { roles: [], everyone: false, online: false };
  t.same(mentionedUsersOf([B], none, A, 0, audience), [B], 'explicit only');
  t.same(mentionedUsersOf([], { ...none, roles: [ROLE] }, A, 0, audience), [B], 'role holders');
  t.same(mentionedUsersOf([], { ...none, everyone: true }, A, 0, audience), [B, C], '@everyone: every viewer but the author');
  t.same(mentionedUsersOf([], { ...none, online: true }, A, 0, audience), [C], '@online: online viewers but the author');
  t.same(mentionedUsersOf([A, D], { ...none, everyone: true }, A, 0, audience), [A, D, B, C], 'explicit first (a self-mention too), then the mass mention, each once');
  t.same(mentionedUsersOf([B], { ...none, everyone: true }, A, 2, audience), [], 'SuppressNotifications: nobody');
  t.same(mentionedUsersOf([], { ...none, everyone: true }, A, 0, []), [], 'no audience loaded: nobody beyond the explicit');
});

t.test('MessageSent carries mentionedUsers only when it differs from message.mentions', async (t) => {
  const facts = (over: Partial<SendFacts> = {}): SendFacts => ({
    permissions: DEFAULT_PERMISSION_SERVER | P.MentionEveryone | P.MentionRoles,
    roles: new Set([ROLE]),
    replies: {},
    canView: { [B]: true, [D]: false },
    files: {},
    emojis: new Set(),
    ...over,
  });
  const cmd = (content: string, flags?: number): SendMessage => ({ messageId: M, channelId: 'C', authorId: A, nonce: 'n', content, attachments: [], embeds: [], replies: [], mentions: mentionsOf(content, false, flags), ...(flags !== undefined ? { flags } : {}) });
  const plain = decideSendMessage(cmd(`hi <@${B}> <@${D}>`), facts())[0]!;
  t.same(plain.data, { message: { _id: M, nonce: 'n', channel: 'C', author: A, content: `hi <@${B}> <@${D}>`, mentions: [B] } }, 'explicit: message.mentions (viewers only), no extra field');
  const everyone = decideSendMessage(cmd('@everyone'), facts({ audience }))[0]!;
  t.same((everyone.data as { mentionedUsers?: string[] }).mentionedUsers, [B, C]);
  t.notOk('mentions' in (everyone.data as { message: object }).message, 'message.mentions stays the explicit list (none)');
  const role = decideSendMessage(cmd(`<%${ROLE}>`), facts({ audience }))[0]!;
  t.same((role.data as { mentionedUsers?: string[] }).mentionedUsers, [B]);
  const quiet = decideSendMessage(cmd(`<@${B}>`, 2), facts())[0]!;
  t.notOk('mentionedUsers' in quiet.data, 'SuppressNotifications: no field (the flag tells the projection to record nobody)');
  const quietEveryone = decideSendMessage(cmd('@everyone', 2), facts({ audience }))[0]!;
  t.notOk('mentionedUsers' in quietEveryone.data, 'not even for a mass mention');
  t.same((quiet.data as { message: { mentions?: string[] } }).message.mentions, [B]);
});

t.test('acks', async (t) => {
  const ok = { permissions: P.ViewChannel, inChannel: true, lastId: null };
  t.same(decideAckChannel({ channelId: 'C', messageId: M }, ok), [{ type: 'ChannelAcked', data: { channelId: 'C', messageId: M } }]);
  t.same(thrown(() => decideAckChannel({ channelId: 'C', messageId: M }, { ...ok, permissions: P.SendMessage })), { type: 'MissingPermission', permission: 'ViewChannel' });
  t.same(thrown(() => decideAckChannel({ channelId: 'C', messageId: M }, { ...ok, inChannel: false })), { type: 'NotFound' });
  t.same(thrown(() => decideAckChannel({ channelId: 'C', messageId: M }, { ...ok, permissions: 0n, inChannel: false })), { type: 'MissingPermission', permission: 'ViewChannel' }, 'permission before the message');
  t.same(decideAckChannel({ channelId: 'C', messageId: M }, { ...ok, lastId: M }), [], 'the message acked last: nothing');
  t.same(decideAckChannel({ channelId: 'C', messageId: A }, { ...ok, lastId: M }), [{ type: 'ChannelAcked', data: { channelId: 'C', messageId: A } }], 'an older one: mark as unread');
  t.same(
    decideAckServer([
      { channelId: 'c1', lastMessageId: M, lastId: null },
      { channelId: 'c2', lastMessageId: undefined, lastId: null },
      { channelId: 'c3', lastMessageId: M, lastId: M },
      { channelId: 'c4', lastMessageId: M, lastId: A },
    ]),
    [
      { type: 'ChannelAcked', data: { channelId: 'c1', messageId: M } },
      { type: 'ChannelAcked', data: { channelId: 'c4', messageId: M } },
    ],
    'channels with messages not read to the end',
  );
});

t.test('settings', async (t) => {
  t.equal(settingsTimestamp(undefined, 1000), 1000, 'absent: now');
  t.equal(settingsTimestamp(999, 1000), 999, 'past: kept');
  t.equal(settingsTimestamp(1000, 1000), 1000, 'now: kept');
  t.equal(settingsTimestamp(1001, 1000), 1000, 'future: now');
  t.equal(settingsTimestamp(-5, 1000), -5, 'negative: kept');
  const keys = (n: number, from = 0) => Array.from({ length: n }, (_, i) => [`k${from + i}`, 'v'] as const);
  t.same(decideSetSettings({ settings: [] }, new Set(), { now: 5, writeMaxBytes: 100_000 }), [], 'an empty write: nothing');
  t.same(decideSetSettings({ settings: [['a', 'x']], timestamp: 3 }, new Set(), { now: 5, writeMaxBytes: 100_000 }), [{ type: 'UserSettingsSet', data: { timestamp: 3, settings: [['a', 'x']] } }]);
  const stored = new Set(keys(SETTINGS_LIMITS.keys - 1).map(([k]) => k));
  t.equal(decideSetSettings({ settings: keys(1, 1000) }, stored, { now: 5, writeMaxBytes: 100_000 }).length, 1, `key ${SETTINGS_LIMITS.keys}: fine`);
  t.match(thrown(() => decideSetSettings({ settings: keys(2, 1000) }, stored, { now: 5, writeMaxBytes: 100_000 })), { type: 'FailedValidation' }, `key ${SETTINGS_LIMITS.keys + 1}: refused`);
  t.equal(decideSetSettings({ settings: keys(5) }, stored, { now: 5, writeMaxBytes: 100_000 }).length, 1, 'rewriting stored keys does not count');
  // One write: keys and values together at most writeMaxBytes UTF-8 bytes ("é" is two).
  t.equal(decideSetSettings({ settings: [['ab', 'é'.repeat(4)]] }, new Set(), { now: 5, writeMaxBytes: 10 }).length, 1, '10 bytes of 10: fine');
  t.match(thrown(() => decideSetSettings({ settings: [['ab', 'é'.repeat(4) + 'x']] }, new Set(), { now: 5, writeMaxBytes: 10 })), { type: 'FailedValidation' }, '11 bytes of 10: refused');
  t.equal(settingsLogCost([]), 0, 'an empty write costs the log nothing');
  t.equal(settingsLogCost([['ab', 'cd'], ['é', '']]), SETTINGS_EVENT_OVERHEAD + 6, 'keys, values and the event overhead');
});
