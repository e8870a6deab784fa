/**
 * What `events state` prints about a read-model generation (usually one rebuilt as it was at a past
 * position): counts of accounts, users, servers, channels, roles, members, bans, invites and audit entries,
 * and, for one server, a summary an operator investigating an incident can read: its name, owner, channels,
 * categories, roles with their permissions, member/ban/invite counts and its latest audit entries.
 * Reads only the key families of `rm` (src/readmodel/keys.ts); O(keys) with batched reads.
 */
import type { Redis } from 'ioredis';
import type { AuditEntry } from '../domain/audit/entries.ts';
import type { ChannelState } from '../domain/channel/state.ts';
import type { ServerState } from '../domain/server/state.ts';
import { rm } from '../readmodel/keys.ts';

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
  audit_entries: number;
}

/** Every key under a prefix, without the prefix. */
async function scanKeys(redis: Redis, prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    for (const k of keys) out.push(k.slice(prefix.length));
  } while (cursor !== '0');
  return out;
}

/** Runs `f` over `items` in batches of 500 in one pipeline each; returns the results in order. */
async function batched<T, R>(redis: Redis, items: T[], f: (p: ReturnType<Redis['pipeline']>, item: T) => void, parse: (raw: unknown) => R): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += 500) {
    const p = redis.pipeline();
    for (const item of items.slice(i, i + 500)) f(p, item);
    for (const [err, raw] of (await p.exec()) ?? []) {
      if (err) throw err;
      out.push(parse(raw));
    }
  }
  return out;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** Counts what the read models under `genPrefix` describe. */
export async function countReadModels(redis: Redis, genPrefix: string): Promise<ReadModelCounts> {
  const families = new Map<string, string[]>();
  for (const key of await scanKeys(redis, genPrefix)) {
    const parts = key.split(':');
    // `server:<id>`, `channel:<id>` …: one object per key; `server:<id>:members` …: a collection of a server.
    const family = parts.length === 2 ? parts[0]! : parts.length === 3 && (parts[0] === 'server' || parts[0] === 'audit') ? `${parts[0]}:${parts[2]}` : undefined;
    if (family === undefined) continue;
    const list = families.get(family) ?? [];
    list.push(key);
    families.set(family, list);
  }
  const keys = (family: string) => families.get(family) ?? [];
  const hlen = async (family: string) => sum(await batched(redis, keys(family), (p, k) => p.hlen(genPrefix + k), Number));
  const servers = await batched(redis, keys('server'), (p, k) => p.get(genPrefix + k), (raw) => JSON.parse(raw as string) as ServerState);
  return {
    accounts: keys('account').length,
    users: keys('user').length,
    servers: servers.length,
    channels: keys('channel').length,
    roles: sum(servers.map((s) => Object.keys(s.roles).length)),
    members: await hlen('server:members'),
    bans: await hlen('server:bans'),
    invites: keys('invite').length,
    audit_entries: await hlen('audit:entries'),
  };
}

/** One server as `events state --server <id>` prints it. */
export interface ServerSummary {
  _id: string;
  name: string;
  owner: string;
  description?: string;
  default_permissions: number;
  channels: Array<{ _id: string; name: string; voice?: boolean }>;
  categories: Array<{ id: string; title: string; channels: string[] }>;
  /** Highest first. */
  roles: Array<{ _id: string; name: string; rank: number; permissions: { a: number; d: number } }>;
  members: number;
  bans: number;
  invites: number;
  audit_entries: number;
  /** The newest audit entries (at most 10), newest first. */
  latest_audit: Array<Pick<AuditEntry, '_id' | 'action' | 'actor' | 'target' | 'at'>>;
  /** Revision of `server-<id>` this state reflects. */
  revision: number;
}

/** The summary of one server in the generation under `genPrefix`, or null when it did not exist there. */
export async function summariseServer(redis: Redis, genPrefix: string, serverId: string): Promise<ServerSummary | null> {
  const raw = await redis.get(genPrefix + rm.server(serverId));
  if (raw === null) return null;
  const s = JSON.parse(raw) as ServerState;
  const channelRaws = s.channels.length ? await redis.mget(...s.channels.map((id) => genPrefix + rm.channel(id))) : [];
  const channels = channelRaws
    .filter((c): c is string => c !== null)
    .map((c) => JSON.parse(c) as ChannelState)
    .map((c) => ({ _id: c._id, name: c.name, ...(c.voice ? { voice: true } : {}) }));
  const latestIds = await redis.zrevrangebylex(genPrefix + rm.auditIndex(serverId), '+', '-', 'LIMIT', 0, 10);
  const latestRaw = latestIds.length ? await redis.hmget(genPrefix + rm.auditEntries(serverId), ...latestIds) : [];
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
    members: await redis.hlen(genPrefix + rm.serverMembers(serverId)),
    bans: await redis.hlen(genPrefix + rm.serverBans(serverId)),
    invites: await redis.scard(genPrefix + rm.serverInvites(serverId)),
    audit_entries: await redis.hlen(genPrefix + rm.auditEntries(serverId)),
    latest_audit: latestRaw
      .filter((e): e is string => e !== null)
      .map((e) => JSON.parse(e) as AuditEntry)
      .map((e) => ({ _id: e._id, action: e.action, actor: e.actor, target: e.target, at: e.at })),
    revision: s.revision,
  };
}
