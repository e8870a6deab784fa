/**
 * The retention sweep (issue 39 part 1), run by the worker role every RETENTION_SWEEP_INTERVAL_MS.
 *
 * For every channel messages were sent in (`retention:channels:<s>`, one piece per shard) or that still has a live content key, with its
 * policy (channel override, else its server's, else the instance default; DMs and groups: the default):
 * 1. every message older than the policy (its id's time before `now - max_age`) that no legal hold covers gets
 *    `MessageErased` on its own stream, appended at the revision the read model gave (an edit or a reaction
 *    racing with it makes it conflict: the next run tries again). The projections drop it as a deletion
 *    (REST, gateway MessageDelete, search, pins, files); the sweep purges its files' bytes and the cached link
 *    previews of its URLs at once;
 * 2. every time bucket of the channel that ended before `now - max_age` and holds no message any more in the
 *    read model (none left unerased: none held) gets `RetentionBucketShredded` on `contentkey-<channel>-<start>`
 *    (`no_stream`: one per bucket, whoever appends it) and its key is destroyed: the content of every event of
 *    those messages — sends, edits, previews, deleted messages too — is unreadable in the log from then on.
 *
 * A held message keeps its bucket's key (and so the content of the bucket's other messages in the log, which
 * every reader dropped already) until the hold is lifted; the next sweep after the lift erases it and destroys
 * the key. Idempotent: what was done is not in the read model or the key store any more, and an append that
 * was done already conflicts. A sweep killed midway leaves appended erasures (projected as usual) and the rest
 * for the next run; a key whose `RetentionBucketShredded` was appended but not destroyed is destroyed by the
 * projector's subscription (as `AccountDeleted`) and by the next run.
 */
import { encodeTime } from 'ulid';
import { toNewEvent } from '../domain/events.ts';
import type { MessageState } from '../domain/message/state.ts';
import { messageStream } from '../domain/message/events.ts';
import { contentKeyStream } from '../domain/retention/events.ts';
import { effectivePolicy } from '../domain/retention/state.ts';
import type { ChannelState } from '../domain/channel/state.ts';
import { WrongExpectedRevisionError } from '../eventstore/port.ts';
import type { Logger } from '../log.ts';
import type { BlobStore } from '../media/blobs.ts';
import { purgeFileNow } from '../media/sweep.ts';
import { CONTENT_SUBJECT, parseContentSubject } from '../personal/fields.ts';
import type { PersonalDataStore } from '../personal/store.ts';
import { previewCacheKeys } from '../previews/generate.ts';
import { previewUrls } from '../previews/urls.ts';
import type { RedisClient } from '../redis.ts';
import { messageChannelPieces, rm } from '../readmodel/keys.ts';
import type { ReadModels } from '../readmodel/reader.ts';
import { aboveId, belowId, fromId } from '../readmodel/records.ts';
import { activeHoldTargets, holdCovers, type HoldTargets } from './holds.ts';
import { loadPolicies } from './retentionPolicies.ts';
import type { UploadJobs } from './uploadJobs.ts';
import { startPeriodic } from '../periodic.ts';

/** What a sweep needs. */
export interface RetentionSweepDeps {
  /** The log through the personal-data boundary (its key store holds the bucket keys). */
  store: PersonalDataStore;
  readModels: ReadModels;
  blobs: BlobStore;
  log: Logger;
  /** The clock (ms). */
  now: () => number;
  /** The link-preview cache (Redis and REDIS_PREFIX), whose entries for an erased message's URLs are dropped. */
  previews?: { redis: RedisClient; prefix: string };
  /**
   * The client-event streams (`{live}:events:<n>:<i>`, what the gateway delivers from): entries older than the
   * shortest policy in force (never younger than a minute, so a lagging gateway still reads them) are trimmed,
   * since a `Message` event there carries the content as sent.
   */
  liveEvents?: { redis: RedisClient; keys: string[] };
  /** The finished upload jobs, whose data names the file: removed with the file's bytes. */
  uploadJobs?: UploadJobs;
  /** The active holds (default: `activeHoldTargets` of the read models). */
  holds?: (reader: ReadModels) => Promise<HoldTargets>;
  /** TEST HOOK: called after each message erased; throwing stops the sweep there, as a kill would. */
  afterErase?: (messageId: string) => void;
}

