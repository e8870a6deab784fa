// Decider tests of the message aggregate and of custom emoji: given events → when a command → then events or a
// typed error. Pure: no Redis, no clock. Also the mention parser, the emoji check and evolve.
import t from 'tap';
import type { DomainEvent } from '../src/domain/events.ts';
import { decideBulkDelete, decideDeleteMessage, BULK_DELETE_MAX_AGE_MS } from '../src/domain/message/deleteMessage.ts';
import { decideEditMessage } from '../src/domain/message/editMessage.ts';
import { emojiKind, isUnicodeEmoji } from '../src/domain/message/emoji.ts';
import { SYSTEM_AUTHOR } from '../src/domain/message/events.ts';
import { parseMentions } from '../src/domain/message/mentions.ts';
import { decidePinMessage, decideUnpinMessage } from '../src/domain/message/pinMessage.ts';
import { decideClearReactions, decideReact, decideUnreact } from '../src/domain/message/reactions.ts';
import { bodyLength, checkSendMessage, decideSendMessage, mentionsOf, slowmodeFor, MESSAGE_LIMITS, type SendFacts, type SendMessage } from '../src/domain/message/sendMessage.ts';
import { evolveMessage, presentMessage, type MessageState } from '../src/domain/message/state.ts';
import { decideCreateEmoji, EMOJI_LIMIT } from '../src/domain/server/createEmoji.ts';
import { decideCreateServer } from '../src/domain/server/createServer.ts';
import { decideDeleteEmoji } from '../src/domain/server/deleteEmoji.ts';
import type { FileObject } from '../src/domain/shared.ts';
import { ulid } from 'ulid';
import { DEFAULT_PERMISSION_SERVER, GRANT_ALL_SAFE, Permission as P } from '../src/permissions/bits.ts';
import { NOW, callerIn, expectError, given } from './helpers/decider.ts';

const CH = 'CHANNEL';
const ALICE = '01ALICE0000000000000000000';
const BOB = '01BOB000000000000000000000';
const MID = '01MESSAGE00000000000000000';
/** Everything a member needs to post: the server default plus send and view. */
const BASE = DEFAULT_PERMISSION_SERVER;
const cp = (n: number) => '😀'.repeat(n);

const facts = (over: Partial<SendFacts> = {}): SendFacts => ({
  permissions: BASE,
  roles: new Set(),
  replies: {},
  canView: {},
  files: {},
  emojis: new Set(),
  ...over,
});
const cmd = (over: Partial<SendMessage> = {}): SendMessage => {
  const c = { messageId: MID, channelId: CH, authorId: ALICE, nonce: 'nonce', content: 'hello', attachments: [], embeds: [], replies: [], ...over };
  return { ...c, mentions: over.mentions ?? mentionsOf(c.content, c.bot === true, c.flags) };
};
const sentBy = (author: string, extra: Partial<MessageState> = {}): DomainEvent => ({
  type: 'MessageSent',
  data: { message: { _id: MID, nonce: 'n', channel: CH, author, content: 'hi', ...extra } },
});
/** Folds a message stream (revision = index). */
function messageOf(events: DomainEvent[]): MessageState {
  let s: MessageState | null = null;
  events.forEach((e, i) => (s = evolveMessage(s, e, i)));
  if (!s) throw new Error('no message');
  return s;
}
const file = (id: string): FileObject => ({ _id: id, tag: 'attachments', filename: `${id}.png`, metadata: { type: 'Image', width: 1, height: 1 }, content_type: 'image/png', size: 10 });

