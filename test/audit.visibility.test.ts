// GET /servers/:id/audit_logs redacts each entry by the reader's access to that entry's channel (issue 17 item 2):
// a reader with ViewAuditLogs but no ViewChannel in a channel sees that channel's message deletions, pins,
// reaction removals and channel edits without their changes or context (no deleted content, no author), while
// entries of channels they can view and of the server stay whole; the owner and a reader who can view the
// channel see everything; a deleted channel is judged by its overrides as they last were; rebuild = live.
import t from 'tap';
import { Redis } from 'ioredis';
import { PROJECTIONS } from '../projections/index.ts';
import { rebuild } from '../projections/rebuild.ts';
import type { AuditEntry } from '../src/domain/audit/entries.ts';
import { createLogger } from '../src/log.ts';
import { Permission as P } from '../src/permissions/bits.ts';
import { controlKeys, readModelKey, rm } from '../src/readmodel/keys.ts';
import { signup, type TestUser } from './helpers/http.ts';
import { createServer, join, roleWith } from './helpers/servers.ts';
import { startTestService, waitServing } from './helpers/service.ts';

type Page = { audit_logs: AuditEntry[]; users: Array<{ _id: string }>; members: unknown[] };

t.test('audit entries of channels the reader cannot view are redacted', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const [owner, auditor, insider, author] = await Promise.all([signup(s), signup(s), signup(s), signup(s)]);
  const srv = await createServer(owner, 'Redaction');
  await join(owner, srv.general, auditor, insider, author);
  // The auditor reads the log but is kept out of #secret; the insider may moderate messages there.
  await roleWith(owner, srv.id, P.ViewAuditLogs, [auditor], 'Auditor');
  const insiders = await roleWith(owner, srv.id, P.ViewAuditLogs | P.ManageMessages, [insider], 'Insider');
  const ch = await owner.api.post(`/servers/${srv.id}/channels`, { name: 'secret' });
  t.equal(ch.status, 200, ch.text);
  const secret = ch.body._id as string;
  t.equal((await owner.api.put(`/channels/${secret}/permissions/default`, { permissions: { allow: 0, deny: P.ViewChannel.toString() } })).status, 200);
  t.equal((await owner.api.put(`/channels/${secret}/permissions/${insiders}`, { permissions: { allow: (P.ViewChannel | P.SendMessage).toString(), deny: 0 } })).status, 200);
  t.equal((await auditor.api.get(`/channels/${secret}`)).status, 403, 'the auditor cannot view #secret');

  const send = async (u: TestUser, channel: string, content: string) => {
    const r = await u.api.post(`/channels/${channel}/messages`, { content });
    if (r.status !== 200) throw new Error(`send ${r.status} ${r.text}`);
    return r.body._id as string;
  };
  const hidden = await send(owner, secret, 'the launch code is 0000');
  const open = await send(author, srv.general, 'visible rant');
  t.equal((await insider.api.del(`/channels/${secret}/messages/${hidden}`)).status, 204);
  t.equal((await insider.api.del(`/channels/${srv.general}/messages/${open}`)).status, 204);
  t.equal((await owner.api.patch(`/channels/${secret}`, { name: 'codename-x' })).status, 200);

  const log = async (u: TestUser) => {
    const r = await u.api.get<Page>(`/servers/${srv.id}/audit_logs?limit=100`);
    if (r.status !== 200) t.fail(`audit log ${r.status} ${r.text}`);
    return r;
  };
  const find = (entries: AuditEntry[], action: string, target: string) => entries.find((e) => e.action === action && e.target.id === target);

  const check = async (t: Tap, when: string) => {
    const seen = await log(auditor);
    t.notMatch(seen.text, /launch code/, `${when}: the hidden message's content is nowhere in the auditor's answer`);
    t.notMatch(seen.text, /codename-x/, `${when}: nor the hidden channel's new name`);
    const del = find(seen.body.audit_logs, 'MessageDelete', hidden)!;
    t.ok(del, `${when}: the deletion is listed`);
    t.strictSame({ changes: del.changes, context: del.context, redacted: del.redacted, actor: del.actor }, { changes: {}, context: { channel: secret }, redacted: true, actor: insider.userId }, `${when}: redacted: no changes, no author`);
    const edit = find(seen.body.audit_logs, 'ChannelEdit', secret)!;
    t.strictSame([edit.changes, edit.redacted, edit.context], [{}, true, undefined], `${when}: the hidden channel's edit is redacted`);
    const visible = find(seen.body.audit_logs, 'MessageDelete', open)!;
    t.equal((visible.changes.content as { before: string }).before, 'visible rant', `${when}: a deletion in a channel the auditor can view stays whole`);
    t.equal(visible.redacted, undefined);
    t.ok(seen.body.audit_logs.some((e) => e.action === 'RoleCreate' && e.redacted === undefined && Object.keys(e.changes).length > 0), `${when}: server entries stay whole`);
    for (const reader of [owner, insider]) {
      const full = await log(reader);
      const d = find(full.body.audit_logs, 'MessageDelete', hidden)!;
      t.equal((d.changes.content as { before: string }).before, 'the launch code is 0000', `${when}: a reader who can view the channel sees the content`);
      t.equal(d.redacted, undefined);
      t.same(d.context, { channel: secret, author: owner.userId });
    }
  };
  type Tap = typeof t;
  await check(t, 'channel alive');

  // Letting the auditor in lifts the redaction; taking it away again restores it.
  const auditorSees = await roleWith(owner, srv.id, 0n, [auditor], 'Let in');
  t.equal((await owner.api.put(`/channels/${secret}/permissions/${auditorSees}`, { permissions: { allow: P.ViewChannel.toString(), deny: 0 } })).status, 200);
  t.match((await log(auditor)).text, /launch code/, 'once the auditor can view #secret, its entries are whole');
  t.equal((await owner.api.put(`/channels/${secret}/permissions/${auditorSees}`, { permissions: { allow: 0, deny: 0 } })).status, 200);

  t.equal((await owner.api.del(`/channels/${secret}`)).status, 204);
  await check(t, 'channel deleted');
  const gone = (await log(auditor)).body.audit_logs.find((e) => e.action === 'ChannelDelete' && e.target.id === secret)!;
  t.strictSame([gone.changes, gone.redacted], [{}, true], "the hidden channel's deletion shows no name");

  const redis = new Redis(s.config.redisUrl);
  t.teardown(() => redis.disconnect());
  const keys = async () => {
    const gen = Number(await redis.get(controlKeys(s.prefix).generation));
    return { gone: await redis.hgetall(readModelKey(s.prefix, gen, rm.auditGoneChannels(srv.id))), answer: (await log(auditor)).text };
  };
  const live = await keys();
  t.ok(Object.hasOwn(live.gone, secret), "the deleted channel's overrides are kept");
  await rebuild({ store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, partitions: s.config.projectorPartitions, projections: PROJECTIONS, log: createLogger('silent') });
  await waitServing(s);
  t.same(await keys(), live, 'rebuild equals live');
});
