/**
 * Redis key layout. Every key lives under `REDIS_PREFIX`. Read models live under a *generation*
 * (`<prefix>{g<N>}:`) so a rebuild can fill fresh keys and swap them in; control keys do not.
 *
 * Hash tags (`{…}`) keep every multi-key operation inside one Redis Cluster slot (docs/ARCHITECTURE.md
 * "Redis Cluster"): `{g<N>.p<n>.<i>.<k>}` partition i of n's home slot (its checkpoint, ready mark, quarantine,
 * spread record and redo log: every batch's first MULTI, WATCH on the checkpoint; `homeTag`, `partitionKeys`),
 * `{g<N>}` the generation's main slot (the instance-wide singletons only), `{g<N>.<s>.<k>}` shard s (every read
 * model of a server, user, channel or object whose id falls in shard s, and piece s of the retention channel set:
 * `shardOfKey`, `shardTag`); the main slot and each shard hold a per-partition checkpoint of their own
 * (`slotCheckpointKey`), so any partition writes any of them exactly once; `{ctl}` the generation bookkeeping (one
 * script), `{live}` the presence stream and hashes (one script) and on one Redis the client-event streams (one
 * XREAD), `{live.<j>.<k>}` live shard j of the client-event streams on a cluster (`liveTag`, one XREAD each).
 * On one Redis the tags change nothing.
 */
import { partitionOf } from '../partition.ts';

/**
 * The layout of the read models. A generation records the identity of the event store its checkpoints are
 * positions of together with this layout (`readModelIdentity`); a process of another layout finds the
 * generation "of another store" and rebuilds the read models from the log on its first start. Raise it with
 * every change of what a read-model key holds.
 * 2: a channel's messages became one sorted set of the stored messages (`channel:<id>:history`) instead of a
 *    sorted set of ids beside a hash of the messages.
 * 3: a channel's `last_message_id` moved out of `channel:<id>` / `pchannel:<id>` into `lastmsg:<id>`, so a
 *    message sent no longer rewrites (and drops from every API process's fact cache) the channel it is in.
 * 4: retention (issue 39): `retention:policies` and `retention:channels` (every channel a message was sent in,
 *    which the retention sweep walks) are kept from the log's start, so an older generation is rebuilt.
 * 5: a server channel (`channel:<id>`), its history and `lastmsg:<id>` moved out of the generation's slot into
 *    one of `SHARDS` shards (`{g<N>.<s>.<k>}`, s from the channel id), so a Redis Cluster spreads them over its masters.
 * 6: each projector partition keeps its checkpoint, checkpoint event, ready mark, quarantine and spread record in
 *    a home slot of its own (`{g<N>.p<n>.<i>.<k>}`, `homeTag`) instead of the generation's main slot, which becomes
 *    one more secondary slot with a per-partition checkpoint; every read model named by an id moved into the shard
 *    of that id (`shardOfKey`), leaving the instance-wide singletons in the main slot; `retention:channels` became
 *    one piece per shard (`retention:channels:<s>`, merged on read).
 */
export const READ_MODEL_LAYOUT = 6;

/**
 * How many shards a generation spreads its channel-keyed read models over (docs/ARCHITECTURE.md "Redis
 * Cluster"). Fixed per layout, much larger than any number of masters: masters are added and slots moved
 * without re-partitioning. Changing it changes where keys live: raise `READ_MODEL_LAYOUT` with it.
 */
export const SHARDS = 64;

/** The shard of a channel's spread keys (FNV-1a of the channel id, as `partitionOf`). */
export function shardOf(channelId: string): number {
  return partitionOf(channelId, SHARDS);
}

/**
 * The families a logical key's first id places in a shard (`<family>:<id>[:…]`, shard = `shardOf(id)`): every key of
 * one server, one user, one channel or one object named by its own id shares a shard, so the scripts and MULTIs
 * over one entity's keys stay in one slot.
 */