t.test('send: the MessageSent event carries the whole message', async (t) => {
  t.same(decideSendMessage(cmd(), facts()), [
    { type: 'MessageSent', data: { message: { _id: MID, nonce: 'nonce', channel: CH, author: ALICE, content: 'hello' } } },
  ]);
  const full = decideSendMessage(
    cmd({
      content: `hi <@${BOB}> <%${'R'.repeat(26)}> <%${'X'.repeat(26)}>`,
      attachments: ['f1'],
      embeds: [{ title: 't', description: 'd', media: 'f2', colour: '#fff', url: 'https://x', icon_url: 'https://i' }],
      replies: [{ id: 'M1', mention: true }],
      masquerade: { name: 'mask', colour: '#123' },
      interactions: { reactions: ['👍', '👍'], restrict_reactions: true },
      flags: 2,
    }),
    facts({
      permissions: GRANT_ALL_SAFE,
      roles: new Set(['R'.repeat(26)]),
      replies: { M1: { author: 'CAROL' } },
      canView: { [BOB]: true, CAROL: true },
      files: { f1: file('f1'), f2: file('f2') },
    }),
  );
  t.same(full, [
    {
      type: 'MessageSent',
      data: {
        message: {
          _id: MID,
          nonce: 'nonce',
          channel: CH,
          author: ALICE,
          content: `hi <@${BOB}> <%${'R'.repeat(26)}> <%${'X'.repeat(26)}>`,
          attachments: [file('f1')],
          embeds: [{ type: 'Text', icon_url: 'https://i', url: 'https://x', title: 't', description: 'd', media: file('f2'), colour: '#fff' }],
          mentions: [BOB, 'CAROL'],
          role_mentions: ['R'.repeat(26)],
          replies: ['M1'],
          interactions: { reactions: ['👍'], restrict_reactions: true },
          masquerade: { name: 'mask', colour: '#123' },
          flags: 2,
        },
      },
    },
  ], 'unknown roles dropped, the replied author mentioned, duplicate interaction emoji once');
});

t.test('send: permissions for what the body uses', async (t) => {
  const without = (bit: bigint) => BASE & ~bit;
  const cases: Array<[string, Partial<SendMessage>, bigint, string]> = [
    ['plain', {}, P.SendMessage, 'SendMessage'],
    ['plain (view)', {}, P.ViewChannel, 'ViewChannel'],
    ['masquerade name', { masquerade: { name: 'x' } }, P.Masquerade, 'Masquerade'],
    ['masquerade avatar', { masquerade: { avatar: 'http://m/avatars/x' } }, P.Masquerade, 'Masquerade'],
    ['masquerade colour', { masquerade: { colour: '#fff' } }, P.ManageRole, 'ManageRole'],
    ['embeds', { embeds: [{ title: 't' }] }, P.SendEmbeds, 'SendEmbeds'],
    ['attachments', { attachments: ['f'] }, P.UploadFiles, 'UploadFiles'],
    ['embed media', { embeds: [{ media: 'f' }] }, P.UploadFiles, 'UploadFiles'],
    ['interaction reactions', { interactions: { reactions: ['👍'] } }, P.React, 'React'],
  ];
  for (const [what, over, bit, name] of cases) {
    const perms = (BASE | P.Masquerade | P.ManageRole) & ~bit;
    expectError(t, () => checkSendMessage(cmd(over), perms), { type: 'MissingPermission', permission: name }, `${what}: without ${name}`);
    t.doesNotThrow(() => checkSendMessage(cmd(over), BASE | P.Masquerade | P.ManageRole), `${what}: with it`);
  }
  t.doesNotThrow(() => checkSendMessage(cmd({ masquerade: { name: 'x' } }), without(P.ManageRole) | P.Masquerade), 'a name needs no ManageRole');
  expectError(t, () => decideSendMessage(cmd({ content: 'hey @everyone' }), facts()), { type: 'MissingPermission', permission: 'MentionEveryone' });
  expectError(t, () => decideSendMessage(cmd({ content: 'hey @online' }), facts()), { type: 'MissingPermission', permission: 'MentionEveryone' });
  t.equal((decideSendMessage(cmd({ content: '@everyone @online' }), facts({ permissions: BASE | P.MentionEveryone }))[0]!.data as any).message.flags, 12);
  const role = 'R'.repeat(26);
  expectError(t, () => decideSendMessage(cmd({ content: `<%${role}>` }), facts({ roles: new Set([role]) })), { type: 'MissingPermission', permission: 'MentionRoles' });
  t.doesNotThrow(() => decideSendMessage(cmd({ content: `<%${role}>` }), facts({ roles: new Set([role]), permissions: BASE | P.MentionRoles })));
  t.doesNotThrow(() => decideSendMessage(cmd({ content: `<%${'Z'.repeat(26)}>` }), facts()), 'a mention of no role of the server needs nothing');
  t.doesNotThrow(() => decideSendMessage(cmd({ content: '`@everyone` ```\n@online\n``` \\@everyone' }), facts()), 'inside code or escaped: no mention');
});

