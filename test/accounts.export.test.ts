/**
 * A user's own data (issue 39 part 4): GET /auth/account/export streams a ZIP of JSON files — account,
 * profile, settings, relationships, DMs and groups, the messages they sent (edits and deletions too), their
 * uploads' metadata and bytes — to the signed-in user only; with TOTP on, only with a fresh validated MFA
 * ticket, used once.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import t from 'tap';
import { totp } from './helpers/totp.ts';
import { request, signup, type TestUser } from './helpers/http.ts';
import { uploadImage } from './helpers/messages.ts';
import { startTestService, tempDir, type TestService } from './helpers/service.ts';

/** GETs the export as bytes. */
async function exportZip(s: TestService, u: TestUser | null, headers: Record<string, string> = {}): Promise<{ status: number; type: string | null; bytes: Buffer }> {
  const res = await fetch(`${s.apiUrl}/auth/account/export`, { headers: { ...(u ? { 'X-Session-Token': u.token } : {}), ...headers } });
  return { status: res.status, type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) };
}

t.test('GET /auth/account/export', async (t) => {
  let offset = 0;
  const now = () => Date.now() + offset;
  const s = await startTestService(t, { RATE_LIMITS: 'off' }, { now });
  const dir = tempDir(t, 'account-export');
  const [alice, bob] = await Promise.all([signup(s), signup(s)]);
  t.equal((await alice.api.put(`/users/${bob.userId}/friend`)).status, 200);
  t.equal((await bob.api.put(`/users/${alice.userId}/friend`)).status, 200);
  const dm = (await alice.api.get(`/users/${bob.userId}/dm`)).body._id as string;
  const fileId = await uploadImage(s, alice, 'attachments');
  const first = (await alice.api.post(`/channels/${dm}/messages`, { content: 'hello bob', attachments: [fileId] })).body._id as string;
  const second = (await alice.api.post(`/channels/${dm}/messages`, { content: 'oops' })).body._id as string;
  t.equal((await alice.api.patch(`/channels/${dm}/messages/${first}`, { content: 'hello again bob' })).status, 200);
  t.equal((await alice.api.del(`/channels/${dm}/messages/${second}`)).status, 204);
  await bob.api.post(`/channels/${dm}/messages`, { content: 'bob private words' });
  const set = await request(s.apiUrl, 'POST', `/sync/settings/set?timestamp=${Date.now()}`, { token: alice.token, body: { theme: '"dark"' }, skipOpenApi: true });
  t.equal(set.status, 204);
  const original = Buffer.from(await (await fetch(`${s.mediaUrl}/attachments/${fileId}/original`)).arrayBuffer());
  t.ok(original.length > 0);

  const anon = await exportZip(s, null);
  t.equal(anon.status, 401, 'a stranger (no session) gets 401');
  t.same(JSON.parse(anon.bytes.toString()).type, 'NotAuthenticated');

  const got = await exportZip(s, alice);
  t.equal(got.status, 200);
  t.equal(got.type, 'application/zip');
  const zip = path.join(dir, 'alice.zip');
  fs.writeFileSync(zip, got.bytes);
  const listing = execFileSync('unzip', ['-Z1', zip], { encoding: 'utf8' }).trim().split('\n');
  const read = (name: string) => execFileSync('unzip', ['-p', zip, name], { maxBuffer: 64 << 20 });
  t.same(
    listing.filter((n) => !n.startsWith('uploads/')),
    ['account.json', 'profile.json', 'settings.json', 'relationships.json', 'channels.json', 'messages.jsonl', 'uploads.json'],
    'the JSON files',
  );
  const account = JSON.parse(read('account.json').toString());
  t.match(account, { _id: alice.userId, email: String, mfa: { totp: false } });
  t.notOk(JSON.stringify(account).includes('passwordHash') || JSON.stringify(account).includes('tokenHash'), 'no secrets');
  t.match(JSON.parse(read('profile.json').toString()), { _id: alice.userId, username: alice.username });
  t.same(JSON.parse(read('settings.json').toString()).theme?.[1], '"dark"', 'settings');
  t.match(JSON.parse(read('relationships.json').toString()), [{ _id: bob.userId, status: 'Friend' }]);
  t.ok((JSON.parse(read('channels.json').toString()) as Array<{ _id: string }>).some((c) => c._id === dm), 'the DM is listed');
  const messages = read('messages.jsonl').toString().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  t.same(
    messages.map((m) => [m.kind, m.message, m.content]),
    [
      ['message_sent', first, 'hello bob'],
      ['message_sent', second, 'oops'],
      ['message_edited', first, 'hello again bob'],
      ['message_deleted', second, 'oops'],
    ],
    'the messages they sent, with edits and deletions, in log order',
  );
  t.same(messages[0]!.attachments, [fileId]);
  t.notOk(read('messages.jsonl').toString().includes('bob private words'), "bob's message is not in alice's export");
  const uploads = JSON.parse(read('uploads.json').toString()) as Array<{ _id: string; filename: string }>;
  t.same(uploads.map((u) => u._id), [fileId], 'their uploads');
  const entry = listing.find((n) => n.startsWith(`uploads/${fileId}-`));
  t.ok(entry, 'the upload bytes are in the ZIP');
  t.ok(read(entry!).equals(original), 'byte for byte what the media server serves');

  const bobZip = await exportZip(s, bob);
  fs.writeFileSync(path.join(dir, 'bob.zip'), bobZip.bytes);
  const bobUploads = JSON.parse(execFileSync('unzip', ['-p', path.join(dir, 'bob.zip'), 'uploads.json'], { encoding: 'utf8' }));
  t.same(bobUploads, [], "alice's upload is not bob's");

  t.test('with TOTP on, a fresh validated MFA ticket is needed, once', async (t) => {
    const ticket = (await alice.api.put('/auth/mfa/ticket', { password: alice.password })).body.token as string;
    const secret = (await alice.api.post('/auth/mfa/totp', undefined, { headers: { 'X-MFA-Ticket': ticket } })).body.secret as string;
    t.equal((await alice.api.put('/auth/mfa/totp', { totp_code: totp(secret, now()) })).status, 204);
    const none = await exportZip(s, alice);
    t.same([none.status, JSON.parse(none.bytes.toString()).type], [401, 'InvalidToken'], 'no ticket: 401');
    const forged = await exportZip(s, alice, { 'X-MFA-Ticket': `${alice.userId}.${'A'.repeat(43)}` });
    t.same([forged.status, JSON.parse(forged.bytes.toString()).type], [401, 'InvalidToken'], 'a forged ticket: 401');
    const bobTicket = (await bob.api.put('/auth/mfa/ticket', { password: bob.password })).body.token as string;
    const foreign = await exportZip(s, alice, { 'X-MFA-Ticket': bobTicket });
    t.same([foreign.status, JSON.parse(foreign.bytes.toString()).type], [401, 'InvalidToken'], "another account's ticket: 401");
    offset += 30_000;
    const fresh = (await alice.api.put('/auth/mfa/ticket', { totp_code: totp(secret, now()) })).body.token as string;
    const ok = await exportZip(s, alice, { 'X-MFA-Ticket': fresh });
    t.equal(ok.status, 200, 'with a fresh ticket');
    fs.writeFileSync(path.join(dir, 'mfa.zip'), ok.bytes);
    t.match(JSON.parse(execFileSync('unzip', ['-p', path.join(dir, 'mfa.zip'), 'account.json'], { encoding: 'utf8' })), { mfa: { totp: true } });
    const again = await exportZip(s, alice, { 'X-MFA-Ticket': fresh });
    t.same([again.status, JSON.parse(again.bytes.toString()).type], [401, 'InvalidToken'], 'the ticket is used once');
    offset += 20 * 60_000;
    const stale = await exportZip(s, alice, { 'X-MFA-Ticket': fresh });
    t.equal(stale.status, 401, 'an old ticket neither');
  });

  t.test('an account takes ACCOUNT_EXPORTS_PER_DAY (3) exports a day; one more is 429, others are unaffected', async (t) => {
    const [carol, dave] = await Promise.all([signup(s), signup(s)]);
    for (let i = 1; i <= 3; i++) t.equal((await exportZip(s, carol)).status, 200, `export ${i} of 3`);
    const fourth = await exportZip(s, carol);
    t.equal(fourth.status, 429, 'the fourth in a day');
    t.ok((JSON.parse(fourth.bytes.toString()) as { retry_after: number }).retry_after > 3_600_000, 'retry_after names the rest of the day');
    t.equal((await exportZip(s, dave)).status, 200, "another account's budget is its own");
  });
});