const BY_ID = new Set(['server', 'audit', 'voice', 'user', 'relations', 'settings', 'unreads', 'sanction', 'bots', 'pchannel', 'channel', 'session', 'invite', 'emoji', 'file', 'report', 'bottoken', 'webhook']);

/**
 * The shard of a logical read-model key, or `MAIN_SLOT` (-1) for the generation's main slot. Every reader finds a
 * key's shard from its name (no locator): a key of a server, user, channel or object is in the shard of that id
 * (`BY_ID`; `lastmsg:<channel>`, `account:<user>`, `account:email:<digest>`, `dm:<a>:<b>` of the pair), piece s of
 * `retention:channels` in shard s, and only the instance-wide singletons (`instance:*`, `reports*`, `holds*`,
 * `retention:policies`, `files:*`) and names no family claims stay in the main slot.
 */
export function shardOfKey(logical: string): number {
  const c1 = logical.indexOf(':');
  if (c1 < 0) return MAIN_SLOT;
  const family = logical.slice(0, c1);
  const c2 = logical.indexOf(':', c1 + 1);
  const id = c2 < 0 ? logical.slice(c1 + 1) : logical.slice(c1 + 1, c2);
  if (BY_ID.has(family)) return shardOf(id);
  switch (family) {
    case 'lastmsg':
      return shardOf(logical.slice(c1 + 1));
    case 'account':
      // `account:email:<digest>` by the digest (a user id is a ULID, never "email").
      return id === 'email' && c2 >= 0 ? shardOf(logical.slice(c2 + 1)) : shardOf(id);
    case 'dm':
      return shardOf(logical.slice(c1 + 1));
    case 'retention': {
      // A piece of a key several partitions write, merged on read: its shard is in its name.
      if (id !== 'channels' || c2 < 0) return MAIN_SLOT;
      const s = Number(logical.slice(c2 + 1));
      return Number.isInteger(s) && s >= 0 && s < SHARDS ? s : MAIN_SLOT;
    }
    default:
      return MAIN_SLOT;
  }
}

/**
 * The slots a partition's batch writes, by their number in `shardOfKey`, `ShardRouting` and the spread record:
 * 0 … SHARDS-1 the shards, `MAIN_SLOT` the generation's main slot `{g<N>}`, `HOME_SLOT` the partition's home
 * slot (its checkpoint, spread record, ready mark and quarantine: `partitionKeys`).
 */
export const MAIN_SLOT = -1;
/** The partition's home slot (see `MAIN_SLOT`). */
export const HOME_SLOT = -2;

/** CRC16 (XMODEM) table: Redis Cluster's key slot is CRC16 of the hash tag mod 16384. */
const CRC16 = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let j = 0; j < 8; j++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

/** The Redis Cluster slot of a hash tag (the text between the braces; ASCII). */
export function slotOfTag(tag: string): number {
  let crc = 0;
  for (let i = 0; i < tag.length; i++) crc = ((crc << 8) & 0xffff) ^ CRC16[((crc >> 8) ^ tag.charCodeAt(i)) & 0xff]!;
  return crc & 16383;
}

const shardTags = new Map<number, string[]>();

/**
 * The hash tag of shard s in generation `gen`: `g<N>.<s>.<k>`, the first k whose slot falls in the s-th of
 * `SHARDS` equal ranges of the 16,384 slots. The shards are then spread over the slots evenly rather than at
 * random, so masters that own equal ranges of slots (`redis-cli --cluster create`, `--cluster rebalance`) own
 * equal numbers of shards. Deterministic: every process computes the same tags (about 64 CRCs per shard, once
 * per generation).
 */
export function shardTag(gen: number, shard: number): string {
  let tags = shardTags.get(gen);
  if (!tags) {
    const width = 16384 / SHARDS;
    tags = Array.from({ length: SHARDS }, (_, s) => {
      for (let k = 0; k < 100_000; k++) {
        const tag = `g${gen}.${s}.${k}`;
        if (Math.floor(slotOfTag(tag) / width) === s) return tag;
      }
      return `g${gen}.${s}.0`;
    });
    if (shardTags.size > 16) shardTags.clear();
    shardTags.set(gen, tags);
  }
  return tags[shard]!;
}