t.test('send: limits at N and N+1', async (t) => {
  const ok = (over: Partial<SendMessage>, what: string) => t.doesNotThrow(() => checkSendMessage(cmd(over), GRANT_ALL_SAFE), what);
  const bad = (over: Partial<SendMessage>, type: string, what: string, extra: Record<string, unknown> = {}) =>
    expectError(t, () => checkSendMessage(cmd(over), GRANT_ALL_SAFE), { type, ...extra } as any, what);
  ok({ attachments: ['1', '2', '3', '4', '5'] }, '5 attachments');
  bad({ attachments: ['1', '2', '3', '4', '5', '6'] }, 'TooManyAttachments', '6 attachments', { max: 5 });
  ok({ embeds: Array.from({ length: 5 }, () => ({ title: 't' })) }, '5 embeds');
  bad({ embeds: Array.from({ length: 6 }, () => ({ title: 't' })) }, 'TooManyEmbeds', '6 embeds', { max: 5 });
  ok({ replies: Array.from({ length: 5 }, (_, i) => ({ id: `r${i}`, mention: false })) }, '5 replies');
  bad({ replies: Array.from({ length: 6 }, (_, i) => ({ id: `r${i}`, mention: false })) }, 'TooManyReplies', '6 replies', { max: 5 });
  // The body ceiling counts code points of content + embed titles and descriptions.
  ok({ content: cp(1000), embeds: [{ title: cp(100), description: cp(900) }] }, '2000 code points in all');
  bad({ content: cp(1000), embeds: [{ title: cp(100), description: cp(901) }] }, 'PayloadTooLarge', '2001 code points');
  ok({ content: cp(2000) }, 'content alone 2000');
  t.equal(bodyLength(cp(3), [{ title: 'ab', description: '😀' }]), 6);
  bad({ content: undefined }, 'EmptyMessage', 'nothing at all');
  bad({ content: '' }, 'EmptyMessage', 'empty content');
  ok({ content: '', embeds: [{ title: 't' }] }, 'an embed alone');
  ok({ content: undefined, attachments: ['f'] }, 'an attachment alone');
  bad({ flags: 8 }, 'InvalidProperty', 'flags above 7');
  bad({ flags: 4 }, 'IsNotBot', 'the mention flag is for bots');
  ok({ flags: 2 }, 'SuppressNotifications');
  bad({ interactions: { restrict_reactions: true } }, 'InvalidProperty', 'restrict without a list');
  ok({ interactions: { reactions: Array.from({ length: 20 }, (_, i) => String.fromCodePoint(0x1f600 + i)) } }, '20 interaction emoji');
  bad({ interactions: { reactions: Array.from({ length: 21 }, (_, i) => String.fromCodePoint(0x1f600 + i)) } }, 'InvalidOperation', '21 interaction emoji');
  bad({ interactions: { reactions: ['abc'] } }, 'InvalidOperation', 'not an emoji');
  t.equal(MESSAGE_LIMITS.reactions, 20);
});