/** What one run did. */
export interface RetentionSweepResult {
  /** Messages erased by this run. */
  erased: string[];
  /** Expired messages kept because a hold covers them. */
  held: string[];
  /** Bucket subjects whose keys this run destroyed. */
  shredded: string[];
  /** Erasures that conflicted (the message changed or was erased by another run): tried again next time. */
  conflicts: number;
}

/** Messages erased per run at most (the rest wait for the next run). */
export const RETENTION_BATCH = 2_000;

/** Client events younger than this are never trimmed (ms). */
export const LIVE_EVENTS_FLOOR_MS = 60_000;

/** Messages read per page of a channel's history. */
const PAGE = 200;

/** The smallest ULID of millisecond `ms`: every id below it is older. */
function ulidFloor(ms: number): string {
  return encodeTime(Math.max(0, Math.floor(ms)), 10) + '0'.repeat(16);
}

/** The file ids a message uses: attachments and text-embed media. */
function messageFiles(m: MessageState): string[] {
  const ids = (m.attachments ?? []).map((f) => f._id);
  for (const embed of m.embeds ?? []) if (embed.type === 'Text' && embed.media) ids.push(embed.media._id);
  return ids;
}

/** Where a channel is: its server (null for DMs, groups, Saved Notes), or undefined when it is gone. */
async function serverOf(reader: ReadModels, channel: string): Promise<string | null | undefined> {
  const c = await reader.getJson<ChannelState>(rm.channel(channel));
  if (c) return c.server;
  if (await reader.getJson(rm.privateChannel(channel))) return null;
  return undefined;
}

/**
 * Every channel a message was ever sent in: the union of the shards' pieces of `retention:channels`. The pieces
 * are read one by one, not as one snapshot: a channel added to a piece after it was read waits for the next run,
 * as one added after the single set's read did (the pieces only grow).
 */
export async function sentChannels(readModels: Pick<ReadModels, 'smembers'>): Promise<string[]> {
  return [...new Set((await Promise.all(messageChannelPieces().map((k) => readModels.smembers(k)))).flat())];
}

/** One run of the sweep at `deps.now()`. */
export async function sweepRetention(deps: RetentionSweepDeps, batch = RETENTION_BATCH): Promise<RetentionSweepResult> {
  const out: RetentionSweepResult = { erased: [], held: [], shredded: [], conflicts: 0 };
  const policies = await loadPolicies(deps.store);
  if (policies.instance === null && Object.keys(policies.servers).length === 0 && Object.keys(policies.channels).length === 0) return out;
  const now = deps.now();
  if (deps.liveEvents) {
    const ages = [policies.instance, ...Object.values(policies.servers), ...Object.values(policies.channels)].filter((a): a is number => a !== null);
    const minId = Math.floor(now - Math.max(Math.min(...ages) * 1000, LIVE_EVENTS_FLOOR_MS));
    for (const key of deps.liveEvents.keys) await deps.liveEvents.redis.xtrim(key, 'MINID', String(minId));
  }
  const holds = await (deps.holds ?? activeHoldTargets)(deps.readModels);
  const buckets = new Map<string, Array<{ subject: string; start: number; end: number }>>();
  for (const subject of await deps.store.keys.liveSubjects(CONTENT_SUBJECT)) {
    const b = parseContentSubject(subject);
    if (!b) continue;
    const list = buckets.get(b.channel) ?? [];
    list.push({ subject, start: b.start, end: b.end });
    buckets.set(b.channel, list);
  }
  const channels = [...new Set([...(await sentChannels(deps.readModels)), ...buckets.keys()])].sort();
  for (const channel of channels) {
    const server = await serverOf(deps.readModels, channel);
    // A deleted channel's server is not known any more: its own override, else the instance default.
    const age = server === undefined ? (Object.hasOwn(policies.channels, channel) ? policies.channels[channel]! : policies.instance) : effectivePolicy(policies, channel, server);
    if (age === null) continue;
    const cutoff = now - age * 1000;
    const scope = server ?? channel;
    // A hold on the whole channel or server keeps every message and every bucket: nothing to page through.
    if (holds.channels.has(channel) || (server != null && holds.servers.has(server))) continue;
    let last: bigint | undefined;
    if (server !== undefined && out.erased.length < batch) {
      let min = '-';
      const max = belowId(ulidFloor(cutoff));
      for (;;) {
        const page = await deps.readModels.zrangeByLex(rm.channelHistory(channel), min, max, PAGE);
        for (const raw of page) {
          if (out.erased.length >= batch) break;
          const m = JSON.parse(raw) as MessageState;
          if (holdCovers(holds, { server, channel, author: m.author })) {
            out.held.push(m._id);
            continue;
          }
          const position = await erase(deps, m, channel, scope, age, now);
          if (position === null) {
            out.conflicts++;
            continue;
          }
          out.erased.push(m._id);
          last = position;
          deps.afterErase?.(m._id);
        }
        if (page.length < PAGE || out.erased.length >= batch) break;
        min = aboveId((JSON.parse(page[page.length - 1]!) as MessageState)._id);
      }
    }
    // The buckets are judged on the read model, so it must show this run's erasures first.
    if (last !== undefined) await deps.readModels.waitFor(scope, last);
    for (const b of buckets.get(channel) ?? []) {
      if (b.end > cutoff) continue;
      const left = await deps.readModels.zrangeByLex(rm.channelHistory(channel), fromId(ulidFloor(b.start)), belowId(ulidFloor(b.end)), 1);
      if (left.length > 0) continue;
      await shred(deps, channel, b, now);
      out.shredded.push(b.subject);
    }
  }
  if (out.erased.length || out.shredded.length || out.conflicts) {
    deps.log.info({ erased: out.erased.length, held: out.held.length, shredded: out.shredded.length, conflicts: out.conflicts }, 'retention sweep');
  }
  return out;
}

