// `npm run events -- state --at <position|ISO time> [--server <id>]`: the read models rebuilt as they were at a
// past moment, in a separate prefix — counts of servers, channels, roles, members (and users …), and one
// server's summary with its audit log. The case: create, rename, delete → the state before the
// deletion shows the renamed server.
import t from 'tap';
import { Redis } from 'ioredis';
import { stateAt, type StateAt } from '../src/cli/stateCounts.ts';
import { createLogger } from '../src/log.ts';
import type { AuditEntry } from '../src/domain/audit/entries.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import { runCli } from './helpers/cli.ts';
import { uploadImage } from './helpers/messages.ts';
import { signup } from './helpers/http.ts';
import { createServer, join } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';
import { deleteKeys } from '../projections/rebuild.ts';
import { readModelKey, rm } from '../src/readmodel/keys.ts';

t.test('state --at: a server as it was before it was deleted', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  const log = createLogger('silent');
  // The tool's own function, in process (one run below goes through the command line).
  const state = (position: bigint, serverId?: string, keep = false): Promise<StateAt> =>
    stateAt({ store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, position, log, keep, ...(serverId !== undefined ? { serverId } : {}) });

  const [owner, member] = await Promise.all([signup(s), signup(s)]);
  const srv = await createServer(owner, 'Original');
  const S = `/servers/${srv.id}`;
  const code = await join(owner, srv.general, member);
  const role = (await owner.api.post(`${S}/roles`, { name: 'Mods' })).body.id as string;
  const incidents = (await owner.api.post(`${S}/channels`, { name: 'incidents' })).body._id as string;
  const created = (await s.store.headPosition())!;
  for (const [u, ch, content] of [[owner, incidents, 'what happened?'], [member, incidents, 'no idea'], [member, srv.general, 'hi']] as const) {
    t.equal((await u.api.post(`/channels/${ch}/messages`, { content })).status, 200);
  }
  t.equal((await owner.api.put(`/custom/emoji/${await uploadImage(s, owner, 'emojis')}`, { name: 'alarm', parent: { type: 'Server', id: srv.id } })).status, 200);
  t.equal((await owner.api.patch(S, { name: 'Renamed' }, { headers: { 'X-Audit-Log-Reason': 'rebrand' } })).status, 200);
  const renamed = (await s.store.headPosition())!;
  const liveLog = (await owner.api.get(`${S}/audit_logs`)).body.audit_logs as AuditEntry[];
  t.equal((await owner.api.del(S)).status, 204, 'deleted');
  const end = (await s.store.headPosition())!;
  t.equal((await owner.api.get(S)).status, 404, 'gone from the live read models');

  const before = await state(renamed, srv.id);
  t.equal(before.position, renamed.toString());
  t.match(before, { accounts: 2, users: 2, servers: 1, channels: 2, roles: 1, members: 2, bans: 0, invites: 1, emojis: 1, messages: 3, audit_entries: 5 }, 'counts before the deletion');
  t.strictSame(before.server, {
    _id: srv.id,
    name: 'Renamed',
    owner: owner.userId,
    default_permissions: 0x11ee701400,
    channels: [
      { _id: srv.general, name: 'General', messages: 1 },
      { _id: incidents, name: 'incidents', messages: 2 },
    ],
    categories: [],
    roles: [{ _id: role, name: 'Mods', rank: 0, permissions: { a: 0, d: 0 } }],
    members: 2,
    bans: 0,
    invites: 1,
    emojis: 1,
    audit_entries: 5,
    latest_audit: liveLog.map((e) => ({ _id: e._id, action: e.action, actor: e.actor, target: e.target, at: e.at })),
    revision: before.server!.revision,
  }, 'the renamed server, with its audit log as the API showed it');
  t.same(before.server!.latest_audit.map((e) => e.action), ['ServerEdit', 'EmojiCreate', 'ChannelCreate', 'RoleCreate', 'InviteCreate']);
  t.equal(liveLog[0]!.reason, 'rebrand');
  t.ok(code, 'the invite counted above');

  const earlier = await state(created, srv.id);
  t.equal(earlier.server?.name, 'Original', 'before the rename: the original name');
  t.equal(earlier.audit_entries, 3, 'before the emoji and the rename');
  t.equal(earlier.messages, 0);

  const after = await state(end, srv.id);
  t.equal(after.server, null, 'after the deletion: no such server');
  t.match(after, { accounts: 2, users: 2, servers: 0, channels: 0, roles: 0, members: 0, bans: 0, invites: 0, emojis: 0, messages: 0, audit_entries: 0 }, 'counts after the deletion');

  // Through the command line, by time: just before the deletion was decided.
  const events: RecordedEvent[] = [];
  for await (const e of s.store.readAll()) events.push(e);
  const deletion = events.find((e) => e.type === 'ServerDeleted')!;
  const rename = events.find((e) => e.type === 'ServerEdited')!;
  t.ok(Date.parse(rename.metadata.at) < Date.parse(deletion.metadata.at), 'the rename was decided before the deletion');
  const env = { DATA_DIR: s.dataDir, REDIS_URL: s.config.redisUrl, REDIS_PREFIX: s.prefix, LOG_LEVEL: 'silent' };
  const cli = await runCli(env, ['state', '--at', new Date(Date.parse(deletion.metadata.at) - 1).toISOString(), '--server', srv.id]);
  t.equal(cli.code, 0, cli.err);
  const byTime = JSON.parse(cli.out.trim().split('\n').pop()!) as StateAt;
  t.equal(byTime.position, renamed.toString(), 'an ISO time finds the last position at or before it');
  const { prefix: _p1, ...printed } = byTime;
  const { prefix: _p2, ...direct } = before;
  t.strictSame(printed, direct, 'the command prints what the function returns');

  const kept = await state(renamed, undefined, true);
  const redisKept = new Redis(s.config.redisUrl);
  t.teardown(() => redisKept.disconnect());
  t.equal(await redisKept.get(readModelKey(kept.prefix, kept.kept_generation!, rm.server(srv.id))).then((v) => (v ? (JSON.parse(v) as { name: string }).name : null)), 'Renamed', 'kept: readable where it says');
  await deleteKeys(redisKept, kept.prefix);

  const noServer = await state(renamed);
  t.notOk('server' in noServer, 'without --server only the counts');

  const redis = new Redis(s.config.redisUrl);
  t.teardown(() => redis.disconnect());
  t.same(await redis.keys(`${s.prefix}state:*`), [], 'the point-in-time read models are removed afterwards');
  t.equal((await owner.api.get(S)).status, 404, 'and the live read models were never touched');
});
