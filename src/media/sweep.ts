/**
 * The sweep of unattached uploads (issue 17 item 4, DESIGN §4 "media server"): an upload nothing used within
 * UNATTACHED_FILE_MAX_AGE_MS is retired — `FileExpired` appended to `file-<id>` at the revision the sweep
 * read, so a use racing with it wins or loses as a whole (the loser conflicts: a use then answers 404, a
 * sweep skips the file) — and its processed blobs are removed (content another id shares stays).
 *
 * Candidates come from `rm.unattachedFiles` (scored by upload time), oldest first, a bounded batch per run.
 * The clock is injected. Every worker process may sweep: two sweeps of one file conflict and one skips, and
 * removing blobs twice is harmless.
 *
 * The purge of detached files works the same way on `rm.detachedFiles` (scored by the detachment's time):
 * the bytes of a file whose message was deleted, or whose avatar, icon, banner or emoji was replaced or
 * deleted, are removed DETACHED_FILE_RETENTION_MS later, with `FileExpired` (`detached`) in its stream.
 */
import { toNewEvent } from '../domain/events.ts';
import { fileStream } from '../domain/file/events.ts';
import type { FileRecord } from '../domain/file/state.ts';
import { WrongExpectedRevisionError, type EventStore } from '../eventstore/port.ts';
import type { Logger } from '../log.ts';
import type { ReadModels } from '../readmodel/reader.ts';
import { rm } from '../readmodel/keys.ts';
import type { BlobStore } from './blobs.ts';
import { startPeriodic } from '../periodic.ts';

/** What a sweep needs. */
export interface SweepDeps {
  store: EventStore;
  readModels: ReadModels;
  blobs: BlobStore;
  log: Logger;
  /** The clock (ms). */
  now: () => number;
}

/** Files looked at per run at most. */
export const SWEEP_BATCH = 500;

/**
 * Appends `FileExpired` (`reason`) to the file's stream at the revision read, then removes its processed blobs;
 * false when the file changed meanwhile (used, or retired by another worker: the next run sees the new state).
 */
async function expire(deps: SweepDeps, fileId: string, record: FileRecord, reason: 'unattached' | 'detached'): Promise<boolean> {
  const metadata = { actor: null, requestId: `${reason === 'unattached' ? 'sweep' : 'purge'}-${fileId}`, at: new Date(deps.now()).toISOString(), scope: record.uploaderId };
  try {
    await deps.store.append(fileStream(fileId), [toNewEvent({ type: 'FileExpired', data: { reason } }, metadata)], record.revision);
  } catch (err) {
    if (err instanceof WrongExpectedRevisionError) return false;
    throw err;
  }
  await deps.blobs.removeProcessed(fileId);
  return true;
}

/** Retires the uploads older than `maxAgeMs` that nothing used; returns the ids retired by this run. */
export async function sweepUnattachedFiles(deps: SweepDeps, maxAgeMs: number, batch = SWEEP_BATCH): Promise<string[]> {
  const cutoff = deps.now() - maxAgeMs;
  const candidates = await deps.readModels.zrangeByScore(rm.unattachedFiles(), cutoff, batch);
  const swept: string[] = [];
  for (const fileId of candidates) {
    const record = await deps.readModels.getJson<FileRecord>(rm.file(fileId));
    if (!record || record.usedFor !== undefined || record.referenced === true) continue;
    if (await expire(deps, fileId, record, 'unattached')) swept.push(fileId);
  }
  if (swept.length > 0) deps.log.info({ count: swept.length }, 'unattached uploads swept');
  return swept;
}

/**
 * Purges the files something let go of (a message deleted, an avatar replaced: `rm.fileDetached`) more than
 * `retentionMs` ago: `FileExpired` (`detached`) appended to `file-<id>` at the revision read — the log says
 * when and why the bytes went — then its processed blobs removed (content another id shares stays). The
 * media server stopped serving the file at its detachment already; the retention only keeps the bytes for
 * moderation and audit meanwhile. Returns the ids purged by this run.
 */
export async function purgeDetachedFiles(deps: SweepDeps, retentionMs: number, batch = SWEEP_BATCH): Promise<string[]> {
  const cutoff = deps.now() - retentionMs;
  const candidates = await deps.readModels.zrangeByScore(rm.detachedFiles(), cutoff, batch);
  const purged: string[] = [];
  for (const fileId of candidates) {
    const record = await deps.readModels.getJson<FileRecord>(rm.file(fileId));
    if (!record) {
      // Purged already (a rebuild replayed the purge before the detachment) or never a record: nothing to do.
      await deps.readModels.dequeue(rm.detachedFiles(), fileId);
      continue;
    }
    if (await expire(deps, fileId, record, 'detached')) purged.push(fileId);
  }
  if (purged.length > 0) deps.log.info({ count: purged.length }, 'detached files purged');
  return purged;
}

/**
 * Purges one detached file now (the retention sweep, for the files of a message it erased: their retention is
 * the message's policy, not DETACHED_FILE_RETENTION_MS); its record, or null when there is none or it changed meanwhile.
 */
export async function purgeFileNow(deps: SweepDeps, fileId: string): Promise<FileRecord | null> {
  const record = await deps.readModels.getJson<FileRecord>(rm.file(fileId));
  if (!record) return null;
  // Its entry in `rm.detachedFiles` stays: the purge finds no record and drops it (as for any purged file).
  return (await expire(deps, fileId, record, 'detached')) ? record : null;
}

/**
 * Runs the sweep of unattached uploads and the purge of detached files every `intervalMs` (0: never) until
 * stopped; a failed run is logged and retried next time.
 */
export function startFileSweeper(deps: SweepDeps, intervalMs: number, maxAgeMs: number, retentionMs: number): { close(): Promise<void> } {
  return startPeriodic(
    intervalMs,
    async () => {
      await sweepUnattachedFiles(deps, maxAgeMs);
      await purgeDetachedFiles(deps, retentionMs);
    },
    (err) => deps.log.warn({ err: err.message }, 'file sweep failed'),
  );
}
