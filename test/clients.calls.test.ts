// A DM call through the published stoat.js client, unmodified: Alice calls Bob with `channel.joinCall`
// (ringing Bob), LiveKit reports the joins and leaves (webhooks signed as LiveKit signs them), and Bob's client
// follows the call in its own state (`voiceParticipants`, from VoiceChannelJoin / VoiceChannelLeave and
// Ready's `voice_states`) and shows the call's `call_started` system message, finished once both left. Every
// answer must match the stoat-api OpenAPI document (helpers/realClients.ts). (revolt.js has no joinCall.) Alice
// also stops ringing Bob (end_ring) through the client's API layer.
import t from 'tap';
import { Client } from 'stoat.js';
import { startTestService } from './helpers/service.ts';
import { clearClientIntervalsAtTeardown, installWebSocket, signUpWithClient, traceClients } from './helpers/realClients.ts';
import { joined, left, livekitWebhook } from './helpers/livekit.ts';
import { until } from './helpers/wait.ts';

installWebSocket();

const KEY = 'client-call-key';
const SECRET = 'client-call-secret-0123456789abcdefgh';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any;


t.test('stoat.js: a DM call', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', VOICE_ENABLED: 'true', LIVEKIT_URL: 'wss://livekit.example', LIVEKIT_API_KEY: KEY, LIVEKIT_API_SECRET: SECRET });
  const traffic = traceClients(t, s);
  clearClientIntervalsAtTeardown(t);
  const alice = await signUpWithClient(t, Client as never, 'stoat.js', s.apiUrl, `callalice${process.pid}`);
  const bob = await signUpWithClient(t, Client as never, 'stoat.js', s.apiUrl, `callbob${process.pid}`);
  const A = alice.user.id as string;
  const B = bob.user.id as string;
  await bob.users.fetch(A);
  await (await alice.users.fetch(B)).addFriend();
  await until('bob hears of the request', () => bob.users.get(A)?.relationship === 'Incoming');
  await bob.users.get(A).addFriend();
  await until('alice hears of the acceptance', () => alice.users.get(B)?.relationship === 'Friend');
  const dm = await alice.users.get(B).openDM();
  await until('bob has the DM', () => bob.channels.get(dm.id));

  // Alice presses "call": a LiveKit token for the DM's room, ringing Bob.
  const call = await dm.joinCall(undefined, undefined, [B]);
  t.equal(call.url, 'wss://livekit.example');
  t.equal(typeof call.token, 'string');
  const webhook = (event: Record<string, unknown>) => livekitWebhook(s, { key: KEY, secret: SECRET }, event);

  // LiveKit: Alice is in. Bob's client shows her in the call, and the call's message.
  const started = new Promise<AnyClient>((resolve) => bob.on('messageCreate', (m: AnyClient) => m.channelId === dm.id && resolve(m)));
  t.equal((await webhook(joined(dm.id, A))).status, 200);
  await until('Bob sees Alice in the call', () => bob.channels.get(dm.id).voiceParticipants.has(A));
  const message = await started;
  t.equal(message.systemMessage?.type, 'call_started', 'the call_started system message, as the client reads it');
  t.equal(message.systemMessage.byId, A, 'started by Alice');
  t.equal(message.systemMessage.finishedAt, null, 'not finished');

  // Alice stops ringing Bob (Stoat's stop_ring, through the client's API layer: stoat.js has no method for it).
  await alice.api.put(`/channels/${dm.id}/end_ring/${B}` as never);
  t.same((await s.store.readStream(`ring-${dm.id}`)).map((e) => [e.type, e.data]), [['CallRingStopped', { channel: dm.id, by: A, users: [B] }]], 'the ring stop is in the log');
  // Bob, not in the call, cannot stop it: a JSON 400 the client throws.
  const refused = await bob.api.put(`/channels/${dm.id}/end_ring/${A}` as never).then(() => null, (err: AnyClient) => err);
  // The client's API layer throws the error body as it came (text here).
  t.match(typeof refused === 'string' ? JSON.parse(refused) : refused, { type: 'NotConnected' }, 'not in the call: NotConnected');

  await webhook(joined(dm.id, B));
  await until('Bob sees himself in the call', () => bob.channels.get(dm.id).voiceParticipants.has(B));
  await until('and Alice sees both', () => alice.channels.get(dm.id).voiceParticipants.size === 2);

  await webhook(left(dm.id, A));
  await webhook(left(dm.id, B));
  await until('the call is over in both clients', () => bob.channels.get(dm.id).voiceParticipants.size === 0 && alice.channels.get(dm.id).voiceParticipants.size === 0);
  // The MessageUpdate of the call's end reaches the client's copy of the message.
  await until('finished in Bob’s client', () => bob.messages.get(message.id)?.systemMessage?.finishedAt instanceof Date);
  const history = await bob.channels.get(dm.id).fetchMessages({ limit: 5 });
  const inHistory = history.find((m: AnyClient) => m.id === message.id);
  t.ok(inHistory?.systemMessage?.finishedAt instanceof Date, 'the history has it finished');

  t.same(traffic.mismatches, [], 'every answer matches the stoat-api OpenAPI document');
  t.same(traffic.calls.filter((c) => c.status >= 500), [], 'no 5xx');
});
