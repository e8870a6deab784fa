/**
 * The audit log of every server (`GET /servers/:id/audit_logs`), built from the event history, so it holds
 * an entry for everything that ever happened, also for actions taken before this projection existed (a
 * rebuild replays them). The entry of an event is computed by the pure `auditEntryOf`
 * (`src/domain/audit/entries.ts`, which documents the entry shape).
 *
 * Before/after values: the events carry only the new values, so this projection runs BEFORE the servers,
 * channels, emojis and messages projections (it is first in `projections/index.ts`) and reads the state they
 * keep — the server, its members, bans, invites and emoji, the channels and their messages, all keys of the
 * event's own scope (the server) — which at that moment is still the state before the event. The after value is `evolve(before, event)`, the same function
 * those projections apply. The runner applies the projections of one event in list order on one batch
 * transaction whose reads see earlier events' writes, so the live projector, a second projector and a rebuild
 * see the same before-state and write the same entries; entry ids come from the event (time and id), so a
 * replay writes byte-identical entries at the same keys (HSET/ZADD are idempotent).
 *
 * Keys (`rm.audit*`): the hash `audit:<server>:entries` (id → entry JSON) and sorted sets of ids, all scores
 * 0 so they are ordered by id (= by time): every entry (`audit:<server>`), by actor, by action, and by actor
 * and action, so each filtered page is one O(log n + page) range read.
 *
 * A bulk delete appends one `MessageDeleted` per message in one atomic append, and only the last lists the
 * bulk; each of them records its message's author in a small hash (`rm.auditBulk`), which the last one reads
 * into its entry and removes, in the same batch or a later one (the hash commits with the checkpoint).
 *
 * A deleted channel's permission overrides are kept (`rm.auditGoneChannels`), so the route can still tell
 * whether a reader could see that channel and redact its entries otherwise.
 *
 * A deleted server's log is dropped with it (`ServerDeleted`): nobody can be a member of a deleted server, so
 * the route could never serve it again, and keeping it would grow Redis forever. Nothing is lost: the events
 * stay in the store, and `npm run events -- state --at <position before the deletion> --server <id>`
 * rebuilds the server, its audit log included, as it was.
 */
import { AUDITED_EVENT_TYPES, auditEntryOf, auditNeeds, isBulkDeletion, type AuditEntry, type AuditFacts } from '../src/domain/audit/entries.ts';
import type { ChannelState } from '../src/domain/channel/state.ts';
import type { StoredEvent } from '../src/domain/events.ts';
import type { EmojiObject, InviteObject, MemberObject, ServerBanObject } from '../src/domain/models.ts';
import type { MessageState } from '../src/domain/message/state.ts';
import type { ServerState } from '../src/domain/server/state.ts';
import { rm } from '../src/readmodel/keys.ts';
import type { WebhookState } from '../src/domain/webhook/state.ts';
import type { Projection, ProjectionTx } from './types.ts';

/** Loads the state before the event that its entry needs; null when the server (or channel) is unknown. */
async function loadFacts(e: StoredEvent, tx: ProjectionTx): Promise<AuditFacts | null> {
  const needs = auditNeeds(e);
  if (!needs) return null;
  let channel: ChannelState | null | undefined;
  let serverId = needs.serverId;
  if (needs.channelId !== undefined) {
    channel = await tx.getJson<ChannelState>(rm.channel(needs.channelId));
    if (serverId === undefined) {
      if (!channel) return null;
      serverId = channel.server;
    }
  }
  if (serverId === undefined) return null;
  const server = await tx.getJson<ServerState>(rm.server(serverId));
  if (!server) return null;
  const facts: AuditFacts = { server };
  if (channel !== undefined) facts.channel = channel;
  if (needs.memberId !== undefined) facts.member = await tx.hgetJson<MemberObject>(rm.serverMembers(serverId), needs.memberId);
  if (needs.banId !== undefined) facts.ban = await tx.hgetJson<ServerBanObject>(rm.serverBans(serverId), needs.banId);
  if (needs.inviteCode !== undefined) facts.invite = await tx.getJson<InviteObject>(rm.invite(needs.inviteCode));
  if (needs.emojiId !== undefined) facts.emoji = await tx.hgetJson<EmojiObject>(rm.serverEmojis(serverId), needs.emojiId);
  if (needs.webhookId !== undefined) facts.webhook = await tx.getJson<WebhookState>(rm.webhook(needs.webhookId));
  if (needs.messageId !== undefined && needs.channelId !== undefined) {
    facts.message = await tx.rgetJson<MessageState>(rm.channelHistory(needs.channelId), needs.messageId);
    if (isBulkDeletion(e)) facts.bulk = await collectBulk(e, tx, serverId, needs.channelId, facts.message);
  }
  return facts;
}

