/**
 * Issue 35 finding 1: a bot does not outlive a sanction. After each of: the bot suspended or banned by the
 * instance staff, its owner suspended or banned, its owner's account disabled, its owner's account deleted —
 * `X-Bot-Token` answers 401 on REST (on this API process and on a second one with its own fact cache), the bot's
 * open sockets get Logout and close, and `Authenticate` with the token is refused. A lifted sanction (on the bot
 * or on its owner) lets the bot work again. A deleted account's bots are deleted with it, by events in the log
 * (`BotDeleted`, `BotDisowned`), and rebuild equals live.
 */
import t from 'tap';
import { runAdmin } from '../src/cli/accountsAdmin.ts';
import { request, signup, type TestUser } from './helpers/http.ts';
import { createServer, dumpCurrent, dumpRebuild } from './helpers/servers.ts';
import { startTestService, type TestService } from './helpers/service.ts';
import { connectReady, connectWs, type WsClient } from './helpers/ws.ts';
import { until } from './helpers/wait.ts';

async function grant(s: TestService, u: TestUser, role: 'moderator' | 'admin'): Promise<void> {
  const out: string[] = [];
  const code = await runAdmin(['grant', u.userId, '--role', role], { store: s.store, print: (l) => out.push(l), error: (l) => out.push(l) });
  if (code !== 0) throw new Error(out.join('\n'));
  await until(`${role} granted`, async () => (await s.readModels.hgetJson<string>('instance:staff', u.userId)) === role);
}

interface Bot {
  id: string;
  token: string;
  channel: string;
}

/** Whether a socket was logged out (a Logout frame, or closed by the server). */
async function loggedOut(ws: WsClient): Promise<boolean> {
  await Promise.race([ws.waitFor((e) => e.type === 'Logout', 20_000).catch(() => undefined), ws.closed]);
  await ws.closed;
  return true;
}

/** Whether `Authenticate` with the token is refused (an `Error` frame and a closed socket, never Ready). */
async function refused(s: Pick<TestService, 'apiUrl'>, token: string): Promise<string | undefined> {
  const ws = connectWs(s, { token });
  // Either the server closes the socket, or it answers Ready (then the token was accepted: close it ourselves).
  await Promise.race([ws.closed, ws.ready().then(() => ws.close(), () => undefined)]);
  await ws.closed;
  if (ws.events.some((e) => e.type === 'Ready')) return undefined;
  return ws.frames.find((f) => f.type === 'Error')?.data?.type as string | undefined;
}

type T = Pick<typeof t, 'ok' | 'same' | 'equal' | 'pass'>;

