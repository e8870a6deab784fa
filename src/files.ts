/**
 * Using uploaded files from other features (DESIGN §4 "media server", "masquerade"; reference §7.3).
 *
 * A file id the media server handed out can be used once, under its own tag, by its uploader. A route
 * that takes a file id (an avatar, an icon, an attachment, an emoji …) calls `claimFile` inside its
 * executor plan and appends the returned write together with its own events, atomically:
 *
 * ```ts
 * await deps.executor.execute(meta, [stream, fileStream(fileId)], async () => {
 *   const claim = await claimFile(deps, { fileId, tag: 'icons', userId: caller.userId, usedFor: { type: 'ServerIcon', id: serverId } });
 *   const events = decide(command, state, { icon: claim.file }); // the caller's own events embed the File
 *   return { writes: [{ stream, scope, expected, events }, claim.write], result: undefined };
 * });
 * ```
 *
 * The write appends `FileAttached` with the file stream's revision as expected revision, so two requests
 * racing for the same id cannot both win: the loser conflicts, plans again and then gets 404. Lock on
 * `fileStream(fileId)` too so requests in one process queue up instead of conflicting. Every refusal is
 * 404 `NotFound` (unknown, abandoned, already used, wrong tag, or another user's file): a caller learns
 * nothing about files that are not theirs, and Revolt answers NotFound for all of these.
 *
 * A masquerade avatar is the exception: `referenceFile` takes the avatar URL, does not consume the file and
 * returns a write only the first time (it makes the file servable).
 */
import { decideAttach, decideReference } from './domain/file/commands.ts';
import { fileStream, type FileReferencedBy, type FileUsedFor } from './domain/file/events.ts';
import type { FileRecord } from './domain/file/state.ts';
import type { FileObject } from './domain/shared.ts';
import type { Write } from './commands.ts';
import type { Config } from './config.ts';
import { AppError } from './errors.ts';
import { isFileId } from './http/params.ts';
import type { ReadModels } from './readmodel/reader.ts';
import { rm } from './readmodel/keys.ts';
import type { Tag } from '../workers/media/policy.ts';

export { fileStream };
export type { FileReferencedBy, FileUsedFor };

/** What `claimFile` needs: the read models. */
export interface FileDeps {
  readModels: ReadModels;
}

/** Arguments of `claimFile`. */
export interface ClaimFile {
  /** The id the client sent (the media server's `{id}`). */
  fileId: string;
  /** The tag the field requires (`avatars`, `icons`, `banners`, `emojis`, `backgrounds`, `attachments`). */
  tag: Tag;
  /** The caller: only the uploader may use a file. */
  userId: string;
  /** What will use the file. */
  usedFor: FileUsedFor;
}

/** A claimed file: the File object to embed in the caller's events, and the write that consumes it. */
export interface ClaimedFile {
  /** The File object (`_id, tag, filename, metadata, content_type, size`). */
  file: FileObject;
  /** `FileAttached` on `file-<id>` at the revision read; append it with the caller's own writes. */
  write: Write;
}

/** Checks a file can be used and returns its File object and the write consuming it; else 404 NotFound. */
export async function claimFile(deps: FileDeps, claim: ClaimFile): Promise<ClaimedFile> {
  const record = await loadFile(deps, claim.fileId);
  const events = decideAttach(record, claim);
  return {
    file: record!.file,
    write: { stream: fileStream(claim.fileId), scope: record!.uploaderId, expected: record!.revision, events },
  };
}

/**
 * Claims the optional file fields of one request (icon and banner, avatar and background …) inside an
 * executor plan: `use` returns the File object to embed (undefined when the field is absent) and collects
 * the writes to append with the request's own. Make a new one in every run of the plan.
 */
export class FileClaims {
  /** The `FileAttached` writes of the files used so far. */
  readonly writes: Write[] = [];
  constructor(
    private readonly deps: FileDeps,
    private readonly userId: string,
  ) {}

  /** Claims `fileId` when given (see `claimFile`); 404 NotFound when it cannot be used. */
  async use(fileId: string | null | undefined, tag: Tag, usedFor: FileUsedFor): Promise<FileObject | undefined> {
    if (fileId === null || fileId === undefined) return undefined;
    const claim = await claimFile(this.deps, { fileId, tag, userId: this.userId, usedFor });
    this.writes.push(claim.write);
    return claim.file;
  }
}

