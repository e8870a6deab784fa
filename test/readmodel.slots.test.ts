/**
 * Where every read-model key lives on a Redis Cluster (src/readmodel/keys.ts, docs/ARCHITECTURE.md "Redis
 * Cluster"): each `rm.*` family in the slot the documentation names, each partition's bookkeeping in its own home
 * slot, and the keys a script, MULTI or MGET uses together in one slot. Pure: slots are computed in-process
 * (`slotOfTag` is CRC16 as CLUSTER KEYSLOT; test/projector.shards.test.ts checks it against known slots).
 */
import t from 'tap';
import {
  generationPrefix,
  generationPrefixes,
  homeTag,
  MAIN_SLOT,
  messageChannelPieces,
  partitionKeys,
  READ_MODEL_LAYOUT,
  readModelIdentity,
  readModelKey,
  rm,
  SHARDS,
  shardOf,
  shardTag,
  slotCheckpointKey,
  slotOfTag,
} from '../src/readmodel/keys.ts';
import { ACK_SCRIPT, MENTION_SCRIPT } from '../projections/unreads.ts';

const GEN = 7;
const P = 'p:';

/** The slot of a full key: CRC16 of its hash tag. */
function slotOf(full: string): number {
  const open = full.indexOf('{');
  const close = full.indexOf('}', open + 1);
  return slotOfTag(full.slice(open + 1, close));
}

const slotOfLogical = (logical: string) => slotOf(readModelKey(P, GEN, logical));
const MAIN = slotOf(generationPrefix(P, GEN));
const shardSlot = (s: number) => slotOfTag(shardTag(GEN, s));

const CH = '01HCHANNEL0000000000000000';
const U = '01HUSER000000000000000000A';
const S = '01HSERVER00000000000000000';

/**
 * Every family of `rm`, with a sample key and the slot ARCHITECTURE.md "Redis keys" gives it: the shard of the id
 * it is named by (its server, user, channel or own id), a shard named in the key, or the main slot (instance-wide
 * singletons only). A family added to `rm` without an entry here fails.
 */
