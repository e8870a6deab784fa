// The published stoat.js and revolt.js clients, unmodified, through the private flow: friend request →
// accept → DM → message → group → add member → leave. Each client's own state (relationships, channels,
// recipients, messages) must follow from the answers and the gateway events, and every answer must match
// the stoat-api OpenAPI document (helpers/realClients.ts).
import t from 'tap';
import { Client as StoatClient } from 'stoat.js';
import { Client as RevoltClient } from 'revolt.js';
import { startTestService } from './helpers/service.ts';
import { assertTraffic, clearClientIntervalsAtTeardown, connectAgain, installWebSocket, signUpWithClient, traceClients } from './helpers/realClients.ts';
import { until } from './helpers/wait.ts';

installWebSocket();

type AnyClient = any; // the two libraries share this surface (users, channels, messages, events)

/** revolt.js (revolt-api 0.8.5-1) rejects a 204 with a SyntaxError; stoat.js resolves. */
async function maybe204(lib: string, p: Promise<unknown>): Promise<void> {
  try {
    await p;
  } catch (e) {
    if (!(lib === 'revolt.js' && e instanceof SyntaxError)) throw e;
  }
}


for (const lib of ['stoat.js', 'revolt.js']) {
  t.test(`${lib}: friends, DM, group`, async (t) => {
    const s = await startTestService(t, { RATE_LIMITS: 'off' });
    const traffic = traceClients(t, s);
    clearClientIntervalsAtTeardown(t);
    const tag = lib === 'stoat.js' ? 'st' : 'rv';
    const Ctor = (lib === 'stoat.js' ? StoatClient : RevoltClient) as never;
    const which = lib as 'stoat.js' | 'revolt.js';
    const alice = await signUpWithClient(t, Ctor, which, s.apiUrl, `${tag}alice${process.pid}`);
    const bob = await signUpWithClient(t, Ctor, which, s.apiUrl, `${tag}bob${process.pid}`);
    const carol = await signUpWithClient(t, Ctor, which, s.apiUrl, `${tag}carol${process.pid}`);
    const A = alice.user.id as string;
    const B = bob.user.id as string;
    const C = carol.user.id as string;

    // Friend request by username (the clients' addFriend), then acceptance the same way.
    // Each side has the other in its cache (the clients apply UserRelationship only to cached users).
    const bobForAlice = await alice.users.fetch(B);
    t.equal(bobForAlice.relationship, 'None');
    t.equal((await bob.users.fetch(A)).relationship, 'None');
    await carol.users.fetch(A);
    await alice.users.fetch(C);
    await bobForAlice.addFriend();
    await until('alice sees Outgoing', () => alice.users.get(B)?.relationship === 'Outgoing');
    await until('bob hears of the request (UserRelationship)', () => bob.users.get(A)?.relationship === 'Incoming');
    await bob.users.get(A).addFriend();
    await until('bob: Friend', () => bob.users.get(A)?.relationship === 'Friend');
    await until('alice hears of the acceptance', () => alice.users.get(B)?.relationship === 'Friend');

    // DM: alice opens it, bob receives ChannelCreate; a message arrives live.
    const dm = await alice.users.get(B).openDM();
    t.equal(dm.type, 'DirectMessage');
    t.same([...dm.recipientIds].sort(), [A, B].sort());
    await until('bob receives the DM', () => bob.channels.get(dm.id));
    const received = new Promise<any>((resolve) => bob.on('messageCreate', (m: any) => m.channelId === dm.id && resolve(m)));
    const sent = await dm.sendMessage('hello bob');
    const got = await received;
    t.same([got.id, got.content, got.authorId], [sent.id, 'hello bob', A], 'bob got the message live');
    t.equal(bob.channels.get(dm.id).lastMessageId, sent.id, "bob's DM follows the last message");
    // A second client of bob's learns it from Ready (the server keeps it in lastmsg:<id>, apart from the DM).
    const bobAgain = await connectAgain(t, Ctor, s.apiUrl, bob);
    t.equal(bobAgain.channels.get(dm.id)?.lastMessageId, sent.id, 'Ready carries the DM\'s last message');
    t.equal(((await bobAgain.api.get(`/channels/${dm.id}`)) as { last_message_id?: string }).last_message_id, sent.id, 'and GET /channels/:id through its API layer');
    bobAgain.events.disconnect();
    const history = await bob.channels.get(dm.id).fetchMessages({ limit: 5 });
    t.equal(history[0].id, sent.id, 'history');

    // Group: carol and alice become friends; alice creates a group with bob, then adds carol.
    await carol.users.get(A).addFriend();
    await until('alice sees the request', () => alice.users.get(C)?.relationship === 'Incoming');
    await alice.users.get(C).addFriend();
    await until('carol: Friend', () => carol.users.get(A)?.relationship === 'Friend');
    const group = await alice.channels.createGroup('Trio', [B]);
    t.same([group.type, group.name, group.ownerId], ['Group', 'Trio', A]);
    await until('bob receives the group', () => bob.channels.get(group.id)?.type === 'Group');
    await maybe204(lib, group.addMember(C));
    await until('bob sees carol join (ChannelGroupJoin)', () => bob.channels.get(group.id)?.recipientIds.has(C));
    await until('carol receives the group (ChannelCreate)', () => carol.channels.get(group.id)?.recipientIds.has(C));
    const members = await carol.channels.get(group.id).fetchMembers();
    t.same(members.map((u: any) => u.id).sort(), [A, B, C].sort(), 'members');
    const inGroup = new Promise<any>((resolve) => carol.on('messageCreate', (m: any) => m.channelId === group.id && m.authorId === B && resolve(m)));
    await bob.channels.get(group.id).sendMessage('hi trio');
    t.equal((await inGroup).content, 'hi trio', 'carol gets group messages');

    // Carol leaves: the others see her go, and the group is gone from her client.
    await maybe204(lib, carol.channels.get(group.id).delete());
    await until('alice sees carol leave (ChannelGroupLeave)', () => !alice.channels.get(group.id)?.recipientIds.has(C));
    await until('bob too', () => !bob.channels.get(group.id)?.recipientIds.has(C));
    if (lib === 'stoat.js') t.notOk(carol.channels.get(group.id), "gone from carol's client");
    // revolt.js drops the channel only after its delete() resolves, which a 204 never does (see maybe204); its
    // copy follows the ChannelGroupLeave that carol also receives.
    else await until("carol's copy no longer lists her", () => !carol.channels.get(group.id)?.recipientIds.has(C));
    const dms = (await carol.api.get('/users/dms')) as Array<{ _id: string }>;
    t.notOk(dms.some((c) => c._id === group.id), 'and from her /users/dms');

    assertTraffic(t, traffic);
  });
}
