// The recount against Stoat's API (issue 38): every operation of the OpenAPI document the clients ship
// (`stoat-api`'s OpenAPI.json), every route Stoat serves outside that document (from its source,
// crates/delta/src/routes), and every gateway event Stoat sends (crates/core/database/src/events/client.rs)
// must exist here. A missing route or event fails this file; the counts are printed for docs/PARITY.md.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { API_ROUTES } from '../src/http/routes/index.ts';
import { CLIENT_EVENT_TYPES } from '../src/gateway/protocol.ts';

const root = path.join(import.meta.dirname, '..');
const doc = JSON.parse(fs.readFileSync(path.join(root, 'node_modules/stoat-api/OpenAPI.json'), 'utf8')) as {
  info: { version: string };
  paths: Record<string, Record<string, unknown>>;
};

/**
 * Stoat's routes that its OpenAPI document leaves out: every `#[get|post|put|patch|delete]` handler of
 * crates/delta/src/routes (125 at stoatchat/stoatchat HEAD) that is not one of the document's operations.
 */
const STOAT_ONLY: ReadonlyArray<[method: string, path: string, source: string]> = [
  ['PATCH', '/custom/emoji/{emoji_id}', 'customisation/emoji_edit.rs'],
  ['GET', '/servers/{target}/audit_logs', 'servers/audit_log_query.rs'],
  ['PATCH', '/webhooks/{webhook_id}/{token}/{message_id}', 'webhooks/webhook_edit_message.rs'],
  ['DELETE', '/webhooks/{webhook_id}/{token}/{message_id}', 'webhooks/webhook_delete_message.rs'],
];

/**
 * Stoat's `EventV1` variants that reach clients: all 54 of client.rs but the four auth events bonfire
 * consumes itself (CreateAccount, CreateSession, DeleteSession, DeleteAllSessions) and `Bees`, which nothing
 * sends.
 */
const STOAT_EVENTS: readonly string[] = [
  'Bulk', 'Error', 'Authenticated', 'Logout', 'Ready', 'Pong',
  'Message', 'MessageUpdate', 'MessageAppend', 'MessageDelete', 'MessageReact', 'MessageUnreact', 'MessageRemoveReaction', 'BulkMessageDelete',
  'ServerCreate', 'ServerUpdate', 'ServerDelete', 'ServerMemberUpdate', 'ServerMemberJoin', 'ServerMemberLeave',
  'ServerRoleUpdate', 'ServerRoleDelete', 'ServerRoleRanksUpdate',
  'UserUpdate', 'UserRelationship', 'UserSettingsUpdate', 'UserPlatformWipe',
  'EmojiCreate', 'EmojiUpdate', 'EmojiDelete', 'ReportCreate',
  'ChannelCreate', 'ChannelUpdate', 'ChannelDelete', 'ChannelGroupJoin', 'ChannelGroupLeave',
  'ChannelStartTyping', 'ChannelStopTyping', 'ChannelAck',
  'WebhookCreate', 'WebhookUpdate', 'WebhookDelete',
  'VoiceChannelJoin', 'VoiceChannelLeave', 'VoiceChannelMove', 'UserVoiceStateUpdate', 'UserMoveVoiceChannel',
  'UserSlowmodes', 'VoiceCallUpdate',
];

/** Frames the gateway sends itself rather than from the event streams (gateway.ts, hub.ts, ready.ts). */
const GATEWAY_FRAMES: ReadonlySet<string> = new Set(['Error', 'Authenticated', 'Logout', 'Ready', 'Pong', 'ChannelStartTyping', 'ChannelStopTyping']);

/** `/a/{x}/b/` and `/a/:x/b` both as `/a/{}/b`. */
const norm = (p: string) => p.replace(/\{[^}]+\}|:[A-Za-z_]+/g, '{}').replace(/\/$/, '') || '/';
const served = new Set(API_ROUTES.map((r) => `${r.method} ${norm(r.path)}`));

/** Every source file under a directory. */
function sources(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => path.join(dir, f));
}
const code = [...sources(path.join(root, 'src')), ...sources(path.join(root, 'projections'))]
    .map((f) => fs.readFileSync(f, 'utf8'))
  .join('\n');

t.test('REST: every operation of the OpenAPI document is served', async (t) => {
  const ops: string[] = [];
  for (const [p, item] of Object.entries(doc.paths)) {
    for (const m of Object.keys(item)) if (['get', 'post', 'put', 'patch', 'delete'].includes(m)) ops.push(`${m.toUpperCase()} ${p}`);
  }
  const missing = ops.filter((op) => {
    const [m, p] = op.split(' ') as [string, string];
    return !served.has(`${m} ${norm(p)}`);
  });
  t.same(missing, [], 'no operation missing');
  t.ok(ops.length >= 121, `the document lists ${ops.length} operations`);
  t.comment(`REST (stoat-api ${doc.info.version}): ${ops.length - missing.length}/${ops.length}`);
});

t.test('REST: every route Stoat serves outside the document is served', async (t) => {
  const inDoc = new Set(Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${norm(p)}`)));
  for (const [m, p, src] of STOAT_ONLY) t.notOk(inDoc.has(`${m} ${norm(p)}`), `${m} ${p} is not in the document (else it is counted there)`);
  const missing = STOAT_ONLY.filter(([m, p]) => !served.has(`${m} ${norm(p)}`)).map(([m, p, src]) => `${m} ${p} (${src})`);
  t.same(missing, [], 'no Stoat-only route missing');
  t.comment(`Stoat-only REST: ${STOAT_ONLY.length - missing.length}/${STOAT_ONLY.length}`);
});

t.test('gateway: every event Stoat sends can be sent here', async (t) => {
  t.equal(STOAT_EVENTS.length, 49, 'the 49 client events of EventV1');
  const missing = STOAT_EVENTS.filter((e) => {
    const listed = CLIENT_EVENT_TYPES.has(e) || GATEWAY_FRAMES.has(e);
    // Some code builds a frame or payload of that type (the typing frames are built in one expression).
    const typingFrame = code.includes("? 'ChannelStartTyping' : 'ChannelStopTyping'") && (e === 'ChannelStartTyping' || e === 'ChannelStopTyping');
    const built = typingFrame || new RegExp(`type: ['"]${e}['"]`).test(code);
    return !(listed && built);
  });
  t.same(missing, [], 'no event missing');
  const extra = [...CLIENT_EVENT_TYPES].filter((e) => !STOAT_EVENTS.includes(e));
  t.same(extra, [], 'nothing is forwarded to clients that Stoat does not define');
  t.comment(`gateway events: ${STOAT_EVENTS.length - missing.length}/${STOAT_EVENTS.length}`);
});
