// Idempotency of message send over HTTP (spec "Idempotency rules for message send", DESIGN §4 "idempotency"):
// 409 with exactly {"type":"DuplicateNonce"}, keys per user, the 64-code-point limit, header over body nonce,
// a refused send can be retried with its key, and 100 concurrent sends with one key create one message.
import t from 'tap';
import { Permission as P } from '../src/permissions/bits.ts';
import { signup, type TestUser } from './helpers/http.ts';
import { createServer, join, roleWith } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';

const cp = (n: number) => '😀'.repeat(n);

t.test('idempotency keys on message send', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [owner, member] = await Promise.all([signup(s), signup(s)]);
  const srv = await createServer(owner, 'Idempotency');
  await join(owner, srv.general, member);
  const M = `/channels/${srv.general}/messages`;
  const send = (u: TestUser, body: unknown, key?: string) => u.api.post(M, body, key === undefined ? {} : { headers: { 'Idempotency-Key': key } });
  /** How many messages the channel holds (one page of 100 is enough here). */
  const count = async () => (await owner.api.get(`${M}?limit=100`)).body.length as number;

  t.test('a stored key: 409 with exactly {"type":"DuplicateNonce"}, nothing created', async (t) => {
    const first = await send(member, { content: 'once' }, 'key-1');
    t.equal(first.status, 200);
    t.equal(first.body.nonce, 'key-1', 'the message carries the key as its nonce');
    const before = await count();
    const again = await send(member, { content: 'twice' }, 'key-1');
    t.equal(again.status, 409);
    t.equal(again.text, '{"type":"DuplicateNonce"}', 'the body is exactly the spec\'s');
    t.equal(await count(), before, 'no message created');
    t.equal((await send(owner, { content: 'same key, other user' }, 'key-1')).status, 200, 'keys are per user');
  });

  t.test('key length: 64 characters pass, 65 fail; an empty key fails', async (t) => {
    // A header carries Latin-1 characters; a body nonce can carry any code point.
    t.equal((await send(member, { content: 'x' }, 'a'.repeat(64))).status, 200, '64 characters');
    t.equal((await send(member, { content: 'x' }, 'é'.repeat(64))).status, 200, '64 Latin-1 characters');
    const long = await send(member, { content: 'x' }, 'b'.repeat(65));
    t.same([long.status, long.body.type], [400, 'FailedValidation'], '65 characters');
    t.equal((await send(member, { content: 'x' }, 'é'.repeat(65))).status, 400);
    t.equal((await send(member, { content: 'x' }, '')).status, 400, 'an empty key');
    t.equal((await send(member, { content: 'x', nonce: cp(64) })).status, 200, 'a body nonce of 64 astral code points (128 UTF-16 units)');
    t.same((await send(member, { content: 'x', nonce: cp(65) })).body.type, 'FailedValidation', 'a body nonce of 65');
  });

  t.test('the header wins over the body nonce, which is the key without it', async (t) => {
    const both = await send(member, { content: 'x', nonce: 'body-1' }, 'header-1');
    t.same([both.status, both.body.nonce], [200, 'header-1']);
    const bodyOnly = await send(member, { content: 'x', nonce: 'body-1' });
    t.same([bodyOnly.status, bodyOnly.body.nonce], [200, 'body-1'], 'the body nonce was not the key while the header was there');
    t.equal((await send(member, { content: 'x', nonce: 'body-1' })).status, 409, 'now it is');
    t.equal((await send(member, { content: 'x' }, 'body-1')).status, 409, 'header and body nonce share one store');
    t.equal((await send(member, { content: 'x', nonce: 'body-1' }, 'header-2')).status, 200, 'a new header wins over a used body nonce');
  });

  t.test('a refused send can be retried with the same key', async (t) => {
    const empty = await send(member, {}, 'retry-1');
    t.same([empty.status, empty.body.type], [422, 'EmptyMessage']);
    t.equal((await send(member, { content: 'now with content' }, 'retry-1')).status, 200, 'after EmptyMessage');

    const masked = await send(member, { content: 'x', masquerade: { name: 'm' } }, 'retry-2');
    t.same([masked.status, masked.body.permission], [403, 'Masquerade']);
    await roleWith(owner, srv.id, P.Masquerade, [member], 'masq');
    t.equal((await send(member, { content: 'x', masquerade: { name: 'm' } }, 'retry-2')).status, 200, 'after MissingPermission');

    const reply = await send(member, { content: 'x', replies: [{ id: '01HZZZZZZZZZZZZZZZZZZZZZZZ', mention: false }] }, 'retry-3');
    t.equal(reply.status, 404);
    t.equal((await send(member, { content: 'x' }, 'retry-3')).status, 200, 'after NotFound');
    t.equal((await send(member, { content: 'x' }, 'retry-3')).status, 409, 'and then it is stored');

    const invalid = await send(member, { content: cp(2001) }, 'retry-4');
    t.equal(invalid.status, 400, 'a body that fails validation');
    t.equal((await send(member, { content: 'x' }, 'retry-4')).status, 200);
  });

  t.test('100 concurrent sends with one key create exactly one message', async (t) => {
    const racer = await signup(s);
    await join(owner, srv.general, racer);
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => send(racer, { content: `race ${i}` }, 'the-one-key')));
    const created = results.filter((r) => r.status === 200);
    const duplicates = results.filter((r) => r.status === 409);
    t.equal(created.length, 1, 'one created');
    t.equal(duplicates.length, 99, '99 duplicates');
    t.ok(duplicates.every((r) => r.text === '{"type":"DuplicateNonce"}'));
    const mine = (await owner.api.get(`${M}?limit=100&include_users=true`)).body.messages.filter((m: { author: string }) => m.author === racer.userId);
    t.equal(mine.length, 1, 'one message in the channel');
    const sent = [];
    for await (const e of s.store.readAll()) if (e.type === 'MessageSent' && (e.metadata.actor === racer.userId)) sent.push(e);
    t.equal(sent.length, 1, 'one MessageSent in the log');
  });
});