const homeTags = new Map<string, string[]>();

/**
 * The hash tag of partition i of n's home slot in generation `gen`: `g<N>.p<n>.<i>.<k>`, the first k whose slot
 * falls near the middle of the i-th of n equal ranges of the 16,384 slots (within an eighth of the range's
 * width; else anywhere in it), so a cluster whose masters own equal ranges of slots holds equal numbers of
 * partitions' checkpoints, and few partitions still land on different masters (2 partitions on 3 masters: the
 * first and the last). Under `<prefix>{g<N>.` like the shards, so deleting a generation (`generationPrefixes`)
 * deletes the home slots too.
 */
export function homeTag(gen: number, partitions: number, i: number): string {
  const id = `${gen}:${partitions}`;
  let tags = homeTags.get(id);
  if (!tags) {
    const width = 16384 / partitions;
    const find = (p: number, near: number): string | undefined => {
      const centre = (p + 0.5) * width;
      for (let k = 0; k < 100_000; k++) {
        const tag = `g${gen}.p${partitions}.${p}.${k}`;
        const slot = slotOfTag(tag);
        if (Math.floor(slot / width) === p && Math.abs(slot + 0.5 - centre) <= near) return tag;
      }
      return undefined;
    };
    tags = Array.from({ length: partitions }, (_, p) => find(p, width / 8) ?? find(p, width) ?? `g${gen}.p${partitions}.${p}.0`);
    if (homeTags.size > 16) homeTags.clear();
    homeTags.set(id, tags);
  }
  return tags[i]!;
}

/** Prefix of partition i of n's home-slot keys in generation `gen`. */
export function homePrefix(prefix: string, gen: number, partitions: number, i: number): string {
  return `${prefix}{${homeTag(gen, partitions, i)}}:`;
}

/**
 * The full keys of partition i of n's bookkeeping in generation `gen`, all in its home slot (`genKeys` names
 * them), so its batch's first MULTI (WATCH on the checkpoint) and a reader's MGET of checkpoint and spread record
 * stay in one slot.
 */
export function partitionKeys(prefix: string, gen: number, partitions: number, i: number) {
  const p = homePrefix(prefix, gen, partitions, i);
  return {
    checkpoint: p + genKeys.checkpoint(partitions, i),
    checkpointEvent: p + genKeys.checkpointEvent(partitions, i),
    caughtUp: p + genKeys.caughtUp(partitions, i),
    quarantine: p + genKeys.quarantine(partitions, i),
    spread: p + genKeys.spread(partitions, i),
    redo: p + genKeys.redo(partitions, i),
  };
}

/**
 * The full key of partition i of n's checkpoint in a secondary slot of generation `gen` (a shard, or
 * `MAIN_SLOT`): the position up to which its writes to that slot are applied.
 */
export function slotCheckpointKey(prefix: string, gen: number, partitions: number, i: number, slot: number): string {
  return (slot === MAIN_SLOT ? generationPrefix(prefix, gen) : shardPrefix(prefix, gen, slot)) + genKeys.shardCheckpoint(partitions, i);
}

/**
 * How many streams each projector partition's client events spread over on a Redis Cluster (docs/
 * ARCHITECTURE.md "Redis Cluster"): live shard j of every partition shares the tag `liveTag(j)`, so an API
 * process reads them with one XREAD per live shard. An event of a channel goes to the live shard of its
 * channel; any other event to every live shard of its partition (`liveShardOf`). On one Redis a partition keeps
 * its one stream (`{live}:events:<n>:<i>`): spreading buys nothing there.
 */
export const LIVE_SHARDS = 16;

/** The number of live shards per partition: `LIVE_SHARDS` on a cluster, 1 (the one stream) on one Redis. */
export function liveShardCount(cluster: boolean): number {
  return cluster ? LIVE_SHARDS : 1;
}

