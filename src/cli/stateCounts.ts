/**
 * What `events state` prints about a read-model generation (usually one rebuilt as it was at a past
 * position): counts of accounts, users, servers, channels, roles, members, bans, invites, emoji, messages,
 * audit entries, friendships, friend requests, blocks, Saved Notes, DMs and groups, and, for one server, a summary an operator investigating an incident can read: its name,
 * owner, channels (with their message counts), categories, roles with their permissions, member, ban, invite
 * and emoji counts and its latest audit entries.
 * `stateAt` rebuilds the read models up to a position into a separate prefix and reads them; the counts
 * read only the key families of `rm` (src/readmodel/keys.ts), O(keys) with batched reads.
 */
import { createRedis, scanKeys as scanEveryMaster, type RedisClient } from '../redis.ts';
import type { Logger } from 'pino';
import { PROJECTIONS } from '../../projections/index.ts';
import { deleteKeys, rebuild } from '../../projections/rebuild.ts';
import type { AuditEntry } from '../domain/audit/entries.ts';
import type { ChannelState } from '../domain/channel/state.ts';
import type { ServerState } from '../domain/server/state.ts';
import type { RelationsState } from '../domain/relationship/state.ts';
import type { PrivateChannelState } from '../domain/private/state.ts';
import type { EventStore } from '../eventstore/port.ts';
import { generationPrefix, indexesByTag, rm, shardOfKey, shardPrefix } from '../readmodel/keys.ts';

/** Counts of what a generation describes. */
export interface ReadModelCounts {
  accounts: number;
  users: number;
  servers: number;
  channels: number;
  /** Roles summed over every server. */
  roles: number;
  /** Memberships summed over every server. */
  members: number;
  bans: number;
  invites: number;
  /** Custom emoji. */
  emojis: number;
  messages: number;
  audit_entries: number;
  /** Friendships (each pair once). */
  friendships: number;
  /** Pending friend requests (each once). */
  friend_requests: number;
  /** Blocks (each blocking user's entry). */
  blocks: number;
  /** Private channels by kind. */
  saved_notes: number;
  direct_messages: number;
  groups: number;
}

/** Every key of the generation under `genPrefix` (its main slot and its shards), as logical keys. */
async function scanKeys(redis: RedisClient, genPrefix: string): Promise<string[]> {
  const out: string[] = [];
  await scanEveryMaster(redis, `${genPrefix}*`, async (keys) => {
    for (const k of keys) out.push(k.slice(genPrefix.length));
  });
  // Shard s's keys are under `<prefix>{g<N>.<s>.<k>}:` (src/readmodel/keys.ts `shardPrefix`).
  const base = shardBase(genPrefix);
  await scanEveryMaster(redis, `${base}*`, async (keys) => {
    for (const k of keys) out.push(k.slice(k.indexOf('}:', base.length) + 2));
  });
  return out;
}

/** `<prefix>{g<N>.` of a generation prefix `<prefix>{g<N>}:`. */
function shardBase(genPrefix: string): string {
  return `${genPrefix.slice(0, -2)}.`;
}

/** The full key of a logical key in the generation under `genPrefix` (`<prefix>{g<N>}:`; in its shard when it is spread). */
function fullKey(genPrefix: string, logical: string): string {
  const s = shardOfKey(logical);
  if (s < 0) return genPrefix + logical;
  const at = genPrefix.lastIndexOf('{g');
  return shardPrefix(genPrefix.slice(0, at), Number(genPrefix.slice(at + 2, -2)), s) + logical;
}

/**
 * Runs `cmd` on every key (full names), 500 at a time in one pipeline per hash tag (a pipeline on a cluster
 * stays in one slot: the keys of servers, users and channels are spread over the shards); results in order.
 */