/** The lock keys of the file ids a request names (for `executor.execute` / `onServer` options). */
export function fileLocks(...fileIds: Array<string | null | undefined>): string[] {
  return fileIds.filter((id): id is string => typeof id === 'string' && id.length > 0).map(fileStream);
}

/** What `referenceFile` needs: the read models and the media server's public URL. */
export interface ReferenceDeps extends FileDeps {
  config: Pick<Config, 'mediaPublicUrl'>;
}

/** Arguments of `referenceFile`. */
export interface ReferenceFile {
  /** The masquerade `avatar` URL: `{MEDIA_PUBLIC_URL}/avatars/<id>` or `…/avatars/<id>/<filename>`. */
  url: string;
  /** The caller. */
  userId: string;
  /** What references it (the message being sent). */
  by: FileReferencedBy;
}

/** A referenced file, and the write making it servable when this is its first reference. */
export interface ReferencedFile {
  file: FileObject;
  /** `FileReferenced` at the revision read; absent when the file is already servable. */
  write?: Write;
}

/**
 * Resolves a masquerade avatar URL without consuming the file. A URL of another host, another tag or
 * another shape → 400 FailedValidation; an unknown or abandoned id, a filename that is not the file's,
 * or a never-used file of another user → 404 NotFound. Anyone may reuse a servable avatar.
 */
export async function referenceFile(deps: ReferenceDeps, ref: ReferenceFile): Promise<ReferencedFile> {
  const { fileId, filename } = parseAvatarUrl(ref.url, deps.config.mediaPublicUrl);
  const record = await loadFile(deps, fileId);
  // A file whose avatar was replaced or deleted is served no more: a masquerade cannot bring it back.
  if (record && (await isDetached(deps, fileId))) throw new AppError({ type: 'NotFound' });
  if (record && filename !== undefined && filename !== 'original' && filename !== record.file.filename) {
    throw new AppError({ type: 'NotFound' });
  }
  const events = decideReference(record, { tag: 'avatars', userId: ref.userId, by: ref.by });
  const file = record!.file;
  if (events.length === 0) return { file };
  return { file, write: { stream: fileStream(fileId), scope: record!.uploaderId, expected: record!.revision, events } };
}

/**
 * The file id (and filename, when given) of a URL of an `avatars` file on this media server; anything
 * else → 400 FailedValidation.
 */
export function parseAvatarUrl(url: string, mediaPublicUrl: string): { fileId: string; filename?: string } {
  const bad = () => new AppError({ type: 'FailedValidation', error: `masquerade avatar must be a URL of ${mediaPublicUrl}/avatars/<id>` });
  let u: URL;
  let base: URL;
  try {
    u = new URL(url);
    base = new URL(mediaPublicUrl);
  } catch {
    throw bad();
  }
  if (u.origin !== base.origin || u.search || u.hash || u.username || u.password) throw bad();
  const basePath = base.pathname.replace(/\/+$/, '');
  if (!u.pathname.startsWith(`${basePath}/avatars/`)) throw bad();
  const rest = u.pathname.slice(basePath.length + '/avatars/'.length).split('/');
  if (rest.length > 2 || !isFileId(rest[0] ?? '')) throw bad();
  if (rest.length === 1) return { fileId: rest[0]! };
  let filename: string;
  try {
    filename = decodeURIComponent(rest[1]!);
  } catch {
    throw bad();
  }
  if (filename === '') return { fileId: rest[0]! };
  return { fileId: rest[0]!, filename };
}

/** Whether whatever used the file let go of it (deleted or replaced): it is served no more. */
export async function isDetached(deps: FileDeps, fileId: string): Promise<boolean> {
  return (await deps.readModels.getJson(rm.fileDetached(fileId))) !== null;
}

/** The file's read model, or null (unknown or abandoned). */
export async function loadFile(deps: FileDeps, fileId: string): Promise<FileRecord | null> {
  if (!isFileId(fileId)) return null;
  return deps.readModels.getJson<FileRecord>(rm.file(fileId));
}
