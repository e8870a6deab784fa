/**
 * Events of a file (stream `file-<fileId>`, scope = the uploader's user id, so one projector partition sees
 * the whole life of a file). The first event is `FileUploaded` or `FileUploadAbandoned`, both appended with
 * expected revision `no_stream`: whichever lands first decides whether the id ever becomes usable.
 */
import { z } from 'zod';
import { FileObject } from '../shared.ts';
import { TAGS } from '../../../workers/media/policy.ts';

/** What consumed a file (Revolt's `used_for`): the kind of object and its id. */
export const FileUsedFor = z.object({
  /** Kind of the object that uses the file. */
  type: z.enum(['Message', 'UserAvatar', 'UserProfileBackground', 'ServerIcon', 'ServerBanner', 'RoleIcon', 'MemberAvatar', 'Emoji', 'ChannelIcon', 'WebhookAvatar']),
  /** Id of that object (message, user, server, role, emoji, channel or webhook id; `<server>:<user>` for a member). */
  id: z.string(),
});
/** What consumed a file. */
export type FileUsedFor = z.infer<typeof FileUsedFor>;

/** What referenced a file without consuming it (a masquerade avatar on a message). */
export const FileReferencedBy = z.object({
  /** Kind of the referencing object. */
  type: z.enum(['Message']),
  /** Its id. */
  id: z.string(),
});
/** What referenced a file. */
export type FileReferencedBy = z.infer<typeof FileReferencedBy>;

export const fileEvents = {
  /** A worker processed an upload and stored its blobs: the File object clients see, and who uploaded it. */
  FileUploaded: z.object({
    /** Revolt's File (`_id, tag, filename, metadata, content_type, size`). */
    file: FileObject,
    /** User id of the uploader: the only user who may use the file. */
    uploaderId: z.string(),
  }),
  /** The upload missed its request's deadline; its id was never handed out and can never be used. */
  FileUploadAbandoned: z.object({
    /** The id the client never received. */
    fileId: z.string(),
    /** User id of the uploader. */
    uploaderId: z.string(),
    /** The tag it was uploaded under. */
    tag: z.enum(TAGS),
  }),
  /** Something used the file (once and for all): it is servable from now on. */
  FileAttached: z.object({
    /** What uses it. */
    usedFor: FileUsedFor,
  }),
  /**
   * The file is retired, appended by the sweep at the revision it saw (so it loses against a concurrent use):
   * nothing used the upload within UNATTACHED_FILE_MAX_AGE_MS, or what used it let go of it (deleted or
   * replaced) more than DETACHED_FILE_RETENTION_MS ago. Its id never resolves again and its bytes are removed.
   */
  FileExpired: z.object({
    reason: z.enum(['unattached', 'detached']),
  }),
  /** Something referenced the file without consuming it (masquerade avatar): servable from now on. */
  FileReferenced: z.object({
    /** The first thing that referenced it. */
    by: FileReferencedBy,
  }),
};

/** The stream of a file. */
export function fileStream(fileId: string): string {
  return `file-${fileId}`;
}