/**
 * One message of a bulk delete: remembers its author; on the bulk's last event returns every message of the
 * bulk with its author, in the bulk's order (messages the read models did not hold are left out).
 */
async function collectBulk(e: StoredEvent, tx: ProjectionTx, serverId: string, channelId: string, message: MessageState | null): Promise<Array<{ _id: string; author: string }>> {
  if (e.type !== 'MessageDeleted') return [];
  const key = rm.auditBulk(serverId, channelId, e.metadata.requestId);
  if (message) tx.hsetJson(key, message._id, message.author);
  if (!e.data.bulkIds) return [];
  const authors = await tx.hgetallJson<string>(key);
  tx.del(key);
  return e.data.bulkIds.filter((id) => authors.has(id)).map((id) => ({ _id: id, author: authors.get(id)! }));
}

/** Stores an entry and adds its id to every index it belongs to. */
function writeEntry(tx: ProjectionTx, entry: AuditEntry): void {
  const serverId = entry.server;
  tx.hsetJson(rm.auditEntries(serverId), entry._id, entry);
  tx.zadd(rm.auditIndex(serverId), 0, entry._id);
  const filters: Array<{ user?: string; action?: string }> = [{ action: entry.action }];
  if (entry.actor !== null) filters.push({ user: entry.actor }, { user: entry.actor, action: entry.action });
  for (const f of filters) {
    const key = rm.auditIndex(serverId, f);
    tx.zadd(key, 0, entry._id);
    tx.sadd(rm.auditIndexes(serverId), key);
  }
}

/** Drops every key of a server's audit log. */
async function dropLog(tx: ProjectionTx, serverId: string): Promise<void> {
  for (const key of await tx.smembers(rm.auditIndexes(serverId))) tx.del(key);
  tx.del(rm.auditIndexes(serverId));
  tx.del(rm.auditIndex(serverId));
  tx.del(rm.auditEntries(serverId));
  tx.del(rm.auditGoneChannels(serverId));
}

/** Keeps a deleted channel's overrides: the route decides readers' access to its entries by them. */
function rememberGoneChannel(tx: ProjectionTx, e: StoredEvent, facts: AuditFacts): void {
  if (e.type !== 'ChannelDeleted' || !facts.channel) return;
  const c = facts.channel;
  const overrides: Pick<ChannelState, 'default_permissions' | 'role_permissions'> = {};
  if (c.default_permissions !== undefined) overrides.default_permissions = c.default_permissions;
  if (c.role_permissions !== undefined) overrides.role_permissions = c.role_permissions;
  tx.hsetJson(rm.auditGoneChannels(facts.server._id), c._id, overrides);
}

export const auditProjection: Projection = {
  name: 'audit',
  handles: AUDITED_EVENT_TYPES,
  async apply(e, tx) {
    if (e.type === 'ServerDeleted') {
      if (e.stream.startsWith('server-')) await dropLog(tx, e.stream.slice('server-'.length));
      return;
    }
    const facts = await loadFacts(e, tx);
    if (!facts) return;
    const entry = auditEntryOf(e, facts);
    if (entry) writeEntry(tx, entry);
    rememberGoneChannel(tx, e, facts);
  },
};
