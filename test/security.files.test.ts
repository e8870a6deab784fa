// Disk filling (issue 17 item 4): identical uploads are stored once (two ids, one copy; removing one id keeps
// the other's bytes, removing the last drops them); uploads nothing used are swept after
// UNATTACHED_FILE_MAX_AGE_MS (injected clock: the id is 404 to use and to serve, its bytes are gone; used and
// young uploads stay; a use after the sweep read loses nothing: the sweep conflicts and skips); upload rate
// limits are counted per user, so logging in again does not reset them; rebuild equals live.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { createRedis } from '../src/redis.ts';
import { PROJECTIONS } from '../projections/index.ts';
import { rebuild } from '../projections/rebuild.ts';
import { loadFile } from '../src/files.ts';
import { createLogger } from '../src/log.ts';
import { purgeDetachedFiles, sweepUnattachedFiles } from '../src/media/sweep.ts';
import { controlKeys, generationPrefix, rm } from '../src/readmodel/keys.ts';
import { client, signup } from './helpers/http.ts';
import { until, WAIT_MS } from './helpers/wait.ts';
import { get, png, upload, useFile } from './helpers/media.ts';
import { dumpGeneration } from './helpers/servers.ts';
import { startTestService, waitServing } from './helpers/service.ts';

/** Every regular file under a directory. */
function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).map((d) => path.join(d.parentPath, d.name));
}

