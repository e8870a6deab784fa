// Limits under concurrency, across two API processes on one event store (where only the expected revision
// can keep them): 20 distinct reactions per message (message stream) and 100 custom emoji per server
// (server stream).
import t from 'tap';
import { client, signup } from './helpers/http.ts';
import { uploadImage } from './helpers/messages.ts';
import { createServer } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';

t.test('limits under concurrency across two API processes', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  // A second API process without a projector: its in-process mutex knows nothing of the first one's.
  const other = await startTestService(t, { RATE_LIMITS: 'off', DATA_DIR: s.dataDir, REDIS_PREFIX: s.prefix, ROLES: 'api' });
  const owner = await signup(s);
  const viaOther = client(other, owner.token);
  const srv = await createServer(owner, 'Limits');
  const M = `/channels/${srv.general}/messages`;

  t.test('30 concurrent distinct reactions on a fresh message: exactly 20 land', async (t) => {
    const m = (await owner.api.post(M, { content: 'react' })).body._id;
    const emoji = (i: number) => encodeURIComponent(String.fromCodePoint(0x1f600 + i));
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? viaOther : owner.api).put(`${M}/${m}/reactions/${emoji(i)}`)));
    const ok = results.filter((r) => r.status === 204);
    const refused = results.filter((r) => r.status === 400);
    t.equal(ok.length, 20, '20 accepted');
    t.equal(refused.length, 10, '10 refused');
    t.ok(refused.every((r) => r.body.type === 'InvalidOperation'), 'InvalidOperation');
    t.equal(Object.keys((await owner.api.get(`${M}/${m}`)).body.reactions).length, 20, 'exactly 20 distinct emoji stored');
    const reacted = [];
    for await (const e of s.store.readAll()) if (e.stream === `message-${m}` && e.type === 'MessageReacted') reacted.push(e);
    t.equal(reacted.length, 20, '20 MessageReacted events in the log, nothing extra');
  });

  t.test('30 concurrent reactions on a message with 19: one new emoji lands, existing ones always do', async (t) => {
    const m = (await owner.api.post(M, { content: 'react' })).body._id;
    for (let i = 0; i < 19; i++) await owner.api.put(`${M}/${m}/reactions/${encodeURIComponent(String.fromCodePoint(0x1f400 + i))}`);
    const users = await Promise.all(Array.from({ length: 10 }, () => signup(s)));
    const invite = (await owner.api.post(`/channels/${srv.general}/invites`)).body._id;
    for (const u of users) await u.api.post(`/invites/${invite}`);
    const results = await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => (i % 2 ? viaOther : owner.api).put(`${M}/${m}/reactions/${encodeURIComponent(String.fromCodePoint(0x1f680 + i))}`)),
      ...users.map((u, i) => (i % 2 ? client(other, u.token) : u.api).put(`${M}/${m}/reactions/${encodeURIComponent(String.fromCodePoint(0x1f400))}`)),
    ]);
    t.equal(results.slice(0, 20).filter((r) => r.status === 204).length, 1, 'one of 20 new emoji');
    t.ok(results.slice(20).every((r) => r.status === 204), 'ten more users on an existing emoji');
    const reactions = (await owner.api.get(`${M}/${m}`)).body.reactions;
    t.equal(Object.keys(reactions).length, 20);
    t.equal(reactions[String.fromCodePoint(0x1f400)].length, 11);
  });

  t.test('100 custom emoji per server: 20 concurrent creates on 95 leave exactly 100', async (t) => {
    const uploads: string[] = [];
    for (let i = 0; i < 120; i += 20) uploads.push(...(await Promise.all(Array.from({ length: 20 }, () => uploadImage(s, owner, 'emojis')))));
    const id = (i: number) => uploads[i]!;
    for (let i = 0; i < 95; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(10, 95 - i) }, (_, k) => owner.api.put(`/custom/emoji/${id(i + k)}`, { name: `e${i + k}`, parent: { type: 'Server', id: srv.id } })),
      );
      const failed = batch.find((r) => r.status !== 200);
      if (failed) throw new Error(`emoji create ${failed.status} ${failed.text}`);
    }
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, k) => (k % 2 ? viaOther : owner.api).put(`/custom/emoji/${id(96 + k)}`, { name: `race${k}`, parent: { type: 'Server', id: srv.id } })),
    );
    t.equal(results.filter((r) => r.status === 200).length, 5, 'the 96th … 100th');
    const refused = results.filter((r) => r.status === 400);
    t.equal(refused.length, 15);
    t.ok(refused.every((r) => r.body.type === 'TooManyEmoji' && r.body.max === 100), 'TooManyEmoji {max: 100}');
    t.equal((await owner.api.get(`/servers/${srv.id}/emojis`)).body.length, 100, 'exactly 100 listed');
    const created = [];
    for await (const e of s.store.readAll()) if (e.stream === `server-${srv.id}` && e.type === 'EmojiCreated') created.push(e);
    t.equal(created.length, 100, '100 EmojiCreated events, nothing extra');
    t.equal((await owner.api.put(`/custom/emoji/${id(116)}`, { name: 'over', parent: { type: 'Server', id: srv.id } })).body.type, 'TooManyEmoji', 'the 101st');
    t.equal((await owner.api.del(`/custom/emoji/${id(0)}`)).status, 204);
    t.equal((await owner.api.put(`/custom/emoji/${id(116)}`, { name: 'again', parent: { type: 'Server', id: srv.id } })).status, 200, 'a deletion makes room for one');
  });
});