/** Appends the message's erasure at its revision, then purges its files and cached previews; null on a conflict. */
async function erase(deps: RetentionSweepDeps, m: MessageState, channel: string, scope: string, age: number, now: number): Promise<bigint | null> {
  const files = messageFiles(m);
  const metadata = { actor: null, requestId: `retention-${m._id}`, at: new Date(now).toISOString(), scope };
  let position: bigint;
  try {
    const r = await deps.store.append(messageStream(m._id), [toNewEvent({ type: 'MessageErased', data: { channel, author: m.author, files, max_age_seconds: age } }, metadata)], m.revision);
    position = r.position;
  } catch (err) {
    if (err instanceof WrongExpectedRevisionError) return null;
    throw err;
  }
  for (const id of files) {
    const purged = await purgeFileNow({ store: deps.store, readModels: deps.readModels, blobs: deps.blobs, log: deps.log, now: deps.now }, id);
    if (purged) await deps.uploadJobs?.remove(purged.tag, id);
  }
  if (deps.previews && m.content) {
    const keys = previewCacheKeys(deps.previews.prefix);
    const entries = previewUrls(m.content).map((u) => keys.entry(u));
    if (entries.length) await deps.previews.redis.multi().del(...entries).zrem(keys.index, ...entries).exec();
  }
  return position;
}

/** Records the bucket's end and destroys its key (the append destroys it; a bucket recorded before is destroyed here). */
async function shred(deps: RetentionSweepDeps, channel: string, b: { subject: string; start: number; end: number }, now: number): Promise<void> {
  const metadata = { actor: null, requestId: `retention-${b.start}`, at: new Date(now).toISOString(), scope: channel };
  const event = toNewEvent(
    { type: 'RetentionBucketShredded', data: { channel, subject: b.subject, from: new Date(b.start).toISOString(), to: new Date(b.end).toISOString() } },
    metadata,
  );
  try {
    await deps.store.append(contentKeyStream(channel, b.start), [event], 'no_stream');
  } catch (err) {
    if (!(err instanceof WrongExpectedRevisionError)) throw err;
    // Recorded by an earlier run that stopped before the key went.
    await deps.store.keys.destroy(b.subject);
  }
}

/** Runs the sweep every `intervalMs` (0: never), one run at a time, until closed; a failed run is logged and retried next time. */
export function startRetentionSweeper(deps: RetentionSweepDeps, intervalMs: number): { close(): Promise<void> } {
  if (intervalMs <= 0) return { close: async () => {} };
  const sweeper = startPeriodic(intervalMs, () => sweepRetention(deps), (err) => deps.log.warn({ err: err.message }, 'retention sweep failed'));
  return {
    async close() {
      await sweeper.close();
      await deps.uploadJobs?.close();
    },
  };
}