t.test('a bot does not outlive a sanction', async (t) => {
  // The service's clock, moved forward to end a timed suspension.
  let skew = 0;
  const s = await startTestService(t, { RATE_LIMITS: 'off', BOT_LIMIT: '5' }, { now: () => Date.now() + skew });
  // A second API process (its own fact cache) on the same store and read models.
  const other = await startTestService(t, { RATE_LIMITS: 'off', DATA_DIR: s.dataDir, REDIS_PREFIX: s.prefix, ROLES: 'api' });
  const [mod, admin] = await Promise.all([signup(s), signup(s)]);
  await grant(s, mod, 'moderator');
  await grant(s, admin, 'admin');
  let n = 0;

  const post = (base: string, bot: Bot) =>
    request(base, 'POST', `/channels/${bot.channel}/messages`, { headers: { 'X-Bot-Token': bot.token }, body: { content: `from ${bot.id}` } });
  /** REST on both API processes: the send's status on each. */
  const sends = async (bot: Bot) => [(await post(s.apiUrl, bot)).status, (await post(other.apiUrl, bot)).status];
  const me = async (bot: Bot) => {
    const r = await request(s.apiUrl, 'GET', '/users/@me', { headers: { 'X-Bot-Token': bot.token } });
    return [r.status, r.body?.type];
  };

  /** A bot of `owner`, in a server of the owner's, that can post there. */
  async function botOf(owner: TestUser): Promise<Bot> {
    const made = await owner.api.post('/bots/create', { name: `sanctioned${process.pid}x${n++}` });
    if (made.status !== 200) throw new Error(`bot create ${made.status} ${made.text}`);
    const server = await createServer(owner);
    const invited = await owner.api.post(`/bots/${made.body._id}/invite`, { server: server.id });
    if (invited.status !== 204) throw new Error(`bot invite ${invited.status} ${invited.text}`);
    const bot = { id: made.body._id as string, token: made.body.token as string, channel: server.general };
    await until('the bot can post', async () => (await post(s.apiUrl, bot)).status === 200);
    return bot;
  }

  /** Checks that the bot works on REST (both processes) and on the gateway. */
  async function works(t: T, bot: Bot, what: string): Promise<void> {
    t.same(await sends(bot), [200, 200], `${what}: the bot posts (both API processes)`);
    const ws = await connectReady(s, bot.token);
    t.pass(`${what}: Authenticate gives Ready`);
    ws.close();
  }

  /** Checks that the bot is stopped everywhere, and that its socket open before was logged out. */
  async function stopped(t: T, bot: Bot, ws: WsClient, what: string): Promise<void> {
    t.ok(await loggedOut(ws), `${what}: the bot's open socket is logged out and closed`);
    t.same(await sends(bot), [401, 401], `${what}: REST answers 401 on both API processes`);
    t.same(await me(bot), [401, 'InvalidSession'], `${what}: 401 InvalidSession`);
    t.equal(await refused(s, bot.token), 'InvalidSession', `${what}: Authenticate is refused`);
    t.equal(await refused(other, bot.token), 'InvalidSession', `${what}: on the second process too`);
  }

  t.test('the bot suspended, then lifted; banned, then lifted', async (t) => {
    const owner = await signup(s);
    const bot = await botOf(owner);
    await works(t, bot, 'before');
    let ws = await connectReady(other, bot.token);
    const suspended = await mod.api.post(`/admin/users/${bot.id}/suspend`, { reason: 'spam bot' });
    t.match(suspended, { status: 200, body: { kind: 'suspended' } });
    await stopped(t, bot, ws, 'bot suspended');
    t.equal((await owner.api.get(`/bots/${bot.id}`)).status, 200, 'the owner still manages the bot');

    t.match(await admin.api.post(`/admin/users/${bot.id}/lift`, { reason: 'appeal' }), { status: 200, body: { kind: 'none' } });
    await works(t, bot, 'suspension lifted');

    ws = await connectReady(s, bot.token);
    t.match(await admin.api.post(`/admin/users/${bot.id}/ban`, { reason: 'malware' }), { status: 200, body: { kind: 'banned' } });
    await stopped(t, bot, ws, 'bot banned');
    t.match(await admin.api.post(`/admin/users/${bot.id}/lift`, { reason: 'mistake' }), { status: 200, body: { kind: 'none' } });
    await works(t, bot, 'ban lifted');
  });

  t.test('a timed suspension of the bot ends by itself', async (t) => {
    const owner = await signup(s);
    const bot = await botOf(owner);
    const ws = await connectReady(s, bot.token);
    t.equal((await mod.api.post(`/admin/users/${bot.id}/suspend`, { reason: 'cool off', duration_days: 1 })).status, 200);
    skew = 3_600_000;
    await stopped(t, bot, ws, 'bot suspended for a day');
    t.equal((await post(s.apiUrl, bot)).status, 401, 'an hour later: still suspended');
    skew = 86_400_000 + 60_000;
    t.teardown(() => void (skew = 0));
    t.equal((await post(s.apiUrl, bot)).status, 200, 'a day later the suspension has ended by itself: the bot posts again');
    skew = 0;
  });

  t.test('the owner suspended, then banned, then lifted', async (t) => {
    const owner = await signup(s);
    const [a, b] = [await botOf(owner), await botOf(owner)];
    const wsA = await connectReady(s, a.token);
    const wsB = await connectReady(other, b.token);
    t.equal((await mod.api.post(`/admin/users/${owner.userId}/suspend`, { reason: 'runs spam bots' })).status, 200);
    await stopped(t, a, wsA, 'owner suspended (bot a)');
    await stopped(t, b, wsB, 'owner suspended (bot b)');
    t.match(await admin.api.post(`/admin/users/${owner.userId}/lift`, { reason: 'appeal' }), { status: 200, body: { kind: 'none' } });
    await works(t, a, 'owner lifted (bot a)');
    await works(t, b, 'owner lifted (bot b)');

    const ws = await connectReady(s, a.token);
    t.equal((await admin.api.post(`/admin/users/${owner.userId}/ban`, { reason: 'again' })).status, 200);
    await stopped(t, a, ws, 'owner banned');
    t.same(await sends(b), [401, 401], 'owner banned: the other bot too');
    t.equal((await admin.api.post(`/admin/users/${owner.userId}/lift`, { reason: 'appeal' })).status, 200);
    await works(t, a, 'owner ban lifted');
  });

  t.test('the owner disables their account', async (t) => {
    const owner = await signup(s);
    const bot = await botOf(owner);
    const ws = await connectReady(other, bot.token);
    const ticket = await owner.api.put('/auth/mfa/ticket', { password: owner.password });
    t.equal(ticket.status, 200);
    t.equal((await owner.api.post('/auth/account/disable', undefined, { headers: { 'X-MFA-Ticket': ticket.body.token } })).status, 204);
    await stopped(t, bot, ws, 'owner disabled');
  });

  t.test('the owner deletes their account: their bots are deleted with it', async (t) => {
    const owner = await signup(s);
    const [a, b] = [await botOf(owner), await botOf(owner)];
    const keep = await botOf(await signup(s));
    const ws = await connectReady(s, a.token);
    const ticket = await owner.api.put('/auth/mfa/ticket', { password: owner.password });
    t.equal((await owner.api.post('/auth/account/delete', undefined, { headers: { 'X-MFA-Ticket': ticket.body.token } })).status, 204);
    await stopped(t, a, ws, 'owner deleted');
    t.same(await sends(b), [401, 401], 'owner deleted: the other bot too');
    for (const bot of [a, b]) {
      const events = (await s.store.readStream(`account-${bot.id}`)).map((e) => e.type);
      t.equal(events.at(-1), 'BotDeleted', 'BotDeleted is in the bot\'s stream');
      const user = await mod.api.get(`/users/${bot.id}`);
      t.equal(user.body.username, 'Deleted User', 'the bot shows as a deleted user');
    }
    const owned = (await s.store.readStream(`bots-${owner.userId}`)).map((e) => [e.type, (e.data as { botId: string }).botId]);
    t.same(owned.filter(([type]) => type === 'BotDisowned').map(([, id]) => id).sort(), [a.id, b.id].sort(), 'BotDisowned for each bot');
    t.same(await s.readModels.getJson(`bots:${owner.userId}`), { ids: [], revision: owned.length - 1 }, 'the owner owns no bot');
    t.same(await sends(keep), [200, 200], "another user's bot is untouched");
  });

  t.test('rebuild equals live', async (t) => {
    const live = await dumpCurrent(s.redis, s.prefix);
    t.same(await dumpRebuild(t, s.redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions }), live);
  });
});