t.test('deduplication and the sweep', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', FILE_SWEEP_INTERVAL_MS: '0', UNATTACHED_FILE_MAX_AGE_MS: '60000' });
  const [alice, bob] = await Promise.all([signup(s), signup(s)]);
  const bytes = await png(40, 30, { r: 1, g: 2, b: 3 });
  const up = async (token: string, b: Uint8Array = bytes) => {
    const r = await upload(s, token, 'attachments', b, { filename: 'same.png', contentType: 'image/png' });
    if (r.status !== 200) throw new Error(`upload ${r.status} ${r.text}`);
    return r.body.id as string;
  };
  const store = path.join(s.config.dataDir, 'files', 'sha256');
  const served = async (id: string) => (await get(`${s.mediaUrl}/attachments/${id}`)).status;
  let clock = Date.now();
  const sweep = () => sweepUnattachedFiles({ store: s.store, readModels: s.readModels, blobs: s.blobs, log: createLogger('silent'), now: () => clock }, 60_000);

  t.test('identical uploads share one copy', async (t) => {
    const before = filesUnder(store).length;
    const a = await up(alice.token);
    const b = await up(bob.token);
    t.not(a, b, 'two ids');
    const [sa, sb] = [fs.statSync(s.blobs.originalPath(a)), fs.statSync(s.blobs.originalPath(b))];
    t.equal(sa.ino, sb.ino, 'both ids name the same bytes on disk');
    const copies = fs.existsSync(s.blobs.previewPath(a)) ? 2 : 1;
    if (copies === 2) t.equal(fs.statSync(s.blobs.previewPath(a)).ino, fs.statSync(s.blobs.previewPath(b)).ino, 'the previews too');
    t.equal(filesUnder(store).length - before, copies, 'one stored copy of the original (and of the preview), not two');
    await useFile(s, alice.userId, a, 'attachments');
    await useFile(s, bob.userId, b, 'attachments');
    t.same([await served(a), await served(b)], [200, 200]);
    const body = (await get(`${s.mediaUrl}/attachments/${b}`)).bytes;
    // Removing one id's blobs keeps the other's bytes; removing the last drops the copy.
    await s.blobs.removeProcessed(a);
    t.equal(await served(b), 200, 'the other id is still served');
    t.same((await get(`${s.mediaUrl}/attachments/${b}`)).bytes, body, 'with the same bytes');
    t.equal(filesUnder(store).length - before, copies, 'the shared copy stays');
    await s.blobs.removeProcessed(b);
    t.equal(filesUnder(store).length - before, 0, 'gone with its last id');
    const c = await up(alice.token);
    await useFile(s, alice.userId, c, 'attachments');
    t.equal(await served(c), 200, 'the same bytes uploaded again are stored again');
  });

  t.test('unattached uploads are swept after the configured age', async (t) => {
    clock = Date.now();
    const old = await up(alice.token, await png(31, 17, { r: 9, g: 9, b: 9 }));
    const used = await up(alice.token, await png(32, 17, { r: 9, g: 9, b: 9 }));
    await useFile(s, alice.userId, used, 'attachments');
    t.same(await sweep(), [], 'nothing is old enough yet');
    clock += 60_001;
    const young = await up(alice.token, await png(33, 17, { r: 9, g: 9, b: 9 }));
    const raced = await up(bob.token, await png(34, 17, { r: 9, g: 9, b: 9 }));
    const youngPath = s.blobs.originalPath(young);
    const redis = createRedis(s.config.redisUrl);
    t.teardown(() => redis.disconnect());
    const uploadedAt = async (id: string) => Number(await redis.zscore(s.readModels.key(rm.unattachedFiles()), id));
    const [oldAt, youngAt] = [await uploadedAt(old), await uploadedAt(young)];
    t.ok(oldAt > 0 && oldAt < youngAt, 'upload times are recorded');
    // The sweep's clock: `old` is just past the age, `young` just within it.
    clock = youngAt + 60_000 - 1;
    const swept = await sweep();
    t.ok(swept.includes(old), 'the old unused upload is swept');
    t.notOk(swept.includes(used), 'a used one is not');
    // The sweep appends FileExpired; the files projection applies it moments later.
    t.equal(await until('the swept id to stop resolving', async () => (await loadFile(s.deps, old)) === null).catch(() => false), true, 'its id resolves no more');
    t.equal(fs.existsSync(s.blobs.originalPath(old)), false, 'its bytes are gone');
    const send = await alice.api.post('/channels/create', { name: 'g', users: [] });
    const attach = await alice.api.post(`/channels/${send.body._id}/messages`, { attachments: [old] });
    t.same([attach.status, attach.body.type], [404, 'NotFound'], 'a swept id cannot be used');
    t.equal(await served(used), 200, 'the used upload is still served');
    clock = Date.now() + 120_000;
    const record = await loadFile(s.deps, raced);
    await useFile(s, bob.userId, raced, 'attachments');
    t.ok(record && (await loadFile(s.deps, raced))!.revision > record.revision);
    const late = await sweep();
    t.notOk(late.includes(raced), 'a used upload is never swept');
    t.ok(late.includes(young), 'every old unused one is');
    t.equal(fs.existsSync(youngPath), false);
    t.equal(await served(raced), 200);
  });

  t.test('detached files are purged after the retention: bytes gone, the log says why', async (t) => {
    const purge = () => purgeDetachedFiles({ store: s.store, readModels: s.readModels, blobs: s.blobs, log: createLogger('silent'), now: () => clock }, 120_000);
    const dm = await alice.api.post('/channels/create', { name: 'purge', users: [] });
    const channel = dm.body._id as string;
    const sendWith = async (file: string) => {
      const r = await alice.api.post(`/channels/${channel}/messages`, { attachments: [file] });
      t.equal(r.status, 200, r.text);
      return r.body._id as string;
    };
    const gone = await up(alice.token, await png(41, 17, { r: 7, g: 7, b: 7 }));
    const kept = await up(alice.token, await png(42, 17, { r: 7, g: 7, b: 7 }));
    const twin = await up(bob.token, await png(41, 17, { r: 7, g: 7, b: 7 }));
    await useFile(s, bob.userId, twin, 'attachments');
    const goneMessage = await sendWith(gone);
    await sendWith(kept);
    const gonePath = s.blobs.originalPath(gone);
    t.equal(fs.statSync(gonePath).ino, fs.statSync(s.blobs.originalPath(twin)).ino, 'the twin shares the bytes');
    t.equal((await alice.api.del(`/channels/${channel}/messages/${goneMessage}`)).status, 204);
    const redis = createRedis(s.config.redisUrl);
    t.teardown(() => redis.disconnect());
    const queued = async (id: string) => redis.zscore(s.readModels.key(rm.detachedFiles()), id);
    await until('the deleted attachment to be queued', async () => (await queued(gone)) !== null);
    t.equal(await served(gone), 404, 'a deleted message\'s attachment is not served');
    t.equal(await queued(kept), null, 'an attachment in use is not queued');

    clock = Number(await queued(gone)) + 120_000 - 1;
    t.same(await purge(), [], 'nothing before the retention has passed');
    t.ok(fs.existsSync(gonePath), 'the bytes are kept meanwhile');
    clock += 2;
    t.same(await purge(), [gone], 'purged once the retention has passed');
    t.equal(fs.existsSync(gonePath), false, 'its bytes are gone');
    const last = (await s.store.readStream(`file-${gone}`, { direction: 'backwards', maxCount: 1 }))[0]!;
    t.same([last.type, last.data], ['FileExpired', { reason: 'detached' }], 'the file\'s stream records why');
    await until('the purged record to go', async () => (await loadFile(s.deps, gone)) === null);
    await until('the queue to drop it', async () => (await queued(gone)) === null);
    t.same(await purge(), [], 'purged once only');
    t.same([await served(kept), await served(twin)], [200, 200], 'the attachment in use and the twin with the same bytes are still served');
    t.ok(fs.existsSync(s.blobs.originalPath(twin)), 'the shared bytes stay for the twin');

    // An id whose record is gone (a rebuild that replayed the purge before the detachment) leaves the queue.
    await redis.zadd(s.readModels.key(rm.detachedFiles()), 1, gone);
    t.same(await purge(), [], 'a stale entry is not purged again');
    t.equal(await queued(gone), null, 'and is dropped from the queue');
  });

  t.test('rebuild equals live', async (t) => {
    const redis = createRedis(s.config.redisUrl);
    t.teardown(() => redis.disconnect());
    const dump = async () => {
      const gp = generationPrefix(s.prefix, Number(await redis.get(controlKeys(s.prefix).generation)));
      const all = await dumpGeneration(redis, gp);
      return Object.fromEntries(Object.entries(all).filter(([k]) => k.startsWith('file:') || k === rm.unattachedFiles() || k === rm.detachedFiles()));
    };
    const live = await dump();
    await rebuild({ store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions, projections: PROJECTIONS, log: createLogger('silent') });
    await waitServing(s);
    t.same(await dump(), live);
  });
});