t.test('send: replies, mentions and files from the facts', async (t) => {
  expectError(t, () => decideSendMessage(cmd({ replies: [{ id: 'gone', mention: false }] }), facts({ replies: { gone: null } })), { type: 'NotFound' });
  const skipped = decideSendMessage(cmd({ replies: [{ id: 'gone', mention: true, fail_if_not_exists: false }] }), facts({ replies: { gone: null } }));
  t.notOk('replies' in (skipped[0]!.data as any).message, 'fail_if_not_exists: false skips a missing target');
  const noMention = decideSendMessage(cmd({ replies: [{ id: 'M1', mention: false }] }), facts({ replies: { M1: { author: BOB } }, canView: { [BOB]: true } }));
  t.same((noMention[0]!.data as any).message.replies, ['M1']);
  t.notOk('mentions' in (noMention[0]!.data as any).message, 'mention: false does not mention the author');
  const hidden = decideSendMessage(cmd({ content: `<@${BOB}>` }), facts({ canView: { [BOB]: false } }));
  t.notOk('mentions' in (hidden[0]!.data as any).message, 'a user who cannot see the channel is not mentioned');
  expectError(t, () => decideSendMessage(cmd({ attachments: ['f1'] }), facts({ permissions: GRANT_ALL_SAFE })), { type: 'NotFound' }, 'an unclaimed file');
  const custom = '01EMJ0000000000000000000AB';
  expectError(t, () => decideSendMessage(cmd({ interactions: { reactions: [custom] } }), facts()), { type: 'NotFound' }, 'a custom emoji of no server');
  t.doesNotThrow(() => decideSendMessage(cmd({ interactions: { reactions: [custom] } }), facts({ emojis: new Set([custom]) })));
});

t.test('send: slowmode, the same id twice, the masquerade avatar', async (t) => {
  expectError(t, () => decideSendMessage(cmd(), facts({ slowmode: { seconds: 10, waitMs: 5_001 } })), { type: 'InSlowmode', retry_after: 6 }, 'seconds rounded up');
  expectError(t, () => decideSendMessage(cmd(), facts({ slowmode: { seconds: 10, waitMs: 1 } })), { type: 'InSlowmode', retry_after: 1 });
  t.doesNotThrow(() => decideSendMessage(cmd(), facts({ slowmode: { seconds: 10, waitMs: 0 } })), 'the slot is this send\'s');
  const noSend = facts({ permissions: BASE & ~P.SendMessage, slowmode: { seconds: 10, waitMs: 5_000 } });
  expectError(t, () => decideSendMessage(cmd(), noSend), { type: 'MissingPermission', permission: 'SendMessage' }, 'permissions come first');
  expectError(t, () => decideSendMessage(cmd({ content: undefined }), facts({ slowmode: { seconds: 10, waitMs: 5_000 } })), { type: 'InSlowmode', retry_after: 5 }, 'before EmptyMessage (Stoat order)');
  t.equal(slowmodeFor(undefined, BASE), 0);
  t.equal(slowmodeFor(0, BASE), 0);
  t.equal(slowmodeFor(10, BASE), 10);
  t.equal(slowmodeFor(10, BASE | P.BypassSlowmode), 0, 'BypassSlowmode');
  t.equal(slowmodeFor(10, BASE | P.ManageMessages), 0, 'ManageMessages');
  t.equal(slowmodeFor(10, GRANT_ALL_SAFE), 0, 'the owner');
  const f: FileObject = { _id: 'f1', tag: 'attachments', filename: 'a', metadata: { type: 'File' }, content_type: 'text/plain', size: 1 } as FileObject;
  expectError(t, () => decideSendMessage(cmd({ attachments: ['f1', 'f1'] }), facts({ permissions: GRANT_ALL_SAFE, files: { f1: f } })), { type: 'NotFound' }, 'a file is used once');
  expectError(t, () => decideSendMessage(cmd({ masquerade: { avatar: 'x' } }), facts({ permissions: GRANT_ALL_SAFE })), { type: 'NotFound' }, 'an unusable avatar');
  t.doesNotThrow(() => decideSendMessage(cmd({ masquerade: { avatar: 'x' } }), facts({ permissions: GRANT_ALL_SAFE, avatar: true })));
  expectError(t, () => decideSendMessage(cmd({ masquerade: { avatar: 'x' } }), facts({ avatar: false })), { type: 'MissingPermission', permission: 'Masquerade' }, '403 before 404');
});

