/**
 * Webhooks (issue 22): creation and listing with ManageWebhooks (present 2xx, absent 403, outsider 404),
 * the token routes (valid and wrong token), execute through the message path (`webhook: {name, avatar}`, the
 * webhook's own permissions, a user's socket receives it), WebhookCreate/Update/Delete only to ManageWebhooks
 * holders, deleting a channel deletes its webhooks, audit entries, the token encrypted at rest, the
 * per-webhook rate-limit bucket, and rebuild equals live.
 */
import t from 'tap';
import { pino } from 'pino';
import type { PersonalDataStore } from '../src/personal/store.ts';
import { Permission as P } from '../src/permissions/bits.ts';
import { BUCKET_LIMITS } from '../src/ratelimit/limiter.ts';
import { controlKeys, readModelKey, rm } from '../src/readmodel/keys.ts';
import { request, signup } from './helpers/http.ts';
import { uploadImage } from './helpers/messages.ts';
import { createServer, dumpCurrent, dumpRebuild, join, roleWith } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';
import { connectReady } from './helpers/ws.ts';

t.test('webhooks', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const owner = await signup(s);
  const manager = await signup(s);
  const plain = await signup(s);
  const outsider = await signup(s);
  const srv = await createServer(owner);
  await join(owner, srv.general, manager, plain);
  await roleWith(owner, srv.id, P.ManageWebhooks, [manager]);
  const managerWs = await connectReady(s, manager.token);
  const plainWs = await connectReady(s, plain.token);
  t.teardown(() => {
    managerWs.close();
    plainWs.close();
  });
  let hook: { id: string; token: string } = { id: '', token: '' };

  t.test('create and list: ManageWebhooks present → 200, absent → 403, outsider → 404', async (t) => {
    const avatar = await uploadImage(s, manager, 'avatars');
    const r = await manager.api.post(`/channels/${srv.general}/webhooks`, { name: 'CI', avatar });
    t.equal(r.status, 200);
    t.equal(r.body.name, 'CI');
    t.equal(r.body.channel_id, srv.general);
    t.equal(r.body.creator_id, manager.userId);
    t.equal(r.body.avatar._id, avatar);
    t.equal(r.body.permissions, Number(P.SendMessage | P.SendEmbeds | P.Masquerade | P.React), "Stoat's default");
    t.type(r.body.token, 'string');
    hook = { id: r.body.id, token: r.body.token };
    t.match(await plain.api.post(`/channels/${srv.general}/webhooks`, { name: 'x' }), { status: 403, body: { type: 'MissingPermission', permission: 'ManageWebhooks' } });
    t.match(await outsider.api.post(`/channels/${srv.general}/webhooks`, { name: 'x' }), { status: 404, body: { type: 'NotFound' } });
    t.match(await request(s.apiUrl, 'POST', `/channels/${srv.general}/webhooks`, { body: { name: 'x' } }), { status: 401, body: { type: 'NotAuthenticated' } });
    t.match(await manager.api.post(`/channels/${srv.general}/webhooks`, { name: '' }), { status: 400, body: { type: 'FailedValidation' } });
    t.match(await manager.api.post(`/channels/${srv.general}/webhooks`, { name: 'x'.repeat(33) }), { status: 400, body: { type: 'FailedValidation' } });
    t.match(await manager.api.post(`/channels/${srv.general}/webhooks`, { name: 'x', avatar }), { status: 404, body: { type: 'NotFound' } }, 'an upload is used once');

    const list = await manager.api.get(`/channels/${srv.general}/webhooks`);
    t.equal(list.status, 200);
    t.same(list.body.map((w: { id: string; token: string }) => [w.id, w.token]), [[hook.id, hook.token]]);
    t.match(await plain.api.get(`/channels/${srv.general}/webhooks`), { status: 403, body: { type: 'MissingPermission', permission: 'ManageWebhooks' } });
    t.match(await outsider.api.get(`/channels/${srv.general}/webhooks`), { status: 404 });

    const fetched = await manager.api.get(`/webhooks/${hook.id}`);
    t.same(fetched.body, { id: hook.id, name: 'CI', avatar, channel_id: srv.general, permissions: r.body.permissions }, 'ResponseWebhook: no token');
    t.match(await plain.api.get(`/webhooks/${hook.id}`), { status: 403, body: { type: 'MissingPermission' } });
    t.match(await outsider.api.get(`/webhooks/${hook.id}`), { status: 404 });

    const created = await managerWs.waitFor((e) => e.type === 'WebhookCreate' && e.id === hook.id);
    t.equal(created.token, undefined, 'events never carry the token');
  });

  t.test('the token routes: a valid token, a wrong one, an unknown webhook', async (t) => {
    const ok = await request(s.apiUrl, 'GET', `/webhooks/${hook.id}/${hook.token}`);
    t.equal(ok.status, 200);
    t.equal(ok.body.id, hook.id);
    t.equal(ok.body.token, hook.token, "Stoat's Webhook: the holder already has it");
    t.match(await request(s.apiUrl, 'GET', `/webhooks/${hook.id}/${hook.token}x`), { status: 401, body: { type: 'NotAuthenticated' } });
    t.match(await request(s.apiUrl, 'GET', `/webhooks/${owner.userId}/${hook.token}`), { status: 404, body: { type: 'NotFound' } });
  });

  t.test('execute: a message with webhook {name, avatar} that a user socket receives; a wrong token sends nothing', async (t) => {
    const from = plainWs.events.length;
    const r = await request(s.apiUrl, 'POST', `/webhooks/${hook.id}/${hook.token}`, { body: { content: 'build passed', masquerade: { name: 'Jenkins' } } });
    t.equal(r.status, 200);
    t.equal(r.body.author, hook.id);
    t.same(r.body.webhook, { name: 'CI', avatar: (await manager.api.get(`/webhooks/${hook.id}`)).body.avatar });
    t.equal(r.body.content, 'build passed');
    const got = await plainWs.waitFor((e) => e.type === 'Message' && e._id === r.body._id, undefined, from);
    t.same(got.webhook, r.body.webhook, 'the member hears it with its webhook');
    const history = await plain.api.get(`/channels/${srv.general}/messages?limit=1`);
    t.equal(history.body[0]._id, r.body._id);

    const head = await s.store.streamRevision(`webhook-${hook.id}`);
    const wrong = await request(s.apiUrl, 'POST', `/webhooks/${hook.id}/not-the-token`, { body: { content: 'spoofed' } });
    t.match(wrong, { status: 401, body: { type: 'NotAuthenticated' } });
    t.equal((await plain.api.get(`/channels/${srv.general}/messages?limit=1`)).body[0]._id, r.body._id, 'nothing was sent');
    t.equal(await s.store.streamRevision(`webhook-${hook.id}`), head);
    const file = await uploadImage(s, manager, 'attachments');
    t.match(await request(s.apiUrl, 'POST', `/webhooks/${hook.id}/${hook.token}`, { body: { content: 'x', attachments: [file] } }), { status: 403, body: { type: 'MissingPermission', permission: 'UploadFiles' } }, "the webhook's own permissions");
    t.match(await request(s.apiUrl, 'POST', `/webhooks/${hook.id}/${hook.token}`, { body: {} }), { status: 422, body: { type: 'EmptyMessage' } });
    t.match(await request(s.apiUrl, 'POST', `/webhooks/${hook.id}/${hook.token}`, { body: { content: 'x', flags: 4 } }), { status: 400, body: { type: 'IsNotBot' } });
  });

  t.test("a webhook edits and deletes its own messages (Stoat's webhook_edit_message.rs, webhook_delete_message.rs)", async (t) => {
    const H = `/webhooks/${hook.id}/${hook.token}`;
    const sent = (await request(s.apiUrl, 'POST', H, { body: { content: 'deploying' } })).body;
    const mine = (await plain.api.post(`/channels/${srv.general}/messages`, { content: 'a member\'s' })).body;
    const from = plainWs.events.length;
    const edited = await request(s.apiUrl, 'PATCH', `${H}/${sent._id}`, { body: { content: 'deployed', embeds: [{ title: 'v2', description: 'done' }] } });
    t.equal(edited.status, 200, edited.text);
    t.equal(edited.body.content, 'deployed');
    t.match(edited.body.embeds, [{ type: 'Text', title: 'v2', description: 'done' }]);
    t.match(edited.body.edited, /^\d{4}-\d\d-\d\dT/, 'edited is set');
    t.same(edited.body.webhook, sent.webhook, 'still the webhook\'s');
    const upd = await plainWs.waitFor((e) => e.type === 'MessageUpdate' && e.id === sent._id, undefined, from);
    t.equal(upd.data.content, 'deployed', 'members hear of the edit');
    t.equal((await plain.api.get(`/channels/${srv.general}/messages/${sent._id}`)).body.content, 'deployed');
    // Refusals: another author's message, a wrong token, unknown ids, bad bodies; nothing changes.
    const head = await s.store.streamRevision(`message-${mine._id}`);
    t.match(await request(s.apiUrl, 'PATCH', `${H}/${mine._id}`, { body: { content: 'hijack' } }), { status: 403, body: { type: 'CannotEditMessage' } });
    t.match(await request(s.apiUrl, 'DELETE', `${H}/${mine._id}`), { status: 403, body: { type: 'CannotDeleteMessage' } });
    t.equal(await s.store.streamRevision(`message-${mine._id}`), head, "a member's message is untouched");
    t.match(await request(s.apiUrl, 'PATCH', `/webhooks/${hook.id}/not-the-token/${sent._id}`, { body: { content: 'spoof' } }), { status: 401, body: { type: 'NotAuthenticated' } });
    t.match(await request(s.apiUrl, 'DELETE', `/webhooks/${hook.id}/not-the-token/${sent._id}`), { status: 401, body: { type: 'NotAuthenticated' } });
    t.match(await request(s.apiUrl, 'PATCH', `${H}/01HZZZZZZZZZZZZZZZZZZZZZZZ`, { body: { content: 'x' } }), { status: 404, body: { type: 'NotFound' } });
    t.match(await request(s.apiUrl, 'PATCH', `${H}/${sent._id}`, { body: { content: 'x'.repeat(2001) } }), { status: 400, body: { type: 'FailedValidation' } });
    t.match(await request(s.apiUrl, 'PATCH', `${H}/${sent._id}`, { body: { content: 'x'.repeat(1990), embeds: [{ title: 'y'.repeat(20) }] } }), { status: 422, body: { type: 'PayloadTooLarge' } });
    t.match(await request(s.apiUrl, 'PATCH', `${H}/${sent._id}`, { body: { colour: 'red' } }), { status: 400, body: { type: 'FailedValidation' } });
    // A message of another channel is not this webhook's to touch, even with its id.
    const other = await owner.api.post(`/servers/${srv.id}/channels`, { name: 'elsewhere' });
    const far = (await owner.api.post(`/channels/${other.body._id}/messages`, { content: 'far' })).body;
    t.match(await request(s.apiUrl, 'DELETE', `${H}/${far._id}`), { status: 404, body: { type: 'NotFound' } });
    // Delete: 204, members hear it, and it is gone.
    const del = await request(s.apiUrl, 'DELETE', `${H}/${sent._id}`);
    t.equal(del.status, 204);
    await plainWs.waitFor((e) => e.type === 'MessageDelete' && e.id === sent._id, undefined, from);
    t.equal((await plain.api.get(`/channels/${srv.general}/messages/${sent._id}`)).status, 404);
    t.match(await request(s.apiUrl, 'DELETE', `${H}/${sent._id}`), { status: 404, body: { type: 'NotFound' } }, 'deleted twice');
  });

  t.test("Stoat's GitHub adaptor: a push becomes one embed; ping posts nothing; unknown events and bad payloads are refused", async (t) => {
    const gh = (event: string | undefined, body: unknown, token = hook.token) =>
      request(s.apiUrl, 'POST', `/webhooks/${hook.id}/${token}/github`, { body, headers: event === undefined ? {} : { 'X-GitHub-Event': event }, skipOpenApi: true });
    const sender = { login: 'octocat', avatar_url: 'https://avatars.example/o.png', html_url: 'https://github.com/octocat' };
    const repository = { full_name: 'octo/repo', html_url: 'https://github.com/octo/repo' };
    const before = (await plain.api.get(`/channels/${srv.general}/messages?limit=1`)).body[0]._id;
    t.equal((await gh('ping', { zen: 'Keep it logically awesome.', hook_id: 1 })).status, 204);
    t.equal((await plain.api.get(`/channels/${srv.general}/messages?limit=1`)).body[0]._id, before, 'ping: nothing posted');
    const push = {
      ref: 'refs/heads/main',
      after: '0123456789abcdef0123456789abcdef01234567',
      compare: 'https://github.com/octo/repo/compare/a...b',
      forced: false,
      commits: [{ id: 'abcdef0123456789', url: 'https://github.com/octo/repo/commit/abcdef0', message: 'Fix the build\n\nlong body', author: { name: 'Octo Cat' } }],
      sender,
      repository,
    };
    t.equal((await gh('push', push)).status, 204);
    const [m] = (await plain.api.get(`/channels/${srv.general}/messages?limit=1`)).body;
    t.equal(m.author, hook.id);
    t.match(m.webhook, { name: 'CI' });
    t.equal(m.embeds.length, 1);
    t.match(m.embeds[0], { type: 'Text', title: 'octocat', url: 'https://github.com/octocat', icon_url: 'https://avatars.example/o.png', colour: '#279adc' });
    // Stoat cuts a multi-line message's first line by three characters even when it is short (its `shorten_single_line_text`).
    t.equal(m.embeds[0].description, '#### [[octo/repo:main] 1 new commit](https://github.com/octo/repo/compare/a...b)\n[`abcdef01`](https://github.com/octo/repo/commit/abcdef0) Fix the bu... - Octo Cat');
    t.equal((await gh('star', { action: 'deleted', sender, repository })).status, 204, 'an unstarring posts nothing');
    t.equal((await plain.api.get(`/channels/${srv.general}/messages?limit=1`)).body[0]._id, m._id);
    t.equal((await gh('issues', { action: 'opened', issue: { number: 7, title: 'Bug', html_url: 'https://github.com/octo/repo/issues/7', body: 'x'.repeat(600) }, sender, repository })).status, 204);
    const issue = (await plain.api.get(`/channels/${srv.general}/messages?limit=1`)).body[0];
    t.ok(issue.embeds[0].description.endsWith('x'.repeat(447) + '...'), 'the body is cut to 450');
    t.match(await gh('workflow_run', { sender, repository }), { status: 400, body: { type: 'InvalidOperation' } }, 'an event Stoat does not know');
    t.match(await gh('push', { sender, repository }), { status: 400, body: { type: 'InvalidOperation' } }, 'a payload without its fields');
    t.match(await gh(undefined, push), { status: 400, body: { type: 'FailedValidation' } }, 'no X-GitHub-Event');
    t.match(await gh('push', push, 'wrong'), { status: 401, body: { type: 'NotAuthenticated' } });
  });

  t.test('edit and events: WebhookUpdate to ManageWebhooks holders only', async (t) => {
    const from = plainWs.events.length;
    const r = await request(s.apiUrl, 'PATCH', `/webhooks/${hook.id}/${hook.token}`, { body: { name: 'CI bot', remove: ['Avatar'] } });
    t.equal(r.status, 200);
    t.equal(r.body.name, 'CI bot');
    t.equal(r.body.avatar, undefined);
    const upd = await managerWs.waitFor((e) => e.type === 'WebhookUpdate' && e.id === hook.id);
    t.same(upd.data, { name: 'CI bot' });
    t.same(upd.remove, ['Avatar']);
    t.match(await request(s.apiUrl, 'PATCH', `/webhooks/${hook.id}/${hook.token}`, { body: { permissions: Number(P.SendMessage | P.ManageRole) } }), { status: 403 }, 'a token cannot raise its permissions');
    t.match(await request(s.apiUrl, 'PATCH', `/webhooks/${hook.id}/wrong`, { body: { name: 'x' } }), { status: 401, body: { type: 'NotAuthenticated' } });
    t.match(await plain.api.patch(`/webhooks/${hook.id}`, { name: 'x' }), { status: 403, body: { type: 'MissingPermission', permission: 'ManageWebhooks' } });
    const byUser = await manager.api.patch(`/webhooks/${hook.id}`, { name: 'CI 2', permissions: Number(P.SendMessage) });
    t.equal(byUser.status, 200);
    t.equal(byUser.body.permissions, Number(P.SendMessage));
    t.match(await request(s.apiUrl, 'POST', `/webhooks/${hook.id}/${hook.token}`, { body: { content: 'x', masquerade: { name: 'y' } } }), { status: 403, body: { type: 'MissingPermission', permission: 'Masquerade' } });
    // A marker after the updates: the plain member got it and none of the webhook events before it.
    const marker = await owner.api.post(`/channels/${srv.general}/messages`, { content: 'marker' });
    await plainWs.waitFor((e) => e.type === 'Message' && e._id === marker.body._id, undefined, from);
    t.notOk(plainWs.events.some((e) => e.type.startsWith('Webhook')), 'a member without ManageWebhooks hears of no webhook');
  });

  t.test('groups: the owner manages webhooks; DMs have none', async (t) => {
    const g = await owner.api.post('/channels/create', { name: 'group' });
    const w = await owner.api.post(`/channels/${g.body._id}/webhooks`, { name: 'g' });
    t.equal(w.status, 200);
    const sent = await request(s.apiUrl, 'POST', `/webhooks/${w.body.id}/${w.body.token}`, { body: { content: 'in a group' } });
    t.equal(sent.status, 200);
    t.equal(sent.body.channel, g.body._id);
    const saved = await owner.api.get(`/users/${owner.userId}/dm`);
    t.match(await owner.api.post(`/channels/${saved.body._id}/webhooks`, { name: 'n' }), { status: 400, body: { type: 'InvalidOperation' } }, 'Saved Notes');
  });

  t.test('delete: by token and by ManageWebhooks; deleting a channel deletes its webhooks; audited', async (t) => {
    const a = await manager.api.post(`/channels/${srv.general}/webhooks`, { name: 'A' });
    t.match(await request(s.apiUrl, 'DELETE', `/webhooks/${a.body.id}/wrong`), { status: 401 });
    t.equal((await request(s.apiUrl, 'DELETE', `/webhooks/${a.body.id}/${a.body.token}`)).status, 204);
    await managerWs.waitFor((e) => e.type === 'WebhookDelete' && e.id === a.body.id);
    t.match(await request(s.apiUrl, 'POST', `/webhooks/${a.body.id}/${a.body.token}`, { body: { content: 'x' } }), { status: 404 });
    const b = await manager.api.post(`/channels/${srv.general}/webhooks`, { name: 'B' });
    t.match(await plain.api.del(`/webhooks/${b.body.id}`), { status: 403 });
    t.equal((await manager.api.del(`/webhooks/${b.body.id}`)).status, 204);

    const ch = await owner.api.post(`/servers/${srv.id}/channels`, { name: 'doomed' });
    const c = await owner.api.post(`/channels/${ch.body._id}/webhooks`, { name: 'C' });
    const webhookSet = async () => readModelKey(s.prefix, Number(await s.redis.get(controlKeys(s.prefix).generation)), rm.channelWebhooks(ch.body._id));
    t.equal(await s.redis.exists(await webhookSet()), 1, "the channel's webhook set exists");
    t.equal((await owner.api.del(`/channels/${ch.body._id}`)).status, 204);
    t.match(await request(s.apiUrl, 'GET', `/webhooks/${c.body.id}/${c.body.token}`), { status: 404 }, 'gone with its channel');
    t.equal(await s.redis.exists(await webhookSet()), 0, 'and the set with it');

    const logs = (await owner.api.get(`/servers/${srv.id}/audit_logs`, { skipOpenApi: true })).body.audit_logs as Array<{ action: string; target: { id: string }; actor: string | null }>;
    t.ok(logs.some((e) => e.action === 'WebhookCreate' && e.target.id === hook.id && e.actor === manager.userId));
    t.ok(logs.some((e) => e.action === 'WebhookEdit' && e.target.id === hook.id && e.actor === null), 'an edit by token has no actor');
    t.ok(logs.some((e) => e.action === 'WebhookEdit' && e.target.id === hook.id && e.actor === manager.userId));
    t.ok(logs.some((e) => e.action === 'WebhookDelete' && e.target.id === b.body.id && e.actor === manager.userId));
  });

  t.test('tokens are encrypted in the log', async (t) => {
    const out: string[] = [];
    for await (const e of (s.store as PersonalDataStore).inner.readAll()) out.push(JSON.stringify(e.data));
    t.ok(out.length > 0);
    t.notOk(out.join('\n').includes(hook.token));
  });

  t.test('rebuild equals live', async (t) => {
    const live = await dumpCurrent(s.redis, s.prefix);
    t.same(await dumpRebuild(t, s.redis, { store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions }), live);
  });
});

