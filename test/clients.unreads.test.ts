// The published clients (stoat.js 7.3 and revolt.js 7.2, unmodified) with `syncUnreads: true` against the
// service (issue 15 "Verify"): login → Ready (the clients fetch `GET /sync/unreads` before calling themselves
// ready) → their unread and mention state → `channel.ack()` / `server.ack()` → settings set, fetch and the
// UserSettingsUpdate event. At each step the client's own unread state must agree with the server's.
// Every answer is checked against the stoat-api OpenAPI document (helpers/realClients.ts). revolt.js 7.2's
// bundled revolt-api rejects empty 204 answers with a SyntaxError (revolt-client.md §3): its fire-and-forget
// ack request surfaces as an unhandled rejection, which this file records and checks is exactly that.
import t from 'tap';
import type * as Tap from 'tap';
import { Client as StoatClient } from 'stoat.js';
import { Client as RevoltClient } from 'revolt.js';
import { signup, type TestUser } from './helpers/http.ts';
import { createServer, join } from './helpers/servers.ts';
import { startTestService, type TestService } from './helpers/service.ts';
import { clearClientIntervalsAtTeardown, installWebSocket, traceClients, type ClientTraffic } from './helpers/realClients.ts';
import { until } from './helpers/wait.ts';

installWebSocket();

type Unread = { _id: { channel: string; user: string }; last_id?: string; mentions?: string[] };
type AnyClient = StoatClient | RevoltClient;

/** Unhandled rejections while a test runs: revolt.js's ack request (a 204) is the only expected one. */
const rejections: unknown[] = [];
process.on('unhandledRejection', (reason) => rejections.push(reason));

/** Logs an existing account in with a real client (`syncUnreads: true`) and waits for `ready`. */
async function login(t: { teardown(fn: () => unknown): void }, s: TestService, Kind: typeof StoatClient | typeof RevoltClient, u: TestUser): Promise<AnyClient> {
  const config = await (await fetch(`${s.apiUrl}/`)).json();
  // Both classes take the same options; typed as stoat.js's so its methods type-check (the union's do not).
  const client = new (Kind as typeof StoatClient)({ baseURL: s.apiUrl, autoReconnect: false, syncUnreads: true }, config);
  t.teardown(() => client.events.disconnect());
  const session = (await client.api.post('/auth/session/login', { email: u.email, password: u.password, friendly_name: 'unreads test' })) as any;
  if (session.result !== 'Success') throw new Error('login failed');
  client.useExistingSession(session);
  const ready = new Promise<void>((resolve) => client.once('ready', () => resolve()));
  client.connect();
  await ready;
  return client as AnyClient;
}

/** The client's unread state in the server's shape (channels it has an entry for). */
function clientState(client: AnyClient, channels: string[]): Record<string, { last_id: string | undefined; mentions: string[] }> {
  const out: Record<string, { last_id: string | undefined; mentions: string[] }> = {};
  for (const id of channels) {
    const u = client.channelUnreads.get(id) as { lastMessageId?: string | null; messageMentionIds: Set<string> } | undefined;
    out[id] = { last_id: u?.lastMessageId ?? undefined, mentions: u ? [...u.messageMentionIds].sort() : [] };
  }
  return out;
}

/** The server's unread state for the same channels. */
async function serverState(u: TestUser, channels: string[]): Promise<Record<string, { last_id: string | undefined; mentions: string[] }>> {
  const all = (await u.api.get('/sync/unreads')).body as Unread[];
  const out: Record<string, { last_id: string | undefined; mentions: string[] }> = {};
  for (const id of channels) {
    const e = all.find((x) => x._id.channel === id);
    out[id] = { last_id: e?.last_id, mentions: [...(e?.mentions ?? [])].sort() };
  }
  return out;
}