/**
 * The live shard (of `liveShards`) of a client event: its channel's (a server channel's, or a private
 * channel's with a `users` route naming it), so one channel's events stay in one stream in order; -1 for any
 * other event, which goes to every live shard of its partition (each stream then holds, in the partition's
 * order, every event that can change who receives a channel event, and the reader applies the first copy).
 */
export function liveShardOf(route: { kind: string; channelId?: string }, liveShards: number): number {
  if (liveShards <= 1) return 0;
  if ((route.kind === 'channel' || route.kind === 'users') && typeof route.channelId === 'string') return partitionOf(route.channelId, liveShards);
  return -1;
}

const liveTags = new Map<number, string[]>();

/** The hash tag of live shard j of `liveShards`: `live.<j>.<k>`, spread over the slots as `shardTag`. */
export function liveTag(j: number, liveShards: number = LIVE_SHARDS): string {
  let tags = liveTags.get(liveShards);
  if (!tags) {
    const width = 16384 / liveShards;
    tags = Array.from({ length: liveShards }, (_, s) => {
      for (let k = 0; k < 100_000; k++) {
        const tag = `live.${s}.${k}`;
        if (Math.floor(slotOfTag(tag) / width) === s) return tag;
      }
      return `live.${s}.0`;
    });
    liveTags.set(liveShards, tags);
  }
  return tags[j]!;
}

/**
 * The client-event streams, grouped by slot: with one live shard, one group of every partition's stream
 * (one XREAD); with several, group j holds live shard j of every partition (`groups[j][i]` is partition i's).
 */
export function clientEventGroups(prefix: string, partitions: number, liveShards: number): string[][] {
  const ctl = controlKeys(prefix);
  if (liveShards <= 1) return [Array.from({ length: partitions }, (_, i) => ctl.clientEvents(partitions, i))];
  return Array.from({ length: liveShards }, (_, j) => Array.from({ length: partitions }, (_, i) => ctl.clientEvents(partitions, i, j, liveShards)));
}

/** Prefix of shard s's keys in generation `gen`. */
export function shardPrefix(prefix: string, gen: number, shard: number): string {
  return `${prefix}{${shardTag(gen, shard)}}:`;
}

/**
 * The prefixes under which generation `gen` keeps its keys: the main slot's, then the start every shard's and
 * home slot's prefix shares (`<prefix>{g<N>.`; no other generation's keys start so). Deleting a generation
 * deletes both.
 */
export function generationPrefixes(prefix: string, gen: number): [string, string] {
  return [generationPrefix(prefix, gen), `${prefix}{g${gen}.`];
}

/** Every piece of `rm.messageChannels`, to be read together (a union). */
export function messageChannelPieces(): string[] {
  return Array.from({ length: SHARDS }, (_, s) => rm.messageChannels(s));
}

/** Full key of a logical read-model key in generation `gen` (in its shard when it is spread). */
export function readModelKey(prefix: string, gen: number, logical: string): string {
  const s = shardOfKey(logical);
  return s < 0 ? generationPrefix(prefix, gen) + logical : shardPrefix(prefix, gen, s) + logical;
}

/** What a generation records as its origin: the event store's identity and the read-model layout. */
export function readModelIdentity(storeIdentity: string): string {
  return `${storeIdentity} layout:${READ_MODEL_LAYOUT}`;
}