async function batched<R>(redis: RedisClient, keys: string[], cmd: 'get' | 'hlen', parse: (raw: unknown) => R): Promise<R[]> {
  const out: R[] = new Array(keys.length);
  const bySlot = indexesByTag(keys);
  for (const list of bySlot.values()) {
    for (let n = 0; n < list.length; n += 500) {
      const p = redis.pipeline();
      const part = list.slice(n, n + 500);
      for (const i of part) p[cmd](keys[i]!);
      const res = (await p.exec()) ?? [];
      res.forEach(([err, raw], j) => {
        if (err) throw err;
        out[part[j]!] = parse(raw);
      });
    }
  }
  return out;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** Counts what the read models under `genPrefix` describe. */
export async function countReadModels(redis: RedisClient, genPrefix: string): Promise<ReadModelCounts> {
  const families = new Map<string, string[]>();
  for (const key of await scanKeys(redis, genPrefix)) {
    const parts = key.split(':');
    // `server:<id>`, `channel:<id>` …: one object per key; `server:<id>:members` …: a collection of a server.
    const family = parts.length === 2 ? parts[0]! : parts.length === 3 && ['server', 'audit', 'channel'].includes(parts[0]!) ? `${parts[0]}:${parts[2]}` : undefined;
    if (family === undefined) continue;
    const list = families.get(family) ?? [];
    list.push(key);
    families.set(family, list);
  }
  const keys = (family: string) => families.get(family) ?? [];
  const hlen = async (family: string) => sum(await batched(redis, keys(family).map((k) => fullKey(genPrefix, k)), 'hlen', Number));
  // One command per key: spread keys (a channel's messages) are in as many slots as shards.
  const zcard = async (family: string) => sum(await Promise.all(keys(family).map((k) => redis.zcard(fullKey(genPrefix, k)))));
  const servers = await batched(redis, keys('server').map((k) => fullKey(genPrefix, k)), 'get', (raw) => JSON.parse(raw as string) as ServerState);
  const relations = await batched(redis, keys('relations').map((k) => fullKey(genPrefix, k)), 'get', (raw) => JSON.parse(raw as string) as RelationsState);
  const statuses = relations.flatMap((r) => Object.values(r.relations));
  const privates = await batched(redis, keys('pchannel').map((k) => fullKey(genPrefix, k)), 'get', (raw) => (JSON.parse(raw as string) as PrivateChannelState).channel_type);
  return {
    accounts: keys('account').length,
    users: keys('user').length,
    servers: servers.length,
    channels: keys('channel').length,
    roles: sum(servers.map((s) => Object.keys(s.roles).length)),
    members: await hlen('server:members'),
    bans: await hlen('server:bans'),
    invites: keys('invite').length,
    emojis: keys('emoji').length,
    messages: await zcard('channel:history'),
    audit_entries: await hlen('audit:entries'),
    friendships: statuses.filter((s) => s === 'Friend').length / 2,
    friend_requests: statuses.filter((s) => s === 'Outgoing').length,
    blocks: statuses.filter((s) => s === 'Blocked').length,
    saved_notes: privates.filter((c) => c === 'SavedMessages').length,
    direct_messages: privates.filter((c) => c === 'DirectMessage').length,
    groups: privates.filter((c) => c === 'Group').length,
  };
}

/** One server as `events state --server <id>` prints it. */
export interface ServerSummary {
  _id: string;
  name: string;
  owner: string;
  description?: string;
  default_permissions: number;
  channels: Array<{ _id: string; name: string; voice?: boolean; messages: number }>;
  categories: Array<{ id: string; title: string; channels: string[] }>;
  /** Highest first. */
  roles: Array<{ _id: string; name: string; rank: number; permissions: { a: number; d: number } }>;
  members: number;
  bans: number;
  invites: number;
  emojis: number;
  audit_entries: number;
  /** The newest audit entries (at most 10), newest first. */
  latest_audit: Array<Pick<AuditEntry, '_id' | 'action' | 'actor' | 'target' | 'at'>>;
  /** Revision of `server-<id>` this state reflects. */
  revision: number;
}

/** The summary of one server in the generation under `genPrefix`, or null when it did not exist there. */
export async function summariseServer(redis: RedisClient, genPrefix: string, serverId: string): Promise<ServerSummary | null> {
  const raw = await redis.get(fullKey(genPrefix, rm.server(serverId)));
  if (raw === null) return null;
  const s = JSON.parse(raw) as ServerState;
  // One GET each: the channels are in as many slots as shards.
  const channelRaws = await Promise.all(s.channels.map((id) => redis.get(fullKey(genPrefix, rm.channel(id)))));
  const channels = [];
  for (const raw of channelRaws) {
    if (raw === null) continue;
    const c = JSON.parse(raw) as ChannelState;
    channels.push({ _id: c._id, name: c.name, ...(c.voice ? { voice: true } : {}), messages: await redis.zcard(fullKey(genPrefix, rm.channelHistory(c._id))) });
  }
  const latestIds = await redis.zrevrangebylex(fullKey(genPrefix, rm.auditIndex(serverId)), '+', '-', 'LIMIT', 0, 10);
  const latestRaw = latestIds.length ? await redis.hmget(fullKey(genPrefix, rm.auditEntries(serverId)), ...latestIds) : [];
  return {
    _id: s._id,
    name: s.name,
    owner: s.owner,
    ...(s.description !== undefined ? { description: s.description } : {}),
    default_permissions: s.default_permissions,
    channels,
    categories: s.categories ?? [],
    roles: Object.values(s.roles)
      .sort((a, b) => a.rank - b.rank)
      .map((r) => ({ _id: r._id, name: r.name, rank: r.rank, permissions: r.permissions })),
    members: await redis.hlen(fullKey(genPrefix, rm.serverMembers(serverId))),
    bans: await redis.hlen(fullKey(genPrefix, rm.serverBans(serverId))),
    invites: await redis.scard(fullKey(genPrefix, rm.serverInvites(serverId))),
    emojis: await redis.hlen(fullKey(genPrefix, rm.serverEmojis(serverId))),
    audit_entries: await redis.hlen(fullKey(genPrefix, rm.auditEntries(serverId))),
    latest_audit: latestRaw
      .filter((e): e is string => e !== null)
      .map((e) => JSON.parse(e) as AuditEntry)
      .map((e) => ({ _id: e._id, action: e.action, actor: e.actor, target: e.target, at: e.at })),
    revision: s.revision,
  };
}

/** Options of `stateAt`. */
export interface StateAtOptions {
  store: EventStore;
  redisUrl: string;
  /** The live `REDIS_PREFIX`; the point-in-time read models go under `<prefix>state:<ms>:`. */
  prefix: string;
  /** Last position to apply (inclusive). */
  position: bigint;
  /** Also summarise this server. */
  serverId?: string;
  /** Keep the point-in-time read models instead of deleting them. */
  keep?: boolean;
  log: Logger;
  onProgress?: (events: number) => void;
}

/** What `events state` prints: the position, how many events were applied, the counts, and the server summary when asked. */
export type StateAt = {
  position: string;
  events: number;
  /** Every key of this point-in-time state is under it (deleted unless kept). */
  prefix: string;
  /**
   * When kept: the prefix of its main slot; a read-model key `rm.*` is at `readModelKey(prefix, kept_generation,
   * key)` (src/readmodel/keys.ts: the keys of a server, user or channel are in its shard, `<prefix>{g<N>.<s>.<k>}:`).
   */
  kept?: string;
  /** When kept: the generation number of the kept read models under `prefix`. */
  kept_generation?: number;
} & ReadModelCounts & { server?: ServerSummary | null };

/**
 * The read models as they were after `position`: rebuilt from zero into a separate prefix (the live read
 * models are never touched), counted, the server summarised, then deleted unless `keep`.
 */
export async function stateAt(o: StateAtOptions): Promise<StateAt> {
  const targetPrefix = `${o.prefix}state:${Date.now()}:`;
  const r = await rebuild({
    store: o.store,
    redisUrl: o.redisUrl,
    prefix: o.prefix,
    targetPrefix,
    untilPosition: o.position,
    partitions: 1,
    projections: PROJECTIONS,
    log: o.log,
    ...(o.onProgress ? { onProgress: (p: { events: number }) => o.onProgress!(p.events) } : {}),
  });
  const redis = createRedis(o.redisUrl, { lazyConnect: true });
  try {
    const gp = generationPrefix(targetPrefix, r.generation);
    const counts = await countReadModels(redis, gp);
    // With a server: that server as it was (null when it did not exist at that position).
    const server = o.serverId !== undefined ? { server: await summariseServer(redis, gp, o.serverId) } : {};
    if (!o.keep) await deleteKeys(redis, targetPrefix);
    return { position: o.position.toString(), events: r.events, prefix: targetPrefix, ...(o.keep ? { kept: gp, kept_generation: r.generation } : {}), ...counts, ...server };
  } finally {
    redis.disconnect();
  }
}