async function flow(t: Tap.Test, Kind: typeof StoatClient | typeof RevoltClient, s: TestService, traffic: ClientTraffic, name: string) {
  const isRevolt = Kind === RevoltClient;
  /** revolt.js 7.2 rejects the 204 of an awaited call with a SyntaxError; stoat.js resolves null. */
  const ok204 = async (p: Promise<unknown>) => {
    const r = await p.then((v) => ({ v }), (e: unknown) => ({ e }));
    if ('e' in r) {
      if (!(isRevolt && r.e instanceof SyntaxError)) throw r.e;
    } else if (isRevolt) throw new Error('revolt.js 7.2 was expected to choke on the 204');
  };
  const [owner, reader] = await Promise.all([signup(s), signup(s)]);
  const srv = await createServer(owner, `${name} unreads`);
  const other = (await owner.api.post(`/servers/${srv.id}/channels`, { name: 'other' })).body._id as string;
  await join(owner, srv.general, reader);
  const send = async (channel: string, content: string) => (await owner.api.post(`/channels/${channel}/messages`, { content })).body._id as string;
  // Unread state made before the client logs in: mentions in general, plain messages in other.
  const m1 = await send(srv.general, `hi <@${reader.userId}>`);
  const m2 = await send(srv.general, 'no mention');
  const m3 = await send(srv.general, `again <@${reader.userId}>`);
  const o1 = await send(other, 'in other');
  const channels = [srv.general, other];

  const client = await login(t, s, Kind, reader);
  const fetched = traffic.calls.filter((c) => c.path === '/sync/unreads' && c.status === 200);
  t.ok(fetched.length > 0, 'the client fetched /sync/unreads before calling itself ready');
  t.same(clientState(client, channels), await serverState(reader, channels), 'after Ready: client and server agree');
  t.same(clientState(client, channels)[srv.general]!.mentions, [m1, m3].sort(), 'both mentions are known to the client');
  const general = client.channels.get(srv.general)!;
  const otherChannel = client.channels.get(other)!;
  t.equal(general.lastMessageId, m3);
  t.equal(general.unread, true, 'general is unread');
  t.equal(otherChannel.unread, true, 'other is unread');
  t.equal(general.mentions?.size, 2, 'with two mentions');

  // Ack general through the client (its rate limiter skipped); the server and the client agree after it.
  const acked = new Promise<string>((resolve) =>
    (client as StoatClient).once('channelAcknowledged', (channel: { id: string }, id: string) => void (channel.id === srv.general && resolve(id))),
  );
  const rejectionsBefore = rejections.length;
  await general.ack(undefined, true);
  t.equal(await acked, m3, 'ChannelAck reached the client');
  await until('the server has the ack', async () => (await serverState(reader, channels))[srv.general]!.last_id === m3);
  t.equal(general.unread, false, 'general is read in the client');
  t.equal(general.mentions?.size ?? 0, 0, 'its mentions are cleared in the client');
  t.same((await serverState(reader, channels))[srv.general], { last_id: m3, mentions: [] }, 'and on the server');
  if (isRevolt) {
    await until('revolt.js reports its ack request', () => rejections.length > rejectionsBefore);
    t.ok(rejections.slice(rejectionsBefore).every((r) => r instanceof SyntaxError), 'the only rejection is revolt.js choking on the 204');
  }
  /**
   * The client's view after a resync. stoat.js re-fetches into the same client. revolt.js 7.2's
   * `channelUnreads.sync()` empties its store but keeps the old instances, so entries it already had come
   * back empty: its users resync by reconnecting, so a new session of it is what is compared.
   */
  const resynced = async (): Promise<AnyClient> => {
    if (!isRevolt) {
      await client.channelUnreads.sync();
      return client;
    }
    const fresh = await login(t, s, Kind, reader);
    fresh.events.disconnect();
    return fresh;
  };
  t.same(clientState(await resynced(), [srv.general]), await serverState(reader, [srv.general]), 'a resync agrees');

  // A live mention: stoat.js records it from the Message event; both agree with the server after a sync.
  const m4 = await send(srv.general, `live <@${reader.userId}>`);
  await until('the Message reaches the client', () => client.messages.get(m4));
  if (!isRevolt) t.ok(general.mentions?.has(m4), 'stoat.js counts the live mention itself');
  t.same((await serverState(reader, [srv.general]))[srv.general]!.mentions, [m4], 'the server has it');
  const afterLive = await resynced();
  t.same(clientState(afterLive, channels), await serverState(reader, channels), 'after a resync: agree');
  t.equal(afterLive.channels.get(srv.general)!.unread, true);
  t.equal(afterLive.channels.get(srv.general)!.mentions?.size, 1, 'one mention');

  // Mark the whole server read.
  await ok204(client.servers.get(srv.id)!.ack());
  await until('the server ack is projected', async () => (await serverState(reader, channels))[other]!.last_id === o1);
  t.equal(general.unread, false, 'general read in the client at once');
  const afterServerAck = await resynced();
  t.equal(afterServerAck.channels.get(srv.general)!.unread, false, 'general read');
  t.equal(afterServerAck.channels.get(other)!.unread, false, 'other read');
  t.same(clientState(afterServerAck, channels), { [srv.general]: { last_id: m4, mentions: [] }, [other]: { last_id: o1, mentions: [] } }, 'client state after the server ack');
  t.same(clientState(afterServerAck, channels), await serverState(reader, channels), 'and the server agrees');
  t.not(m1, m2);

  // Settings: set (the client moves `timestamp` into the query), the event, fetch.
  const update = new Promise<[string, Record<string, [number, string]>]>((resolve) =>
    (client as StoatClient).once('userSettingsUpdate', (id: string, u: Record<string, [number, string]>) => resolve([id, u])),
  );
  const ts = Date.now() - 1000;
  await ok204(client.account.setSettings({ ordering: JSON.stringify({ servers: [srv.id] }) }, ts));
  t.same(await update, [reader.userId, { ordering: [ts, JSON.stringify({ servers: [srv.id] })] }], 'UserSettingsUpdate reached the client');
  const got = await client.account.fetchSettings(['ordering', 'notifications']);
  t.same(got, { ordering: [ts, JSON.stringify({ servers: [srv.id] })] }, 'fetchSettings returns what was set');
  const sent = traffic.received.findLast((r) => r.method === 'POST' && r.url.startsWith('/sync/settings/set'));
  t.match(sent?.url, new RegExp(`timestamp=${ts}`), 'the timestamp travelled in the query');

  // A second login: Ready again, the unread state still agrees.
  const again = await login(t, s, Kind, reader);
  t.same(clientState(again, channels), await serverState(reader, channels), 'a new session agrees from its Ready');
  again.events.disconnect();
}

t.test('stoat.js and revolt.js with syncUnreads', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', PROJECTOR_PARTITIONS: '3' });
  const traffic = traceClients(t, s);
  clearClientIntervalsAtTeardown(t);
  await t.test('stoat.js', (t) => flow(t, StoatClient, s, traffic, 'stoat'));
  const before = rejections.length;
  await t.test('revolt.js', (t) => flow(t, RevoltClient, s, traffic, 'revolt'));
  t.ok(rejections.length > before, 'revolt.js ack rejections were seen (and checked above)');
  t.same(traffic.mismatches, [], 'every answer matches the stoat-api OpenAPI document');
  t.same(traffic.calls.filter((c) => c.status >= 400).map((c) => `${c.method} ${c.path} ${c.status}`), [], 'no error answers');
});