t.test('mention parser', async (t) => {
  const u1 = '01HZZZZZZZZZZZZZZZZZZZZZZ1';
  const u2 = '01HZZZZZZZZZZZZZZZZZZZZZZ2';
  t.same(parseMentions(`<@${u1}> and <@${u2}> and <@${u1}>`), { users: [u1, u2], roles: [], everyone: false, online: false });
  t.same(parseMentions(`\`<@${u1}>\` \`\`<@${u2}> \` x\`\` <%${u1}>`), { users: [], roles: [u1], everyone: false, online: false }, 'code spans of any length');
  t.same(parseMentions('```\n@everyone\n```@online'), { users: [], roles: [], everyone: false, online: true }, 'fenced block');
  t.same(parseMentions(`\\<@${u1}> \\@everyone`), { users: [], roles: [], everyone: false, online: false }, 'escaped');
  t.same(parseMentions(`\`unclosed <@${u1}>`), { users: [u1], roles: [], everyone: false, online: false }, 'an unmatched backtick is text');
  t.same(parseMentions('<@short> <@!x> @every'), { users: [], roles: [], everyone: false, online: false });
});

t.test('emoji forms', async (t) => {
  for (const e of ['👍', '❤️', '❤', '👨‍👩‍👧', '🏳️‍🌈', '👍🏽', '🇫🇷', '#️⃣']) t.ok(isUnicodeEmoji(e), `${e} is an emoji`);
  for (const e of ['a', '1', '👍👍', '', ':smile:', '<:x:>']) t.notOk(isUnicodeEmoji(e), `${JSON.stringify(e)} is not`);
  t.equal(emojiKind('01ARZ3NDEKTSV4RRFFQ69G5FAV'), 'custom');
  t.equal(emojiKind('hello'), 'invalid');
});

t.test('edit', async (t) => {
  const m = messageOf([sentBy(ALICE)]);
  const at = new Date(NOW).toISOString();
  const ctx = { userId: ALICE, permissions: BASE, now: at, files: {} };
  t.same(decideEditMessage({ content: 'new' }, m, ctx), [{ type: 'MessageEdited', data: { channel: CH, data: { content: 'new' }, edited: at } }]);
  t.same(decideEditMessage({}, m, ctx), [], 'nothing to change');
  expectError(t, () => decideEditMessage({ content: 'x' }, m, { ...ctx, userId: BOB }), { type: 'CannotEditMessage' });
  expectError(t, () => decideEditMessage({ content: 'x' }, m, { ...ctx, permissions: BASE & ~P.SendMessage }), { type: 'MissingPermission', permission: 'SendMessage' });
  expectError(t, () => decideEditMessage({ embeds: [{ title: 't' }] }, m, { ...ctx, permissions: BASE & ~P.SendEmbeds }), { type: 'MissingPermission', permission: 'SendEmbeds' });
  t.same(decideEditMessage({ embeds: [{ title: 't' }] }, m, ctx), [
    { type: 'MessageEdited', data: { channel: CH, data: { embeds: [{ type: 'Text', title: 't' }] }, edited: at } },
  ]);
  expectError(t, () => decideEditMessage({ embeds: Array.from({ length: 6 }, () => ({ title: 't' })) }, m, ctx), { type: 'TooManyEmbeds', max: 5 });
  // The edited message must fit: the kept content counts with new embeds.
  const long = messageOf([sentBy(ALICE, { content: cp(1500) })]);
  t.equal(decideEditMessage({ embeds: [{ description: cp(500) }] }, long, ctx).length, 1);
  expectError(t, () => decideEditMessage({ embeds: [{ description: cp(501) }] }, long, ctx), { type: 'PayloadTooLarge' });
  const edited = messageOf([sentBy(ALICE), ...decideEditMessage({ content: 'new' }, m, ctx)]);
  t.same([edited.content, edited.edited, edited.revision], ['new', at, 1]);
});