t.test('the worker role purges on its sweep timer with the configured retention', async (t) => {
  // Two services: one keeps detached bytes for an hour, one purges them at the next sweep (every 200 ms).
  for (const [retention, purged] of [['3600000', false], ['0', true]] as const) {
    const s = await startTestService(t, { RATE_LIMITS: 'off', FILE_SWEEP_INTERVAL_MS: '200', DETACHED_FILE_RETENTION_MS: retention });
    const alice = await signup(s);
    const up = await upload(s, alice.token, 'attachments', await png(43, 17, { r: 5, g: 6, b: 7 }), { filename: 'x.png', contentType: 'image/png' });
    t.equal(up.status, 200, up.text);
    const group = await alice.api.post('/channels/create', { name: 'timer', users: [] });
    const sent = await alice.api.post(`/channels/${group.body._id}/messages`, { attachments: [up.body.id] });
    t.equal(sent.status, 200, sent.text);
    const bytes = s.blobs.originalPath(up.body.id as string);
    t.ok(fs.existsSync(bytes));
    t.equal((await alice.api.del(`/channels/${group.body._id}/messages/${sent.body._id}`)).status, 204);
    if (purged) {
      await until('the timer to purge the bytes', async () => !fs.existsSync(bytes), WAIT_MS);
      t.pass('retention 0: purged by the timer');
    } else {
      await new Promise((r) => setTimeout(r, 1500));
      t.ok(fs.existsSync(bytes), 'retention 1 h: kept after several sweeps');
    }
  }
});

t.test('upload rate limits are counted per user: a new session does not reset them', async (t) => {
  const s = await startTestService(t, { FILE_SWEEP_INTERVAL_MS: '0' });
  const u = await signup(s);
  // A form without a file is refused at once (400), after being counted in the catch-all bucket (20 / 10 s).
  const statuses: number[] = [];
  for (let i = 0; i < 20; i++) statuses.push((await upload(s, u.token, 'attachments', undefined)).status);
  t.same(new Set(statuses), new Set([400]), '20 counted requests');
  t.equal((await upload(s, u.token, 'attachments', undefined)).status, 429, 'the 21st is refused');
  const login = await client(s).post('/auth/session/login', { email: u.email, password: u.password, friendly_name: 'again' });
  t.equal(login.status, 200, login.text);
  t.not(login.body.token, u.token);
  const again = await upload(s, login.body.token, 'attachments', undefined);
  t.equal(again.status, 429, 'logging in again does not reset the budget');
  t.equal(again.headers.get('x-ratelimit-remaining'), '0');
  const other = await signup(s);
  t.equal((await upload(s, other.token, 'attachments', undefined)).status, 400, 'another user has a budget of their own');
});