const FAMILIES: Record<keyof typeof rm, { key: string; slot: 'main' | number }> = {
  account: { key: rm.account(U), slot: shardOf(U) },
  accountByEmail: { key: rm.accountByEmail('d1'), slot: shardOf('d1') },
  session: { key: rm.session('h1'), slot: shardOf('h1') },
  user: { key: rm.user(U), slot: shardOf(U) },
  server: { key: rm.server(S), slot: shardOf(S) },
  serverMembers: { key: rm.serverMembers(S), slot: shardOf(S) },
  serverBans: { key: rm.serverBans(S), slot: shardOf(S) },
  serverDeparted: { key: rm.serverDeparted(S), slot: shardOf(S) },
  serverInvites: { key: rm.serverInvites(S), slot: shardOf(S) },
  invite: { key: rm.invite('code'), slot: shardOf('code') },
  userServers: { key: rm.userServers(U), slot: shardOf(U) },
  channel: { key: rm.channel(CH), slot: shardOf(CH) },
  lastMessage: { key: rm.lastMessage(CH), slot: shardOf(CH) },
  file: { key: rm.file('f1'), slot: shardOf('f1') },
  fileDetached: { key: rm.fileDetached('f1'), slot: shardOf('f1') },
  channelFiles: { key: rm.channelFiles(CH), slot: shardOf(CH) },
  unattachedFiles: { key: rm.unattachedFiles(), slot: 'main' },
  detachedFiles: { key: rm.detachedFiles(), slot: 'main' },
  auditEntries: { key: rm.auditEntries(S), slot: shardOf(S) },
  auditIndex: { key: rm.auditIndex(S, { user: U, action: 'X' }), slot: shardOf(S) },
  auditIndexes: { key: rm.auditIndexes(S), slot: shardOf(S) },
  auditBulk: { key: rm.auditBulk(S, CH, 'r'), slot: shardOf(S) },
  auditGoneChannels: { key: rm.auditGoneChannels(S), slot: shardOf(S) },
  channelHistory: { key: rm.channelHistory(CH), slot: shardOf(CH) },
  emoji: { key: rm.emoji('e1'), slot: shardOf('e1') },
  serverEmojis: { key: rm.serverEmojis(S), slot: shardOf(S) },
  unreadLast: { key: rm.unreadLast(U), slot: shardOf(U) },
  unreadAcked: { key: rm.unreadAcked(U), slot: shardOf(U) },
  unreadMentions: { key: rm.unreadMentions(U, CH), slot: shardOf(U) },
  unreadMentioned: { key: rm.unreadMentioned(U), slot: shardOf(U) },
  userSettings: { key: rm.userSettings(U), slot: shardOf(U) },
  userSettingsRevision: { key: rm.userSettingsRevision(U), slot: shardOf(U) },
  relations: { key: rm.relations(U), slot: shardOf(U) },
  privateChannel: { key: rm.privateChannel(CH), slot: shardOf(CH) },
  userPrivateChannels: { key: rm.userPrivateChannels(U), slot: shardOf(U) },
  groupInvites: { key: rm.groupInvites(CH), slot: shardOf(CH) },
  dmPair: { key: rm.dmPair(U, 'b'), slot: shardOf(`${U}:b`) },
  instanceStaff: { key: rm.instanceStaff(), slot: 'main' },
  report: { key: rm.report('r1'), slot: shardOf('r1') },
  reportIndex: { key: rm.reportIndex('Created'), slot: 'main' },
  sanction: { key: rm.sanction(U), slot: shardOf(U) },
  instanceAudit: { key: rm.instanceAudit(), slot: 'main' },
  holds: { key: rm.holds(), slot: 'main' },
  holdIndex: { key: rm.holdIndex(true), slot: 'main' },
  instanceAuditIndex: { key: rm.instanceAuditIndex(), slot: 'main' },
  retentionPolicies: { key: rm.retentionPolicies(), slot: 'main' },
  messageChannels: { key: rm.messageChannels(17), slot: 17 },
  serverVoice: { key: rm.serverVoice(S), slot: shardOf(S) },
  botToken: { key: rm.botToken('h'), slot: shardOf('h') },
  ownedBots: { key: rm.ownedBots(U), slot: shardOf(U) },
  webhook: { key: rm.webhook('w'), slot: shardOf('w') },
  channelWebhooks: { key: rm.channelWebhooks(CH), slot: shardOf(CH) },
};

t.test('every read-model family is in the slot the documentation names', async (t) => {
  t.same(Object.keys(FAMILIES).sort(), Object.keys(rm).sort(), 'every family of rm is listed (a new one needs its slot decided)');
  for (const [name, { key, slot }] of Object.entries(FAMILIES)) {
    const want = slot === 'main' ? MAIN : shardSlot(slot);
    t.equal(slotOfLogical(key), want, `${name} (${key}): ${slot === 'main' ? 'the main slot' : `shard ${slot}`}`);
  }
  t.same(messageChannelPieces().map(slotOfLogical), Array.from({ length: SHARDS }, (_, s) => shardSlot(s)), 'retention:channels: one piece in each shard');
  // A name that only looks like a piece stays in the main slot rather than in a shard that does not exist.
  t.equal(slotOfLogical(`retention:channels:${SHARDS}`), MAIN);
  t.equal(slotOfLogical('retention:channels:x'), MAIN);
});