/** Control keys and channels (not generation-scoped). */
export function controlKeys(prefix: string) {
  return {
    /** Current read-model generation (a number). */
    generation: `${prefix}{ctl}:gen`,
    /** Counter handing out new generation numbers. */
    generationSeq: `${prefix}{ctl}:gen:seq`,
    /** Hash generation → identity of the event store its checkpoints are positions of (`EventStore.identity()`). */
    generationStores: `${prefix}{ctl}:stores`,
    /** Pub/sub channel for checkpoint announcements: `<gen>:<partition>:<position>`. */
    checkpointChannel: `${prefix}cp`,
    /** Pub/sub channel for control messages (generation swaps, store commits). */
    controlChannel: `${prefix}control`,
    /** Lease of projector partition i of n. */
    lease: (partitions: number, i: number) => `${prefix}lease:${partitions}:${i}`,
    /** Set (with a TTL) by a projector that prefers partition i of n, so a stand-in hands it back. */
    want: (partitions: number, i: number) => `${prefix}want:${partitions}:${i}`,
    /**
     * Redis stream of client events produced by partition i of n (read by every API process); with a live
     * shard j of `liveShards` (a cluster: `liveShardCount`), that live shard's stream, in the slot of `liveTag(j)`.
     */
    clientEvents: (partitions: number, i: number, liveShard = -1, liveShards: number = LIVE_SHARDS) =>
      liveShard < 0 ? `${prefix}{live}:events:${partitions}:${i}` : `${prefix}{${liveTag(liveShard, liveShards)}}:events:${partitions}:${i}`,
    /**
     * Redis stream of partition i of n's commits as the API processes' fact caches need them: one entry
     * `i` = `{g, p, q, k}` per commit (src/readmodel/factCache.ts), in the same MULTI as the checkpoint.
     */
    invalidations: (partitions: number, i: number) => `${prefix}{live}:inv:${partitions}:${i}`,
    /** Presence: hash user → number of API processes holding a WebSocket of that user (absent = offline). */
    presenceUsers: `${prefix}{live}:presence:users`,
    /** Presence: sorted set of API processes, scored by the time (ms) their registration expires. */
    presenceProcesses: `${prefix}{live}:presence:procs`,
    /** Presence: hash of the users one API process holds sockets of (user → 1). */
    presenceProcess: (processId: string) => `${prefix}{live}:presence:proc:${processId}`,
    /** Redis stream of presence changes (`UserUpdate {online}`), read by every API process with the client events. */
    presenceEvents: `${prefix}{live}:presence:events`,
  };
}

/** Prefix of one generation's read-model keys. */
export function generationPrefix(prefix: string, gen: number): string {
  return `${prefix}{g${gen}}:`;
}

/**
 * Per-generation bookkeeping keys of partition i of n: below its home prefix (`partitionKeys`), except
 * `shardCheckpoint`, which is below each secondary slot's prefix (`slotCheckpointKey`).
 */
export const genKeys = {
  /** Checkpoint (global position, decimal) of partition i of n: everything up to it is in its home slot. */
  checkpoint: (partitions: number, i: number) => `cp:${partitions}:${i}`,
  /**
   * Id of the event at partition i of n's checkpoint, written in the checkpoint's MULTI: the projector resumes
   * only when the log still holds that event there (a log that went back in time starts a new generation).
   */
  checkpointEvent: (partitions: number, i: number) => `cpe:${partitions}:${i}`,
  /** Set once partition i of n has caught up with the log in this generation. */
  caughtUp: (partitions: number, i: number) => `ready:${partitions}:${i}`,
  /**
   * Hash position → JSON `{eventId, position, type, stream, partition, projection, error, at}` of the events
   * partition i of n quarantined in this generation (a projection threw on them; `projections/quarantine.ts`).
   */
  quarantine: (partitions: number, i: number) => `quarantine:${partitions}:${i}`,
  /**
   * Below a secondary slot's prefix (a shard's, `shardPrefix`, or the main slot's, `generationPrefix`): the
   * position up to which partition i of n's writes to that slot are applied (written in the same MULTI as those
   * writes; only with split commits, on a cluster). Another tag than the home checkpoint, so no collision.
   */
  shardCheckpoint: (partitions: number, i: number) => `cp:${partitions}:${i}`,
  /**
   * On a cluster, JSON `{f, t, v}` while partition i of n's batch `(f, t]` is committed in its home slot but
   * maybe not yet in the secondary slots `v` (shard numbers, `MAIN_SLOT` = -1 for the main slot; written in the
   * home MULTI, removed once every slot committed): the runner resumes from `f` and readers treat `f` as the
   * partition's position (`projections/runner.ts`).
   */
  spread: (partitions: number, i: number) => `spread:${partitions}:${i}`,
  /**
   * Beside the spread record, in the same MULTI: hash slot number → JSON of the batch's commands for that slot,
   * which the next runner applies to the slots of `v` still behind `t` after a crash (`PartitionRunner.repair`)
   * instead of replaying the events; removed with the record.
   */
  redo: (partitions: number, i: number) => `redo:${partitions}:${i}`,
};

