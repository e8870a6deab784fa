/**
 * Uploaded files: `file:<id>` (a FileRecord) for every processed upload of the `file-<id>` streams, and the
 * uploads nothing used yet (`rm.unattachedFiles`, scored by upload time) for the sweep (`src/media/sweep.ts`).
 * A swept upload or a purged detached file (`FileExpired`) has no record: its id never resolves again.
 */
import { evolveFile, type FileRecord } from '../src/domain/file/state.ts';
import { rm } from '../src/readmodel/keys.ts';
import type { Projection } from './types.ts';

export const filesProjection: Projection = {
  name: 'files',
  handles: ['FileUploaded', 'FileUploadAbandoned', 'FileAttached', 'FileReferenced', 'FileExpired'],
  async apply(e, tx) {
    if (!e.stream.startsWith('file-')) return;
    const fileId = e.stream.slice('file-'.length);
    const before = await tx.getJson<FileRecord>(rm.file(fileId));
    const after = evolveFile(before, e, e.revision);
    if (after) tx.setJson(rm.file(fileId), after);
    else if (before) tx.del(rm.file(fileId));
    // One member per file, all its events in the uploader's partition: ZADD/ZREM of distinct members commute.
    if (e.type === 'FileUploaded') tx.zadd(rm.unattachedFiles(), Date.parse(e.metadata.at), fileId);
    else tx.zrem(rm.unattachedFiles(), fileId);
    // A purged file leaves the purge's queue (its member was added by `fileUses`, in the owner's partition).
    if (e.type === 'FileExpired') tx.zrem(rm.detachedFiles(), fileId);
  },
};
