/** Uploaded files: `file:<id>` (a FileRecord) for every processed upload of the `file-<id>` streams. */
import { evolveFile, type FileRecord } from '../src/domain/file/state.ts';
import { rm } from '../src/readmodel/keys.ts';
import type { Projection } from './types.ts';

export const filesProjection: Projection = {
  name: 'files',
  handles: ['FileUploaded', 'FileUploadAbandoned', 'FileAttached', 'FileReferenced'],
  async apply(e, tx) {
    if (!e.stream.startsWith('file-')) return;
    const fileId = e.stream.slice('file-'.length);
    const before = await tx.getJson<FileRecord>(rm.file(fileId));
    const after = evolveFile(before, e, e.revision);
    if (after) tx.setJson(rm.file(fileId), after);
  },
};