/**
 * Logical keys of the read models (below the generation prefix). One place, so a reader finds who
 * writes what: the projection named in each comment is the only writer.
 */
export const rm = {
  /** AccountState JSON (projection `accounts`). */
  account: (userId: string) => `account:${userId}`,
  /** User id owning an email, as JSON string (projection `accounts`); keyed by the email's SHA-256. */
  accountByEmail: (emailDigest: string) => `account:email:${emailDigest}`,
  /** `{sessionId, userId, name}` for a token hash (projection `accounts`). */
  session: (tokenHash: string) => `session:${tokenHash}`,
  /** The public UserProfile JSON, present once onboarded (projection `accounts`). */
  user: (userId: string) => `user:${userId}`,

  /** ServerState JSON: Revolt's Server plus the `server-<id>` revision (projection `servers`). */
  server: (serverId: string) => `server:${serverId}`,
  /** Hash user id → Member JSON of every member (projection `servers`). */
  serverMembers: (serverId: string) => `server:${serverId}:members`,
  /** Hash user id → ServerBan JSON (projection `servers`). */
  serverBans: (serverId: string) => `server:${serverId}:bans`,
  /**
   * Hash user id → `{timeout?, can_publish?, can_receive?}` of members who left while moderated (projection
   * `servers`); a rejoin carries it back in its `MemberJoined` (moderation survives leave and rejoin).
   */
  serverDeparted: (serverId: string) => `server:${serverId}:departed`,
  /** Set of the server's invite codes (projection `servers`). */
  serverInvites: (serverId: string) => `server:${serverId}:invites`,
  /** Invite JSON by code (projection `servers`; written by the partition of the invite's server). */
  invite: (code: string) => `invite:${code}`,
  /**
   * Set of the server ids a user is a member of (projection `servers`). Written from the partition of each
   * server, so only with SADD/SREM (commutative); readers must treat it as a hint and check `server:<id>`.
   */
  userServers: (userId: string) => `user:${userId}:servers`,
  /**
   * ChannelState JSON: Stoat's TextChannel plus the `channel-<id>` revision (projection `channels`), without
   * `last_message_id` (in `lastMessage`).
   */
  channel: (channelId: string) => `channel:${channelId}`,
  /**
   * The id (JSON string) of the last message sent in a server channel, DM or group: Stoat's `last_message_id`
   * (projections `channels` and `privateChannels`), merged into the channel objects clients are shown
   * (src/readmodel/lastMessages.ts). Apart from the channel so that a send leaves the channel's fact cached.
   */
  lastMessage: (channelId: string) => `lastmsg:${channelId}`,

  /** FileRecord JSON of a processed upload: File object, uploader, tag, usedFor/referenced, revision (projection `files`). */
  file: (fileId: string) => `file:${fileId}`,
  /**
   * `{at, by}` JSON once nothing uses the file any more (its message, avatar, icon, banner, background or
   * emoji was deleted or replaced): the media server stops serving it (projection `fileUses`).
   */
  fileDetached: (fileId: string) => `file:${fileId}:detached`,
  /** Hash file id → message id of the files (attachments, embed media) used by a channel's messages (projection `fileUses`). */
  channelFiles: (channelId: string) => `channel:${channelId}:files`,
  /** Sorted set of processed uploads nothing used yet, scored by upload time in ms (projection `files`; read by the sweep). */
  unattachedFiles: () => 'files:unattached',
  /**
   * Sorted set of files something let go of (`fileDetached`), scored by the detachment's time in ms: the purge's
   * queue (projection `fileUses` adds, `files` removes on `FileExpired`; the purge also removes an id whose
   * record is gone, which a rebuild can leave when the uploader's partition runs ahead of the owner's).
   */
  detachedFiles: () => 'files:detached',

  /** Hash entry id → AuditEntry JSON of a server's audit log (projection `audit`). */
  auditEntries: (serverId: string) => `audit:${serverId}:entries`,
  /**
   * Sorted set (all scores 0, so ordered by id = by time) of the ids of a server's audit entries, optionally
   * only those of one actor and/or one action (projection `audit`). Without a filter: every entry.
   */
  auditIndex: (serverId: string, filter: { user?: string | undefined; action?: string | undefined } = {}) =>
    `audit:${serverId}${filter.user !== undefined ? `:user:${filter.user}` : ''}${filter.action !== undefined ? `:action:${filter.action}` : ''}`,
  /** Set of the filtered index keys (logical) a server's audit log has, to drop them with it (projection `audit`). */
  auditIndexes: (serverId: string) => `audit:${serverId}:indexes`,
  /**
   * Hash message id → author of the messages of a bulk delete seen so far (projection `audit`): written by each
   * of the bulk's `MessageDeleted` events, read and removed by its last one, all of one atomic append.
   */
  auditBulk: (serverId: string, channelId: string, requestId: string) => `audit:${serverId}:bulk:${channelId}:${requestId}`,
  /**
   * Hash channel id → `{default_permissions?, role_permissions?}` of a server's deleted channels as they last
   * were (projection `audit`): the audit route decides a reader's access to an entry of a channel that is gone.
   */
  auditGoneChannels: (serverId: string) => `audit:${serverId}:gone`,

  /**
   * The channel's messages: a sorted set whose members are the stored messages themselves (MessageState JSON
   * with the stream revision, `storedMessage` layout, so each begins `{"_id":"<id>"`), all scored 0. Members
   * sort by their bytes, so by id (ULID = time order): ZRANGEBYLEX pages through them at O(log n + page) and
   * hands a page back in one reply, and one message is the range of its id (`messageBounds`, src/readmodel/
   * messages.ts) (projection `messages`).
   */
  channelHistory: (channelId: string) => `channel:${channelId}:history`,

  /** Emoji JSON by id (projection `emojis`; written by the partition of the emoji's server). */
  emoji: (emojiId: string) => `emoji:${emojiId}`,
  /** Hash emoji id → Emoji JSON of a server's custom emoji (projection `emojis`). */
  serverEmojis: (serverId: string) => `server:${serverId}:emojis`,

  /**
   * Hash channel id → the id (JSON string) of the message the user last acknowledged there, in the order the
   * acks were made (Stoat's `last_id`; may move back: "mark as unread") (projection `unreads`, user partition).
   */
  unreadLast: (userId: string) => `unreads:${userId}:last`,
  /** Hash channel id → the highest message id (JSON string) the user ever acknowledged there (projection `unreads`). */
  unreadAcked: (userId: string) => `unreads:${userId}:acked`,
  /**
   * Sorted set (scores 0) of the ids of the messages that mention the user in a channel and are above its
   * highest ack (projection `unreads`: added by the message's partition, pruned by the user's acks, both
   * through one Lua script each, so the order between them does not matter).
   */
  unreadMentions: (userId: string, channelId: string) => `unreads:${userId}:mentions:${channelId}`,
  /** Set of the channel ids whose `unreadMentions` is non-empty (projection `unreads`). */
  unreadMentioned: (userId: string) => `unreads:${userId}:mentioned`,

  /** Hash key → `[timestamp, value]` JSON of a user's synced settings (projection `settings`). */
  userSettings: (userId: string) => `settings:${userId}`,
  /** Revision (JSON number) of `settings-<userId>`, the expected revision of the next write (projection `settings`). */
  userSettingsRevision: (userId: string) => `settings:${userId}:revision`,
  /** RelationsState JSON: a user's relationships with the `relations-<id>` revision (projection `relationships`). */
  relations: (userId: string) => `relations:${userId}`,
  /** PrivateChannelState JSON of Saved Notes, a DM or a group (projection `privateChannels`). */
  privateChannel: (channelId: string) => `pchannel:${channelId}`,
  /**
   * Set of the private channel ids a user belongs to (projection `privateChannels`). Written from each
   * channel's partition with SADD/SREM only; a hint: the channel's `recipients` decide.
   */
  userPrivateChannels: (userId: string) => `user:${userId}:dms`,
  /** Set of a group's invite codes, to drop them with it (projection `privateChannels`). */
  groupInvites: (channelId: string) => `pchannel:${channelId}:invites`,
  /** The DM channel id of two users (or a user's Saved Notes) as a JSON string (projection `privateChannels`). */
  dmPair: (a: string, b: string) => (a <= b ? `dm:${a}:${b}` : `dm:${b}:${a}`),
  /** Hash user id → InstanceRole JSON of the instance staff (projection `moderation`). */
  instanceStaff: () => 'instance:staff',
  /** ReportState JSON (projection `moderation`). */
  report: (reportId: string) => `report:${reportId}`,
  /** Sorted set (scores 0, members report ids = ULIDs) of every report, or of those with one status (projection `moderation`). */
  reportIndex: (status?: string) => (status === undefined ? 'reports' : `reports:status:${status}`),
  /** SanctionState JSON of an account (projection `moderation`, in the account's partition). */
  sanction: (userId: string) => `sanction:${userId}`,
  /** Hash entry key → InstanceAuditEntry JSON (projection `moderation`; written by several partitions, unique keys). */
  instanceAudit: () => 'instance:audit',
  /** Hash hold id → HoldState JSON of every legal hold, standing or lifted (projection `holds`). */
  holds: () => 'holds',
  /** Sorted set (scores 0, so ordered by id = by time) of hold ids: all of them, or only the standing ones (projection `holds`). */
  holdIndex: (standing = false) => (standing ? 'holds:standing' : 'holds:index'),
  /** Sorted set (scores 0, members `<ISO time>|<event id>`) of the instance audit log (projection `moderation`). */
  instanceAuditIndex: () => 'instance:audit:index',
  /** The retention policies (`RetentionPolicies` JSON, projection `retention`). */
  retentionPolicies: () => 'retention:policies',
  /**
   * Set of every channel of shard s (`shardOf`) a message was ever sent in: the channels the retention sweep
   * looks at, in one piece per shard (every partition SADDs to it, so a single set would tie every send's
   * batch to the main slot); the sweep reads the union of the `SHARDS` pieces (`messageChannelPieces`).
   */
  messageChannels: (shard: number) => `retention:channels:${shard}`,

  /** ServerVoiceState JSON: who is in which voice channel of the server, with the `voice-<id>` revision (projection `voice`). */
  serverVoice: (serverId: string) => `voice:${serverId}`,

  /** `{userId}` of the bot whose token has this SHA-256 (projection `accounts`). */
  botToken: (tokenHash: string) => `bottoken:${tokenHash}`,
  /** `{ids, revision}` JSON: the bots a user owns and the `bots-<owner>` revision (projection `bots`). */
  ownedBots: (ownerId: string) => `bots:${ownerId}`,
  /** WebhookState JSON (projection `webhooks`). */
  webhook: (webhookId: string) => `webhook:${webhookId}`,
  /** Set of the ids of a channel's webhooks (projection `webhooks`). */
  channelWebhooks: (channelId: string) => `channel:${channelId}:webhooks`,
};

/**
 * The indexes of `keys` grouped by their hash tag (`{…}`, '' for a key without one), in order within each group:
 * what one multi-key command or pipeline on a cluster may carry together.
 */
export function indexesByTag(keys: readonly string[]): Map<string, number[]> {
  const bySlot = new Map<string, number[]>();
  keys.forEach((k, i) => {
    const tag = k.slice(k.indexOf('{'), k.indexOf('}') + 1);
    const list = bySlot.get(tag);
    if (list) list.push(i);
    else bySlot.set(tag, [i]);
  });
  return bySlot;
}
