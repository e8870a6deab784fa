// Rate limits of the message and emoji routes over HTTP with the injected clock (spec "Rate limiting"): the
// messaging bucket (10 per 10 s) is per channel, message reads are in the channels bucket, and emoji create
// draws on its parent server's `servers` budget.
import t from 'tap';
import { signup } from './helpers/http.ts';
import { uploadImage } from './helpers/messages.ts';
import { createServer } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';

t.test('message and emoji rate limits', async (t) => {
  let clock = Date.parse('2030-01-01T00:00:00.000Z');
  const s = await startTestService(t, {}, { now: () => clock });
  const owner = await signup(s);
  const srv = await createServer(owner, 'Limited');
  clock += 60_000;
  const second = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'second' })).body._id as string;
  clock += 60_000;
  const send = (channel: string, i: number) => owner.api.post(`/channels/${channel}/messages`, { content: `m${i}` });

  t.test('messaging: 10 sends per channel per window, each channel its own budget', async (t) => {
    for (let i = 1; i <= 10; i++) {
      const r = await send(srv.general, i);
      t.equal(r.status, 200, `send ${i}`);
      t.equal(r.headers.get('x-ratelimit-bucket'), 'messaging');
      t.equal(r.headers.get('x-ratelimit-remaining'), String(10 - i));
    }
    clock += 3_000;
    const refused = await send(srv.general, 11);
    t.equal(refused.status, 429, 'the 11th send in the channel');
    t.same(refused.body, { retry_after: 7_000 });
    t.equal((await owner.api.get(`/channels/${srv.general}/messages?limit=100`)).body.length, 10, 'the refused send created nothing');
    for (let i = 1; i <= 10; i++) t.equal((await send(second, i)).status, 200, `another channel: send ${i}`);
    t.equal((await send(second, 11)).status, 429);
    const read = await owner.api.get(`/channels/${srv.general}/messages`);
    t.same([read.status, read.headers.get('x-ratelimit-bucket')], [200, 'channels'], 'reads are in the channels bucket, not messaging');
    clock += 7_000;
    const again = await send(srv.general, 12);
    t.same([again.status, again.headers.get('x-ratelimit-remaining')], [200, '9'], 'a new window');
  });

  t.test('emoji create draws on its server\'s servers budget', async (t) => {
    clock += 60_000;
    const other = await createServer(owner, 'Other');
    clock += 60_000;
    for (let i = 0; i < 3; i++) t.equal((await owner.api.patch(`/servers/${srv.id}`, { name: `n${i}` })).status, 200, `server edit ${i + 1}`);
    t.equal((await owner.api.post(`/servers/${srv.id}/channels`, { name: 'c' })).status, 200, 'channel create (4th)');
    // Uploads are catch-all requests of the media server (`POST /emojis`), not the servers bucket.
    const [e1, e2, e3] = [await uploadImage(s, owner, 'emojis'), await uploadImage(s, owner, 'emojis'), await uploadImage(s, owner, 'emojis')];
    const emoji = (id: string, server: string) => owner.api.put(`/custom/emoji/${id}`, { name: 'e', parent: { type: 'Server', id: server } });
    const fifth = await emoji(e1, srv.id);
    t.same([fifth.status, fifth.headers.get('x-ratelimit-bucket'), fifth.headers.get('x-ratelimit-remaining')], [200, 'servers', '0'], 'emoji create is the 5th');
    const sixth = await emoji(e2, srv.id);
    t.equal(sixth.status, 429, 'the 6th operation on the server: an emoji create');
    t.equal((await owner.api.get(`/servers/${srv.id}/emojis`)).status, 429, 'the budget is the server\'s');
    t.equal((await emoji(e3, other.id)).status, 200, 'another server has its own budget');
    clock += 10_000;
    t.equal((await emoji(e2, srv.id)).status, 200, 'allowed again after the window');
    t.equal((await owner.api.get(`/servers/${srv.id}/emojis`)).body.length, 2, 'the refused create left nothing behind');
  });
});