t.test('delete and bulk delete', async (t) => {
  const m = messageOf([sentBy(ALICE)]);
  t.same(decideDeleteMessage(m, { userId: ALICE, permissions: BASE }), [{ type: 'MessageDeleted', data: { channel: CH } }], 'the author');
  expectError(t, () => decideDeleteMessage(m, { userId: BOB, permissions: BASE }), { type: 'MissingPermission', permission: 'ManageMessages' });
  t.equal(decideDeleteMessage(m, { userId: BOB, permissions: BASE | P.ManageMessages }).length, 1, 'a moderator');
  t.equal(evolveMessage(m, { type: 'MessageDeleted', data: { channel: CH } }, 1), null);

  const ids = [ulid(NOW - 1000), ulid(NOW - 500), ulid(NOW - 100)];
  const stored = (id: string, channel = CH): MessageState => ({ _id: id, channel, author: ALICE, content: 'x', revision: 3 });
  const messages = { [ids[0]!]: stored(ids[0]!), [ids[1]!]: stored(ids[1]!, 'OTHER'), [ids[2]!]: stored(ids[2]!) };
  const ctx = { userId: BOB, permissions: BASE | P.ManageMessages, channelId: CH, nowMs: NOW };
  t.same(decideBulkDelete(ids, messages, ctx), [
    { messageId: ids[0], expected: 3, events: [{ type: 'MessageDeleted', data: { channel: CH, inBulk: true } }] },
    { messageId: ids[2], expected: 3, events: [{ type: 'MessageDeleted', data: { channel: CH, bulkIds: [ids[0], ids[2]] } }] },
  ], 'another channel\'s message is skipped; the last deletion lists the bulk');
  expectError(t, () => decideBulkDelete(ids, messages, { ...ctx, permissions: BASE }), { type: 'MissingPermission', permission: 'ManageMessages' });
  expectError(t, () => decideBulkDelete(['not-a-ulid'], messages, ctx), { type: 'InvalidOperation' });
  const old = ulid(NOW - BULK_DELETE_MAX_AGE_MS - 1);
  expectError(t, () => decideBulkDelete([old], {}, ctx), { type: 'InvalidOperation' }, 'older than 7 days');
  t.same(decideBulkDelete([ulid(NOW - BULK_DELETE_MAX_AGE_MS + 1000)], {}, ctx), [], '7 days minus a second: allowed, nothing there');
  expectError(t, () => decideBulkDelete(Array.from({ length: 101 }, () => ulid(NOW)), {}, ctx), { type: 'InvalidOperation' }, '101 ids');
});

t.test('pins', async (t) => {
  const m = messageOf([sentBy(ALICE)]);
  const ctx = { userId: BOB, permissions: BASE | P.ManageMessages, systemMessageId: 'SYS' };
  const pin = decidePinMessage(m, ctx);
  t.same(pin, {
    events: [{ type: 'MessagePinned', data: { channel: CH, by: BOB } }],
    system: [{ type: 'MessageSent', data: { message: { _id: 'SYS', channel: CH, author: SYSTEM_AUTHOR, system: { type: 'message_pinned', id: MID, by: BOB } } } }],
  });
  expectError(t, () => decidePinMessage(m, { ...ctx, permissions: BASE }), { type: 'MissingPermission', permission: 'ManageMessages' });
  const pinned = messageOf([sentBy(ALICE), ...pin.events]);
  t.equal(pinned.pinned, true);
  expectError(t, () => decidePinMessage(pinned, ctx), { type: 'AlreadyPinned' });
  expectError(t, () => decideUnpinMessage(m, ctx), { type: 'NotPinned' });
  const unpin = decideUnpinMessage(pinned, ctx);
  t.same(unpin.events, [{ type: 'MessageUnpinned', data: { channel: CH, by: BOB } }]);
  t.same((unpin.system[0]!.data as any).message.system, { type: 'message_unpinned', id: MID, by: BOB });
  t.notOk('pinned' in presentMessage(messageOf([sentBy(ALICE), ...pin.events, ...unpin.events])), 'pinned is omitted when false');
});

