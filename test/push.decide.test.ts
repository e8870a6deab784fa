/**
 * The pure parts of Web Push: subscription decisions over the account state (one per session, replaced,
 * ended by logout; a `gone` only for the endpoint that failed), the key checks, who is a candidate for a
 * message, the `notifications` setting rules, and the payload (Stoat's PushNotification, cut to fit).
 */
import { createECDH, randomBytes } from 'node:crypto';
import t from 'tap';
import { checkPushKeys, decidePushGone, decidePushSubscribe, decidePushUnsubscribe } from '../src/domain/account/push.ts';
import { evolveAccount, type AccountState } from '../src/domain/account/state.ts';
import type { DomainEvent } from '../src/domain/events.ts';
import { AppError } from '../src/errors.ts';
import { couldPush, cutUtf8, parseNotificationSettings, pushCandidates, pushNotificationOf, settingsAllow, PUSH_BODY_BYTES } from '../src/push/notification.ts';
import { newId, ulidTime } from '../src/ids.ts';

function accountOf(events: DomainEvent[]): AccountState {
  let s: AccountState | null = null;
  events.forEach((e, i) => (s = evolveAccount(s, e, i)));
  return s!;
}

const keys = () => {
  const e = createECDH('prime256v1');
  e.generateKeys();
  return { p256dh: e.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') };
};

t.test('subscription decisions', async (t) => {
  const base: DomainEvent[] = [
    { type: 'AccountCreated', data: { userId: 'u', email: 'a@b.c', passwordHash: 'h' } },
    { type: 'SessionCreated', data: { sessionId: 's1', tokenHash: 'th1', name: 'laptop' } },
  ];
  const sub = { endpoint: 'https://push.example/a', ...keys() };
  const [subscribed] = decidePushSubscribe(accountOf(base), 's1', sub);
  t.same(subscribed, { type: 'PushSubscribed', data: { sessionId: 's1', ...sub } });
  const withSub = accountOf([...base, subscribed!]);
  t.same(withSub.sessions.s1!.subscription, sub);
  t.same(decidePushSubscribe(withSub, 's1', sub), [], 'the same subscription again: nothing');
  const other = { endpoint: 'https://push.example/b', ...keys() };
  const [replaced] = decidePushSubscribe(withSub, 's1', other);
  t.same(accountOf([...base, subscribed!, replaced!]).sessions.s1!.subscription, other, 'a new one replaces it');
  t.throws(() => decidePushSubscribe(withSub, 'nope', sub), new AppError({ type: 'InvalidSession' }));

  t.same(decidePushUnsubscribe(accountOf(base), 's1'), [], 'nothing to end');
  const [off] = decidePushUnsubscribe(withSub, 's1');
  t.same(off, { type: 'PushUnsubscribed', data: { sessionId: 's1', reason: 'user' } });
  t.notOk(accountOf([...base, subscribed!, off!]).sessions.s1!.subscription);

  t.same(decidePushGone(withSub, 's1', 'https://push.example/old'), [], 'a gone for another endpoint keeps the current one');
  t.same(decidePushGone(withSub, 's1', sub.endpoint), [{ type: 'PushUnsubscribed', data: { sessionId: 's1', reason: 'gone', endpoint: sub.endpoint } }]);
  t.same(decidePushGone(null, 's1', sub.endpoint), []);
  const gone: DomainEvent = { type: 'PushUnsubscribed', data: { sessionId: 's1', reason: 'gone', endpoint: 'https://push.example/old' } };
  t.same(accountOf([...base, subscribed!, gone]).sessions.s1!.subscription, sub, 'replayed: a stale gone changes nothing');

  const revoked = accountOf([...base, subscribed!, { type: 'SessionRevoked', data: { sessionId: 's1' } }]);
  t.notOk(revoked.sessions.s1, 'a revoked session takes its subscription with it');
  const sealed: DomainEvent = { type: 'PushSubscribed', data: { sessionId: 's1' } as never };
  t.notOk(accountOf([...base, sealed]).sessions.s1!.subscription, 'fields whose key was destroyed: nothing kept');
});

t.test('key checks', async (t) => {
  const k = keys();
  t.doesNotThrow(() => checkPushKeys(k));
  t.doesNotThrow(() => checkPushKeys({ ...k, auth: `${k.auth}==` }), 'padding is accepted');
  const bad = (what: string, v: { p256dh: string; auth: string }) => {
    try {
      checkPushKeys(v);
      t.fail(what);
    } catch (err) {
      t.equal((err as AppError).body.type, 'FailedValidation', what);
    }
  };
  bad('off the curve', { ...k, p256dh: Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 1)]).toString('base64url') });
  bad('compressed point', { ...k, p256dh: Buffer.alloc(33, 2).toString('base64url') });
  bad('auth of 17 bytes', { ...k, auth: randomBytes(17).toString('base64url') });
  bad('standard base64', { ...k, auth: '+/+/+/+/+/+/+/+/+/+/+w' });
});

