/**
 * The media server's moderator route (issue 38; Stoat's `/mod/…` behind an admin key): GET
 * /mod/:tag/:id/:filename serves any stored file — one never used, and one detached by a deleted message,
 * which the public routes no longer serve — to an instance moderator's or admin's session (X-Session-Token).
 * Anyone else (no session, a bad one, an ordinary user, the uploader) gets 404, as for a file that is not there.
 */
import t from 'tap';
import { runAdmin } from '../src/cli/accountsAdmin.ts';
import { signup, type TestUser } from './helpers/http.ts';
import { get, png, upload } from './helpers/media.ts';
import { createServer } from './helpers/servers.ts';
import { startTestService, type TestService } from './helpers/service.ts';
import { until } from './helpers/wait.ts';

async function grant(s: TestService, u: TestUser, role: 'moderator' | 'admin'): Promise<void> {
  if ((await runAdmin(['grant', u.userId, '--role', role], { store: s.store, print: () => {}, error: () => {} })) !== 0) throw new Error('grant failed');
  await until(`${role} granted`, async () => (await s.readModels.hgetJson<string>('instance:staff', u.userId)) === role);
}

t.test('GET /mod/:tag/:id/:filename: any file for staff, 404 for everyone else', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [alice, mod, admin, bob] = await Promise.all([signup(s), signup(s), signup(s), signup(s)]);
  await grant(s, mod, 'moderator');
  await grant(s, admin, 'admin');
  const bytes = await png(8, 8);

  // Never used: the public route does not serve it, the moderator's does.
  const unused = await upload(s, alice.token, 'attachments', bytes, { filename: 'evidence.png', contentType: 'image/png' });
  t.equal(unused.status, 200);
  const id = unused.body.id as string;
  t.equal((await get(`${s.mediaUrl}/attachments/${id}/evidence.png`)).status, 404, 'the public route: not yet used');
  const asMod = await get(`${s.mediaUrl}/mod/attachments/${id}/evidence.png`, { 'X-Session-Token': mod.token });
  t.equal(asMod.status, 200);
  t.ok(asMod.bytes.length > 0);
  t.equal(asMod.headers.get('x-content-type-options'), 'nosniff');
  t.equal(asMod.headers.get('cache-control'), 'private, no-store');
  t.equal((await get(`${s.mediaUrl}/mod/attachments/${id}/original`, { 'X-Session-Token': admin.token })).status, 200, 'an admin too, by `original`');

  for (const [who, headers] of [
    ['no session', {}],
    ['an invalid session', { 'X-Session-Token': 'x'.repeat(64) }],
    ['an ordinary user', { 'X-Session-Token': bob.token }],
    ['the uploader', { 'X-Session-Token': alice.token }],
  ] as const) {
    const r = await get(`${s.mediaUrl}/mod/attachments/${id}/evidence.png`, headers);
    t.equal(r.status, 404, who);
  }
  t.equal((await get(`${s.mediaUrl}/mod/attachments/${id}/other.png`, { 'X-Session-Token': mod.token })).status, 404, 'another filename');
  t.equal((await get(`${s.mediaUrl}/mod/avatars/${id}/evidence.png`, { 'X-Session-Token': mod.token })).status, 404, 'another tag');
  t.equal((await get(`${s.mediaUrl}/mod/nosuchtag/${id}/evidence.png`, { 'X-Session-Token': mod.token })).status, 404, 'an unknown tag');

  // Detached: sent, then the message deleted — gone from the public route, still there for staff.
  const srv = await createServer(alice);
  const sent = await upload(s, alice.token, 'attachments', bytes, { filename: 'sent.png', contentType: 'image/png' });
  const m = await alice.api.post(`/channels/${srv.general}/messages`, { content: 'look', attachments: [sent.body.id] });
  t.equal(m.status, 200);
  t.equal((await get(`${s.mediaUrl}/attachments/${sent.body.id}/sent.png`)).status, 200, 'served while attached');
  t.equal((await alice.api.del(`/channels/${srv.general}/messages/${m.body._id}`)).status, 204);
  await until('detached', async () => ((await get(`${s.mediaUrl}/attachments/${sent.body.id}/sent.png`)).status === 404 ? true : undefined));
  t.equal((await get(`${s.mediaUrl}/mod/attachments/${sent.body.id}/sent.png`, { 'X-Session-Token': mod.token })).status, 200, 'staff still get a detached file');
  t.equal((await get(`${s.mediaUrl}/mod/attachments/${sent.body.id}/sent.png`, { 'X-Session-Token': bob.token })).status, 404);
});