t.test('reactions: 20 distinct emoji, more users are fine', async (t) => {
  const emoji = (i: number) => String.fromCodePoint(0x1f600 + i);
  const ctx = (userId: string) => ({ userId, permissions: BASE, emojis: new Set<string>() });
  const history: DomainEvent[] = [sentBy(ALICE)];
  for (let i = 0; i < 20; i++) history.push(...decideReact(messageOf(history), emoji(i), ctx(ALICE)));
  const full = messageOf(history);
  t.equal(Object.keys(full.reactions!).length, 20);
  expectError(t, () => decideReact(full, emoji(20), ctx(BOB)), { type: 'InvalidOperation' }, 'the 21st distinct emoji');
  t.same(decideReact(full, emoji(3), ctx(BOB)), [{ type: 'MessageReacted', data: { channel: CH, userId: BOB, emoji: emoji(3) } }], 'another user on an existing one');
  t.same(decideReact(full, emoji(3), ctx(ALICE)), [], 'reacting twice changes nothing');
  expectError(t, () => decideReact(full, emoji(3), { ...ctx(BOB), permissions: BASE & ~P.React }), { type: 'MissingPermission', permission: 'React' });
  expectError(t, () => decideReact(full, 'nope', ctx(BOB)), { type: 'InvalidOperation' });
  const custom = '01EMJ0000000000000000000AB';
  expectError(t, () => decideReact(messageOf([sentBy(ALICE)]), custom, ctx(BOB)), { type: 'NotFound' });
  t.equal(decideReact(messageOf([sentBy(ALICE)]), custom, { ...ctx(BOB), emojis: new Set([custom]) }).length, 1);
  const restricted = messageOf([sentBy(ALICE, { interactions: { reactions: ['👍'], restrict_reactions: true } })]);
  expectError(t, () => decideReact(restricted, '👎', ctx(BOB)), { type: 'InvalidOperation' }, 'restricted to its list');
  t.equal(decideReact(restricted, '👍', ctx(BOB)).length, 1);
});

t.test('unreact and clear', async (t) => {
  const m = messageOf([
    sentBy(ALICE),
    { type: 'MessageReacted', data: { channel: CH, userId: ALICE, emoji: '👍' } },
    { type: 'MessageReacted', data: { channel: CH, userId: BOB, emoji: '👍' } },
    { type: 'MessageReacted', data: { channel: CH, userId: BOB, emoji: '🎉' } },
  ]);
  t.same(m.reactions, { '👍': [ALICE, BOB], '🎉': [BOB] }, 'insertion order');
  const plain = { userId: ALICE, permissions: BASE };
  const mod = { userId: ALICE, permissions: BASE | P.ManageMessages };
  t.same(decideUnreact(m, { emoji: '👍', removeAll: false }, plain), [{ type: 'MessageUnreacted', data: { channel: CH, userId: ALICE, emoji: '👍' } }]);
  expectError(t, () => decideUnreact(m, { emoji: '🎉', removeAll: false }, plain), { type: 'NotFound' }, 'not reacted');
  expectError(t, () => decideUnreact(m, { emoji: '🎉', userId: BOB, removeAll: false }, plain), { type: 'MissingPermission', permission: 'ManageMessages' });
  expectError(t, () => decideUnreact(m, { emoji: '🎉', removeAll: true }, plain), { type: 'MissingPermission', permission: 'ManageMessages' });
  t.same(decideUnreact(m, { emoji: '🎉', userId: BOB, removeAll: false }, mod), [{ type: 'MessageUnreacted', data: { channel: CH, userId: BOB, emoji: '🎉' } }]);
  t.same(decideUnreact(m, { emoji: '👍', removeAll: true }, mod), [{ type: 'MessageReactionRemoved', data: { channel: CH, emoji: '👍' } }]);
  t.same(decideUnreact(m, { emoji: '🚀', removeAll: true }, mod), [], 'remove_all of an unused emoji');
  const afterLast = messageOf([sentBy(ALICE), { type: 'MessageReacted', data: { channel: CH, userId: BOB, emoji: '🎉' } }, { type: 'MessageUnreacted', data: { channel: CH, userId: BOB, emoji: '🎉' } }]);
  t.notOk('reactions' in afterLast, 'removing the last user removes the emoji, and the empty map');
  expectError(t, () => decideClearReactions(m, plain), { type: 'MissingPermission', permission: 'ManageMessages' });
  t.same(decideClearReactions(m, mod), [{ type: 'MessageReactionsCleared', data: { channel: CH } }]);
  t.same(decideClearReactions(afterLast, mod), []);
});

