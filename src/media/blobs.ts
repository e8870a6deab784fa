/**
 * File blobs under `DATA_DIR/files` (DESIGN §2: a shared volume when roles run on several machines):
 *
 * - `incoming/<id>`: an upload as received, streamed there by the media server (never more than the tag's
 *   limit); the worker removes it once the upload is settled (stored, refused or abandoned).
 * - `<xx>/<id>` and `<xx>/<id>.webp`: the processed original and its WebP preview, `xx` being the last two
 *   characters of the id (the random end of a ULID) so no directory grows past a few thousand entries.
 * - `tmp/`: blobs being written; each is fsynced and renamed into place, so a reader never sees half a blob
 *   and a blob named by a `FileUploaded` event survives a crash.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { isFileId } from '../http/params.ts';

/** The blob directory of one service. */
export class BlobStore {
  /** Where uploads are streamed while they arrive. */
  readonly incomingDir: string;
  private readonly tmpDir: string;

  /** `root` is `DATA_DIR/files`; the directories are created at once. */
  constructor(readonly root: string) {
    this.incomingDir = path.join(root, 'incoming');
    this.tmpDir = path.join(root, 'tmp');
    fs.mkdirSync(this.incomingDir, { recursive: true });
    fs.mkdirSync(this.tmpDir, { recursive: true });
  }

  /** Path of an upload as received. */
  incomingPath(fileId: string): string {
    return path.join(this.incomingDir, safeId(fileId));
  }

  /** Path of the processed original. */
  originalPath(fileId: string): string {
    const id = safeId(fileId);
    return path.join(this.root, id.slice(-2), id);
  }

  /** Path of the WebP preview. */
  previewPath(fileId: string): string {
    return `${this.originalPath(fileId)}.webp`;
  }

  /** The upload as received, or null when it is gone. */
  async readIncoming(fileId: string): Promise<Buffer | null> {
    try {
      return await fs.promises.readFile(this.incomingPath(fileId));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  /** Removes the upload as received (no error when it is already gone). */
  async removeIncoming(fileId: string): Promise<void> {
    await fs.promises.rm(this.incomingPath(fileId), { force: true });
  }

  /** Stores the processed original and its preview (when there is one), durably and atomically. */
  async writeProcessed(fileId: string, original: Buffer, preview: Buffer | null): Promise<void> {
    await fs.promises.mkdir(path.dirname(this.originalPath(fileId)), { recursive: true });
    await Promise.all([
      this.writeAtomic(this.originalPath(fileId), original),
      preview ? this.writeAtomic(this.previewPath(fileId), preview) : Promise.resolve(),
    ]);
  }

  /** Removes the processed blobs (an abandoned upload). */
  async removeProcessed(fileId: string): Promise<void> {
    await Promise.all([
      fs.promises.rm(this.originalPath(fileId), { force: true }),
      fs.promises.rm(this.previewPath(fileId), { force: true }),
    ]);
  }

  private async writeAtomic(target: string, bytes: Buffer): Promise<void> {
    const tmp = path.join(this.tmpDir, `${path.basename(target)}.${randomBytes(6).toString('hex')}`);
    const fh = await fs.promises.open(tmp, 'w');
    try {
      await fh.writeFile(bytes);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.promises.rename(tmp, target);
  }
}

/** File ids are nanoids (or ULIDs of older uploads); anything else must never reach a path. */
function safeId(fileId: string): string {
  if (!isFileId(fileId)) throw new Error(`not a file id: ${JSON.stringify(fileId)}`);
  return fileId;
}