t.test("each partition's bookkeeping shares its home slot; the home slots spread over the slot ranges", async (t) => {
  for (const n of [1, 2, 4, 16]) {
    const ranges = new Set<number>();
    for (let i = 0; i < n; i++) {
      const home = partitionKeys(P, GEN, n, i);
      const slots = new Set(Object.values(home).map(slotOf));
      t.equal(slots.size, 1, `${n} partitions, partition ${i}: checkpoint, event, ready, quarantine and spread record in one slot`);
      const slot = [...slots][0]!;
      t.equal(slot, slotOfTag(homeTag(GEN, n, i)));
      t.not(slot, MAIN, `${n} partitions, partition ${i}: not the main slot`);
      ranges.add(Math.floor(slot / (16384 / n)));
      // Deleting the generation deletes its home slots (`generationPrefixes`).
      for (const k of Object.values(home)) t.ok(k.startsWith(generationPrefixes(P, GEN)[1]), `${k} under the generation's prefix`);
      // The checkpoint in a secondary slot is another key than the home one (no collision) and in that slot.
      t.equal(slotOf(slotCheckpointKey(P, GEN, n, i, MAIN_SLOT)), MAIN);
      t.equal(slotOf(slotCheckpointKey(P, GEN, n, i, 5)), shardSlot(5));
      t.not(slotCheckpointKey(P, GEN, n, i, MAIN_SLOT), home.checkpoint);
    }
    t.equal(ranges.size, n, `${n} partitions: partition i's home slot in the i-th of ${n} ranges of slots`);
  }
  t.not(homeTag(GEN, 2, 0), homeTag(GEN + 1, 2, 0), 'another generation, other home tags');
  t.not(homeTag(GEN, 2, 0), homeTag(GEN, 4, 0), 'another partition count, other home tags');
});

t.test('the keys of each script are in one slot', async (t) => {
  const one = (keys: string[]) => new Set(keys.map(slotOfLogical)).size === 1;
  t.ok(ACK_SCRIPT.length > 0 && MENTION_SCRIPT.length > 0);
  t.ok(one([rm.unreadLast(U), rm.unreadAcked(U), rm.unreadMentions(U, CH), rm.unreadMentioned(U)]), 'unreads ACK_SCRIPT: one user, one slot');
  const users = ['01HUSER000000000000000000A', '01HUSER000000000000000000B', '01HUSER000000000000000000C'];
  for (const u of users) t.ok(one([rm.unreadAcked(u), rm.unreadMentions(u, CH), rm.unreadMentioned(u)]), `unreads MENTION_SCRIPT (one per user): ${u}'s keys in one slot`);
  // Every key of one entity shares its slot (a MULTI or script over one server's, user's or channel's keys).
  t.ok(one([rm.server(S), rm.serverMembers(S), rm.serverBans(S), rm.serverDeparted(S), rm.serverInvites(S), rm.serverEmojis(S), rm.auditEntries(S), rm.auditIndex(S, { user: U }), rm.auditIndexes(S), rm.auditBulk(S, CH, 'r'), rm.auditGoneChannels(S), rm.serverVoice(S)]), "a server's keys share its shard");
  t.ok(one([rm.account(U), rm.user(U), rm.userServers(U), rm.userPrivateChannels(U), rm.relations(U), rm.userSettings(U), rm.userSettingsRevision(U), rm.sanction(U), rm.ownedBots(U), rm.unreadLast(U)]), "a user's keys share their shard");
  t.ok(one([rm.privateChannel(CH), rm.groupInvites(CH), rm.lastMessage(CH)]), "a private channel's keys share its shard");
  // A channel object and its last message id: two keys, but one shard (a reader's MGET per shard stays whole).
  t.ok(one([rm.channel(CH), rm.lastMessage(CH), rm.channelHistory(CH), rm.channelFiles(CH), rm.channelWebhooks(CH)]), "a channel's keys share its shard");
});

t.test('the layout: a generation of layout 5 (checkpoints in the main slot) is of another layout', async (t) => {
  t.equal(READ_MODEL_LAYOUT, 6);
  t.not(readModelIdentity('store'), 'store layout:5', 'its identity differs, so the projector rebuilds it');
});