t.test('execute has its own bucket, per webhook', async (t) => {
  const s = await startTestService(t, {}, { now: () => 7_000_000 });
  const owner = await signup(s);
  const srv = await createServer(owner);
  const one = await owner.api.post(`/channels/${srv.general}/webhooks`, { name: 'one' });
  const two = await owner.api.post(`/channels/${srv.general}/webhooks`, { name: 'two' });
  const send = (w: { id: string; token: string }) => request(s.apiUrl, 'POST', `/webhooks/${w.id}/${w.token}`, { body: { content: 'tick' }, skipOpenApi: true });
  const limit = BUCKET_LIMITS.webhooks;
  for (let i = 0; i < limit; i++) t.equal((await send(one.body)).status, 200, `request ${i + 1} of ${limit}`);
  const over = await send(one.body);
  t.equal(over.status, 429, 'one more is refused');
  t.equal(over.headers.get('x-ratelimit-bucket'), 'webhooks');
  t.equal((await send(two.body)).status, 200, 'another webhook has its own budget');
});

t.test('tokens never reach the logs (debug level, every request logged)', async (t) => {
  const lines: string[] = [];
  const log = pino({ level: 'trace' }, { write: (l: string) => void lines.push(l) });
  const s = await startTestService(t, { RATE_LIMITS: 'off' }, { log });
  const owner = await signup(s);
  const srv = await createServer(owner);
  const bot = await owner.api.post('/bots/create', { name: `logbot${process.pid}` });
  const hook = await owner.api.post(`/channels/${srv.general}/webhooks`, { name: 'log' });
  t.equal((await request(s.apiUrl, 'GET', '/users/@me', { headers: { 'X-Bot-Token': bot.body.token } })).status, 200);
  t.equal((await request(s.apiUrl, 'POST', `/webhooks/${hook.body.id}/${hook.body.token}`, { body: { content: 'x' } })).status, 200);
  t.equal((await request(s.apiUrl, 'GET', `/webhooks/${hook.body.id}/${hook.body.token}`)).status, 200);
  t.equal((await request(s.apiUrl, 'POST', `/webhooks/${hook.body.id}/${hook.body.token}/github`, { body: {}, headers: { 'X-GitHub-Event': 'ping' }, skipOpenApi: true })).status, 204);
  await owner.api.patch(`/bots/${bot.body._id}`, { remove: ['Token'] });
  const all = lines.join('');
  t.ok(all.includes(`/webhooks/${hook.body.id}/:token`), 'the requests were logged');
  t.notOk(all.includes(hook.body.token), 'no webhook token');
  t.notOk(all.includes(bot.body.token), 'no bot token');
});
