/**
 * The uploads a message uses (DESIGN §4 "media server", "masquerade"; reference §7.3): attachments and embed
 * media are claimed once, with the tag `attachments`, by their uploader (`claimFile`); a masquerade avatar is
 * referenced without being consumed (`referenceFile`). The returned writes are appended atomically with the
 * message's own events, so a file is never used twice and a refused message uses none.
 */
import type { Write } from '../../../commands.ts';
import { AppError } from '../../../errors.ts';
import { setOwn } from '../../../own.ts';
import type { FileObject } from '../../../domain/shared.ts';
import { claimFile, fileStream, parseAvatarUrl } from '../../../files.ts';
import type { AppDeps } from '../../deps.ts';

/** Claimed files by id and the writes consuming them. */
export interface ClaimedFiles {
  files: Record<string, FileObject>;
  writes: Write[];
}

/** Claims `attachments` uploads for a message; an id given twice is 404 NotFound (a file is used once). */
export async function claimAttachments(deps: AppDeps, fileIds: readonly string[], userId: string, messageId: string): Promise<ClaimedFiles> {
  if (new Set(fileIds).size !== fileIds.length) throw new AppError({ type: 'NotFound' });
  const claims = await Promise.all(
    fileIds.map((fileId) => claimFile(deps, { fileId, tag: 'attachments', userId, usedFor: { type: 'Message', id: messageId } })),
  );
  const files: Record<string, FileObject> = {};
  fileIds.forEach((id, i) => setOwn(files, id, claims[i]!.file));
  return { files, writes: claims.map((c) => c.write) };
}

/** The file streams a message touches, to serialise on inside the process (a bad avatar URL is 400 here). */
export function fileLocks(deps: AppDeps, fileIds: readonly string[], avatarUrl: string | undefined): string[] {
  const locks = fileIds.map(fileStream);
  if (avatarUrl !== undefined) locks.push(fileStream(parseAvatarUrl(avatarUrl, deps.config.mediaPublicUrl).fileId));
  return locks;
}