t.test('who is notified, and what settings allow', async (t) => {
  const m = { _id: newId(), channel: 'c', author: 'a', content: 'hi', mentions: ['b', 'a'] };
  t.same(pushCandidates(m, undefined, null), ['b'], 'server channel: the mentioned, never the author');
  t.same(pushCandidates(m, ['b', 'c', 'a'], null), ['b', 'c'], 'mass mentions from mentionedUsers');
  t.same(pushCandidates(m, undefined, ['a', 'x', 'y']), ['x', 'y'], 'private channel: the recipients');
  t.same(pushCandidates({ ...m, flags: 2 }, undefined, ['a', 'x']), [], 'SuppressNotifications');
  t.same(pushCandidates({ ...m, flags: 6 }, undefined, ['a', 'x']), [], 'SuppressNotifications with other flags');

  // The log follower's filter: a queue job only where the fan-out could push.
  const plain = { ...m, mentions: undefined };
  t.ok(couldPush(m, undefined, false), 'server channel with a mention: a job');
  t.notOk(couldPush(plain, undefined, false), 'server channel, no mention: no job');
  t.notOk(couldPush({ ...m, mentions: ['a'] }, undefined, false), 'only the author mentioned: no job');
  t.ok(couldPush(plain, ['c'], false), 'a mass mention expanded in mentionedUsers: a job');
  t.notOk(couldPush(plain, [], false), 'an expansion that names nobody: no job');
  t.ok(couldPush(plain, undefined, true), 'private channel: a job (its recipients are read by the fan-out)');
  t.notOk(couldPush({ ...m, flags: 2 }, undefined, true), 'SuppressNotifications: no job, even in a DM');
  for (const [msg, mentioned, priv] of [[m, undefined, false], [plain, undefined, false], [plain, ['c'], false], [{ ...m, flags: 2 }, ['b'], false]] as const) {
    t.equal(couldPush(msg, mentioned, priv), pushCandidates(msg, mentioned, null).length > 0, 'agrees with the fan-out on server channels');
  }

  const none = parseNotificationSettings(undefined);
  t.ok(settingsAllow(none, { channelId: 'd', serverId: null }, false), 'DM default all');
  t.notOk(settingsAllow(none, { channelId: 'c', serverId: 's' }, false), 'server default mention: not without one');
  t.ok(settingsAllow(none, { channelId: 'c', serverId: 's' }, true));
  const st = parseNotificationSettings(JSON.stringify({ server: { s: 'muted', t: 'all', bad: 'loud' }, channel: { c: 'all', e: 'none' }, other: 1 }));
  t.ok(settingsAllow(st, { channelId: 'c', serverId: 's' }, false), 'channel all overrides a muted server');
  t.notOk(settingsAllow(st, { channelId: 'x', serverId: 's' }, true), 'muted server');
  t.notOk(settingsAllow(st, { channelId: 'e', serverId: 't' }, true), 'channel none');
  t.ok(settingsAllow(st, { channelId: 'x', serverId: 'bad' }, true), 'an unknown state is ignored');
  t.same(parseNotificationSettings('{oops'), parseNotificationSettings(undefined), 'malformed: defaults');
  t.same(parseNotificationSettings('["server"]'), parseNotificationSettings(undefined));
});

t.test('payload', async (t) => {
  const id = newId();
  const urls = { app: 'https://app', api: 'https://api', media: 'https://media' };
  const img = { _id: 'f1', tag: 'attachments', filename: 'a.png', metadata: { type: 'Image' as const, width: 1, height: 1 }, content_type: 'image/png', size: 1 };
  const file = { ...img, _id: 'f0', metadata: { type: 'File' as const } };
  const p = pushNotificationOf({ _id: id, channel: 'c', author: 'a', attachments: [file, img] }, { _id: 'a', username: 'alice', display_name: 'Alice', avatar: { ...img, _id: 'av' } }, urls);
  t.same(p, { author: 'Alice', icon: 'https://media/avatars/av', image: 'https://media/attachments/f1', body: 'Sent 2 attachments', tag: 'c', timestamp: Math.floor(ulidTime(id) / 1000), url: `https://app/channel/c/${id}` });
  const masked = pushNotificationOf({ _id: id, channel: 'c', author: 'a', content: 'x', masquerade: { name: 'Bot', avatar: 'https://media/avatars/m' } }, null, urls);
  t.match(masked, { author: 'Bot', icon: 'https://media/avatars/m', body: 'x' });
  t.notOk('image' in masked);
  t.equal(pushNotificationOf({ _id: id, channel: 'c', author: 'a', content: 'y' }, null, urls).icon, 'https://api/users/a/default_avatar');
  const long = cutUtf8('😀'.repeat(1000), PUSH_BODY_BYTES);
  t.ok(Buffer.byteLength(long) <= PUSH_BODY_BYTES);
  t.ok(long.endsWith('…') && !long.includes('\uFFFD'), 'cut on a code point boundary');
  t.equal(cutUtf8('short', PUSH_BODY_BYTES), 'short');
});
