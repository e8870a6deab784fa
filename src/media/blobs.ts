/**
 * File blobs under `DATA_DIR/files` (DESIGN §2: a shared volume when roles run on several machines):
 *
 * - `incoming/<id>`: an upload as received, streamed there by the media server (never more than the tag's
 *   limit); the worker removes it once the upload is settled (stored, refused or abandoned).
 * - `<xx>/<id>` and `<xx>/<id>.webp`: the processed original and its WebP preview, `xx` being the last two
 *   characters of the id (the random end of a ULID) so no directory grows past a few thousand entries.
 * - `tmp/`: blobs being written; each is fsynced and renamed into place, so a reader never sees half a blob
 *   and a blob named by a `FileUploaded` event survives a crash.
 * - `sha256/<xx>/<hash>`: the content store (issue 17 item 4). Processed bytes are stored once per SHA-256;
 *   `<xx>/<id>` is a hard link to it, so identical uploads under two ids share one copy on disk while each
 *   id keeps its own name. Removing an id removes its link; the content goes with the last id (the store's
 *   own name is dropped once no id links to it). A later identical upload while an id still links to the
 *   content reuses it; one after the content went away writes it again.
 */
import { createHash, randomBytes } from 'node:crypto';
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

  /** Path of the content store's copy of bytes with this SHA-256 (hex). */
  contentPath(sha256: string): string {
    return path.join(this.root, 'sha256', sha256.slice(0, 2), sha256);
  }

  /**
   * Stores the processed original and its preview (when there is one), durably and atomically, each once
   * per content: the id's names are hard links to the content store.
   */
  async writeProcessed(fileId: string, original: Buffer, preview: Buffer | null): Promise<void> {
    await fs.promises.mkdir(path.dirname(this.originalPath(fileId)), { recursive: true });
    await Promise.all([
      this.writeDeduplicated(this.originalPath(fileId), original),
      preview ? this.writeDeduplicated(this.previewPath(fileId), preview) : Promise.resolve(),
    ]);
  }

  /** Removes the processed blobs of an id (abandoned, swept, or no longer used); shared content stays while another id links to it. */
  async removeProcessed(fileId: string): Promise<void> {
    await Promise.all([this.removeLinked(this.originalPath(fileId)), this.removeLinked(this.previewPath(fileId))]);
  }

  /** Links `target` to the stored content of `bytes`, writing the content first when it is not stored. */
  private async writeDeduplicated(target: string, bytes: Buffer): Promise<void> {
    const content = this.contentPath(createHash('sha256').update(bytes).digest('hex'));
    await fs.promises.mkdir(path.dirname(content), { recursive: true });
    for (let attempt = 0; ; attempt++) {
      try {
        await fs.promises.link(content, target);
        return;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') {
          // A retried job: the id is linked already (to this content, or to a partial earlier write).
          const [a, b] = await Promise.all([fs.promises.stat(content), fs.promises.stat(target)]);
          if (a.ino === b.ino && a.dev === b.dev) return;
          await fs.promises.rm(target, { force: true });
        } else if (code === 'ENOENT' && attempt < 3) {
          await this.writeAtomic(content, bytes);
        } else throw err;
      }
    }
  }

  /** Removes `target`; when only the content store still holds its bytes, drops them too. */
  private async removeLinked(target: string): Promise<void> {
    let bytes: Buffer;
    try {
      bytes = await fs.promises.readFile(target);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    await fs.promises.rm(target, { force: true });
    const content = this.contentPath(createHash('sha256').update(bytes).digest('hex'));
    try {
      // nlink 1: no id links to it any more. A concurrent identical upload that links it meanwhile keeps the
      // bytes through its own link (removing this name never frees an inode another name holds).
      if ((await fs.promises.stat(content)).nlink <= 1) await fs.promises.rm(content, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
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
