// The published stoat.js client as a bot (`client.loginBot`) against this service: a user's client creates the
// bot and invites it to a server (the bot invite; Stoat refuses invite codes to bots), the bot's client gets
// ServerCreate, sends a message, and the user's client receives it; a webhook's message reaches both clients;
// a token reset logs the bot's client out. Every answer is checked against the stoat-api OpenAPI document.
import t from 'tap';
import { Client } from 'stoat.js';
import { startTestService } from './helpers/service.ts';
import { assertTraffic, clearClientIntervalsAtTeardown, installWebSocket, traceClients } from './helpers/realClients.ts';
import { until } from './helpers/wait.ts';
import { signup } from './helpers/http.ts';
import { runAdmin } from '../src/cli/accountsAdmin.ts';

installWebSocket();

t.test('stoat.js logs in as a bot, joins by the bot invite and talks to a user', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const traffic = traceClients(t, s);
  clearClientIntervalsAtTeardown(t);
  const config = await (await fetch(`${s.apiUrl}/`)).json();

  // The user: a stoat.js client with a session.
  const user = new Client({ baseURL: s.apiUrl, autoReconnect: false }, config);
  t.teardown(() => user.events.disconnect());
  const email = `botowner${process.pid}@example.test`;
  await user.api.post('/auth/account/create', { email, password: 'correct horse battery' });
  const session = await user.api.post('/auth/session/login', { email, password: 'correct horse battery', friendly_name: 'owner' });
  if (session.result !== 'Success') throw new Error('login failed');
  user.useExistingSession(session);
  await user.api.post('/onboard/complete', { username: `botowner${process.pid}` });
  const userReady = new Promise<void>((resolve) => user.once('ready', () => resolve()));
  user.connect();
  await userReady;

  const made = await user.api.post('/bots/create', { name: `stoatbot${process.pid}` });
  t.equal(made.user.bot?.owner, user.user!.id);
  const server = await user.servers.createServer({ name: 'Bot server' });
  const channel = server.channels[0]!;

  // The bot: loginBot with its token; X-Bot-Token on REST and the token in Authenticate.
  const bot = new Client({ baseURL: s.apiUrl, autoReconnect: false }, config);
  t.teardown(() => bot.events.disconnect());
  const botReady = new Promise<void>((resolve) => bot.once('ready', () => resolve()));
  await bot.loginBot(made.token);
  await botReady;
  t.equal(bot.user?.id, made._id, 'the bot is ready as its user');
  t.equal(bot.user?.bot?.owner, user.user!.id, 'with its owner');

  const invite = await channel.createInvite();
  await t.rejects(bot.api.post(`/invites/${invite._id}` as '/invites/{target}'), 'an invite code is not for bots (IsBot)');

  const joined = new Promise<void>((resolve) => bot.on('serverCreate', (srv) => srv.id === server.id && resolve()));
  await user.api.post(`/bots/${made._id}/invite` as '/bots/{target}/invite', { server: server.id });
  await joined;
  const botChannel = await until('the bot sees the channel', () => bot.channels.get(channel.id));

  const heard = new Promise<string>((resolve) => user.on('messageCreate', (m) => m.authorId === made._id && resolve(m.content)));
  const sent = await botChannel.sendMessage('hello from a bot');
  t.equal(sent.authorId, made._id);
  t.equal(await heard, 'hello from a bot', "the user's client received the bot's message");
  t.equal(user.users.get(made._id)?.bot?.owner, user.user!.id, 'the user knows the author is a bot');

  // A webhook's message reaches both clients.
  const hook = await user.api.post(`/channels/${channel.id}/webhooks` as '/channels/{target}/webhooks', { name: 'CI' });
  const botHeard = new Promise<unknown>((resolve) => bot.on('messageCreate', (m) => m.authorId === hook.id && resolve(m.content)));
  const userHeard = new Promise<unknown>((resolve) => user.on('messageCreate', (m) => m.authorId === hook.id && resolve(m.content)));
  const res = await fetch(`${s.apiUrl}/webhooks/${hook.id}/${hook.token}`, { method: 'POST', body: JSON.stringify({ content: 'deployed' }) });
  t.equal(res.status, 200);
  t.equal(await botHeard, 'deployed');
  t.equal(await userHeard, 'deployed');
  await user.api.delete(`/webhooks/${hook.id}` as '/webhooks/{webhook_id}');
  t.equal((await fetch(`${s.apiUrl}/webhooks/${hook.id}/${hook.token}`)).status, 404, 'deleted by the user');

  // A token reset logs the bot out.
  const loggedOut = new Promise<void>((resolve) => bot.events.on('event', (e: { type: string }) => e.type === 'Logout' && resolve()));
  await user.api.patch(`/bots/${made._id}` as '/bots/{target}', { remove: ['Token'] });
  await loggedOut;
  await t.rejects(bot.api.get('/users/@me'), 'the old token no longer works');

  assertTraffic(t, traffic);
});

// Issue 35: stoat.js as a bot whose owner is banned: the bot's client is logged out, its REST calls are
// refused; once the ban is lifted, loginBot with the same token works again.
t.test('stoat.js bot: logged out when its owner is banned, back once the ban is lifted', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  clearClientIntervalsAtTeardown(t);
  const config = await (await fetch(`${s.apiUrl}/`)).json();
  const [owner, admin] = await Promise.all([signup(s), signup(s)]);
  await runAdmin(['grant', admin.userId, '--role', 'admin'], { store: s.store, print: () => {} });
  await until('admin granted', async () => (await s.readModels.hgetJson('instance:staff', admin.userId)) === 'admin');
  const made = (await owner.api.post('/bots/create', { name: `bannedbot${process.pid}` })).body as { _id: string; token: string };

  const login = async () => {
    const bot = new Client({ baseURL: s.apiUrl, autoReconnect: false }, config);
    t.teardown(() => bot.events.disconnect());
    const ready = new Promise<void>((resolve) => bot.once('ready', () => resolve()));
    await bot.loginBot(made.token);
    await ready;
    return bot;
  };
  const bot = await login();
  t.equal(bot.user?.id, made._id, 'the bot is ready');
  const loggedOut = new Promise<void>((resolve) => bot.events.on('event', (e: { type: string }) => e.type === 'Logout' && resolve()));
  t.equal((await admin.api.post(`/admin/users/${owner.userId}/ban`, { reason: 'spam' })).status, 200);
  await loggedOut;
  t.pass("the bot's client got Logout");
  await t.rejects(bot.api.get('/users/@me'), 'its token is refused on REST');
  t.equal((await admin.api.post(`/admin/users/${owner.userId}/lift`, { reason: 'appeal' })).status, 200);
  const again = await login();
  t.equal((await again.api.get('/users/@me'))._id, made._id, 'after the lift the same token works again');
});