t.test('custom emoji: 100 per server, creator or ManageCustomisation', async (t) => {
  const S = 'SERVER';
  const server = decideCreateServer({ serverId: S, channelId: 'general', ownerId: 'owner', name: 'S' }, null, { now: new Date(NOW) });
  const joined: DomainEvent = { type: 'MemberJoined', data: { member: { _id: { server: S, user: ALICE }, joined_at: new Date(NOW).toISOString() } } };
  const emojiEvents: DomainEvent[] = [];
  let g = given([...server, joined]);
  for (let i = 0; i < EMOJI_LIMIT; i++) {
    const events = decideCreateEmoji({ emojiId: `E${i}`, name: `e${i}`, nsfw: false, animated: i === 0 }, g.view, { caller: callerIn(g.view, 'owner'), emojiLimit: EMOJI_LIMIT });
    emojiEvents.push(...events);
    g = given([...server, joined, ...emojiEvents]);
  }
  t.same(emojiEvents[0], { type: 'EmojiCreated', data: { emoji: { _id: 'E0', parent: { type: 'Server', id: S }, creator_id: 'owner', name: 'e0', animated: true } } });
  t.equal(g.view.server.emojis!.length, 100, 'the 100th passes');
  g.as('owner').when((v, c) => decideCreateEmoji({ emojiId: 'E100', name: 'x', nsfw: true, animated: false }, v, { caller: c, emojiLimit: EMOJI_LIMIT })).thenThrows(t, { type: 'TooManyEmoji', max: 100 });
  g.as(ALICE).when((v, c) => decideCreateEmoji({ emojiId: 'E100', name: 'x', nsfw: false, animated: false }, v, { caller: c, emojiLimit: EMOJI_LIMIT })).thenThrows(t, { type: 'MissingPermission', permission: 'ManageCustomisation' });
  g.as('owner').when((v, c) => decideCreateEmoji({ emojiId: 'E5', name: 'x', nsfw: false, animated: false }, v, { caller: c, emojiLimit: 1000 })).thenThrows(t, { type: 'InvalidOperation' }, 'an id is used once');
  const e5 = (emojiEvents[5]!.data as any).emoji;
  g.as('owner').when((v, c) => decideDeleteEmoji({ emoji: e5 }, v, { caller: c })).then(t, [{ type: 'EmojiDeleted', data: { emojiId: 'E5' } }]);
  g.as(ALICE).when((v, c) => decideDeleteEmoji({ emoji: e5 }, v, { caller: c })).thenThrows(t, { type: 'MissingPermission', permission: 'ManageCustomisation' });
  g.as(ALICE).when((v, c) => decideDeleteEmoji({ emoji: { ...e5, creator_id: ALICE } }, v, { caller: c })).then(t, [{ type: 'EmojiDeleted', data: { emojiId: 'E5' } }], 'its creator');
  const after = given([...server, joined, ...emojiEvents, { type: 'EmojiDeleted', data: { emojiId: 'E5' } }]);
  t.equal(after.view.server.emojis!.length, 99, 'a deletion makes room');
  after.as('owner').when((v, c) => decideDeleteEmoji({ emoji: e5 }, v, { caller: c })).thenThrows(t, { type: 'NotFound' }, 'deleted twice');
  after.as('owner').when((v, c) => decideCreateEmoji({ emojiId: 'E100', name: 'x', nsfw: false, animated: false }, v, { caller: c, emojiLimit: EMOJI_LIMIT })).then(t, [
    { type: 'EmojiCreated', data: { emoji: { _id: 'E100', parent: { type: 'Server', id: S }, creator_id: 'owner', name: 'x' } } },
  ]);
});
